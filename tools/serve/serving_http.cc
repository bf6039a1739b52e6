#include "tools/serve/serving_http.h"

#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>
#include <utility>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "graph/tensor_json.h"
#include "tools/serve/connection_threads.h"
#include "training/serving/numeric_predict_body.h"
#include "training/serving/request_rows.h"
#include "training/serving/serving_json.h"

namespace actorflow {
namespace cli {
namespace {

// Request latency buckets (seconds), Prometheus' cumulative "le" bounds.
constexpr double kLatencyBuckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                      0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5,  10};
constexpr size_t kNumLatencyBuckets = sizeof(kLatencyBuckets) / sizeof(kLatencyBuckets[0]);

// What the HTTP layer counts: requests by model, version, API and status code, and
// latency histograms by model and API.
class HttpMetrics {
 public:
  void Record(const std::string& model, const std::string& version, const std::string& api,
              int code, double seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    ++requests_[{model, version, api, code}];
    Histogram& h = latency_[{model, api}];
    for (size_t i = 0; i < kNumLatencyBuckets; ++i)
      if (seconds <= kLatencyBuckets[i]) ++h.buckets[i];
    ++h.count;
    h.sum += seconds;
  }

  std::string Render(const std::vector<VersionMetrics>& versions) const {
    std::string out;
    char line[512];
    auto esc = [](const std::string& s) {
      std::string r;
      for (char c : s) {
        if (c == '"' || c == '\\') r += '\\';
        if (c == '\n') { r += "\\n"; continue; }
        r += c;
      }
      return r;
    };
    std::lock_guard<std::mutex> lock(mu_);
    out += "# HELP actorflow_serving_requests_total Requests answered, by model, version, API "
           "and HTTP status code.\n# TYPE actorflow_serving_requests_total counter\n";
    for (const auto& [key, n] : requests_) {
      const auto& [model, version, api, code] = key;
      std::snprintf(line, sizeof(line),
                    "actorflow_serving_requests_total{model=\"%s\",version=\"%s\",api=\"%s\","
                    "code=\"%d\"} %lld\n",
                    esc(model).c_str(), esc(version).c_str(), api.c_str(), code,
                    static_cast<long long>(n));
      out += line;
    }
    out += "# HELP actorflow_serving_request_errors_total Requests answered with an error "
           "status (>= 400).\n# TYPE actorflow_serving_request_errors_total counter\n";
    for (const auto& [key, n] : requests_) {
      const auto& [model, version, api, code] = key;
      if (code < 400) continue;
      std::snprintf(line, sizeof(line),
                    "actorflow_serving_request_errors_total{model=\"%s\",version=\"%s\",api=\"%s\","
                    "code=\"%d\"} %lld\n",
                    esc(model).c_str(), esc(version).c_str(), api.c_str(), code,
                    static_cast<long long>(n));
      out += line;
    }
    out += "# HELP actorflow_serving_request_latency_seconds Time from a request's arrival to "
           "its answer.\n# TYPE actorflow_serving_request_latency_seconds histogram\n";
    for (const auto& [key, h] : latency_) {
      const auto& [model, api] = key;
      for (size_t i = 0; i < kNumLatencyBuckets; ++i) {
        std::snprintf(line, sizeof(line),
                      "actorflow_serving_request_latency_seconds_bucket{model=\"%s\",api=\"%s\","
                      "le=\"%g\"} %lld\n",
                      esc(model).c_str(), api.c_str(), kLatencyBuckets[i],
                      static_cast<long long>(h.buckets[i]));
        out += line;
      }
      std::snprintf(line, sizeof(line),
                    "actorflow_serving_request_latency_seconds_bucket{model=\"%s\",api=\"%s\","
                    "le=\"+Inf\"} %lld\n"
                    "actorflow_serving_request_latency_seconds_sum{model=\"%s\",api=\"%s\"} %.9g\n"
                    "actorflow_serving_request_latency_seconds_count{model=\"%s\",api=\"%s\"} %lld\n",
                    esc(model).c_str(), api.c_str(), static_cast<long long>(h.count),
                    esc(model).c_str(), api.c_str(), h.sum, esc(model).c_str(), api.c_str(),
                    static_cast<long long>(h.count));
      out += line;
    }
    out += "# HELP actorflow_serving_replicas Replica actors of each loaded version.\n"
           "# TYPE actorflow_serving_replicas gauge\n";
    for (const VersionMetrics& v : versions) {
      std::snprintf(line, sizeof(line), "actorflow_serving_replicas{model=\"%s\",version=\"%lld\"} %lld\n",
                    esc(v.model).c_str(), static_cast<long long>(v.version),
                    static_cast<long long>(v.replicas));
      out += line;
    }
    out += "# HELP actorflow_serving_queue_depth Requests (or batches) outstanding on the "
           "replicas of each loaded version.\n# TYPE actorflow_serving_queue_depth gauge\n";
    for (const VersionMetrics& v : versions) {
      std::snprintf(line, sizeof(line), "actorflow_serving_queue_depth{model=\"%s\",version=\"%lld\"} %lld\n",
                    esc(v.model).c_str(), static_cast<long long>(v.version),
                    static_cast<long long>(v.in_flight));
      out += line;
    }
    out += "# HELP actorflow_serving_batch_size Rows per batch run (batching only).\n"
           "# TYPE actorflow_serving_batch_size histogram\n";
    for (const VersionMetrics& v : versions) {
      if (v.batch_size_counts.empty()) continue;
      long long cumulative = 0, sum = 0;
      for (size_t rows = 1; rows < v.batch_size_counts.size(); ++rows) {
        cumulative += v.batch_size_counts[rows];
        sum += static_cast<long long>(rows) * v.batch_size_counts[rows];
        std::snprintf(line, sizeof(line),
                      "actorflow_serving_batch_size_bucket{model=\"%s\",version=\"%lld\",le=\"%zu\"} %lld\n",
                      esc(v.model).c_str(), static_cast<long long>(v.version), rows, cumulative);
        out += line;
      }
      std::snprintf(line, sizeof(line),
                    "actorflow_serving_batch_size_bucket{model=\"%s\",version=\"%lld\",le=\"+Inf\"} %lld\n"
                    "actorflow_serving_batch_size_sum{model=\"%s\",version=\"%lld\"} %lld\n"
                    "actorflow_serving_batch_size_count{model=\"%s\",version=\"%lld\"} %lld\n",
                    esc(v.model).c_str(), static_cast<long long>(v.version), cumulative,
                    esc(v.model).c_str(), static_cast<long long>(v.version), sum,
                    esc(v.model).c_str(), static_cast<long long>(v.version), cumulative);
      out += line;
    }
    return out;
  }

 private:
  struct Histogram {
    long long buckets[kNumLatencyBuckets] = {};
    long long count = 0;
    double sum = 0;
  };
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, std::string, int>, long long> requests_;
  std::map<std::pair<std::string, std::string>, Histogram> latency_;
};

void SendJson(httplib::Response& res, int code, const nlohmann::json& body) {
  res.status = code;
  res.set_content(body.dump(), "application/json");
}

void SendError(httplib::Response& res, const Status& status) {
  SendJson(res, HttpStatusFor(status), ErrorJson(status.message()));
}

// The model, version and label of a /v1/models/... path's captures.
struct ModelRef {
  std::string model;
  int64_t version = 0;
  std::string label;
};

bool AllDigits(const std::string& text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

// A decimal number as export writes version directories: digits only, no sign, no
// leading zero, no fraction, at most 18 digits (so it fits an int64).
bool IsPlainPositiveNumber(const std::string& text) {
  return !text.empty() && text.size() <= 18 && text[0] != '0' && AllDigits(text);
}

StatusOr<ModelRef> ModelRefFrom(const httplib::Request& req) {
  ModelRef ref;
  ref.model = req.matches[1];
  const std::string version = req.matches[2];
  const std::string label = req.matches[3];
  if (!version.empty()) {
    // "0", "-1", "+2", "2abc", "00002" and "1.0" name no version directory: 404, not
    // the version a lenient parse would make of them.
    if (!IsPlainPositiveNumber(version)) {
      return NotFound("version '" + version + "' of model " + ref.model +
                      " is not a positive whole number as versions are written (1, 2, ...)");
    }
    ref.version = std::stoll(version);
  }
  ref.label = label;
  return ref;
}

// The signature an endpoint runs: the body's "signature_name" when given, else for
// :predict serving_default, for :classify/:regress serving_default when it has that
// method, else the first signature that has.
StatusOr<const SignatureDef*> ChooseSignature(const Servable& servable, const std::string& name,
                                              const std::string& method) {
  if (!name.empty() || method == kPredictMethodName) {
    AF_ASSIGN_OR_RETURN(const SignatureDef* sig, servable.Signature(name));
    if (method != kPredictMethodName && sig->method_name != method) {
      return InvalidArgument("signature '" + (name.empty() ? kDefaultServingSignature : name) +
                             "' is a " + sig->method_name + " signature, not " + method);
    }
    return sig;
  }
  auto def = servable.manifest.signatures.find(kDefaultServingSignature);
  if (def != servable.manifest.signatures.end() && def->second.method_name == method) {
    return &def->second;
  }
  for (const auto& [n, sig] : servable.manifest.signatures)
    if (sig.method_name == method) return &sig;
  return InvalidArgument("version " + std::to_string(servable.version) + " has no " + method +
                         " signature");
}

// TensorFlow's spelling of a status code in model status JSON ("INVALID_ARGUMENT").
std::string TfErrorCodeName(Code code) {
  if (code == Code::kOk) return "OK";
  std::string out;
  for (const char* c = CodeName(code); *c != '\0'; ++c) {
    if (std::isupper(static_cast<unsigned char>(*c)) && !out.empty()) out += '_';
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(*c)));
  }
  return out;
}

}  // namespace

int HttpStatusFor(const Status& status) {
  switch (status.code()) {
    case Code::kOk: return 200;
    case Code::kInvalidArgument:
    case Code::kFailedPrecondition:
    case Code::kOutOfRange: return 400;
    case Code::kNotFound: return 404;
    case Code::kResourceExhausted:
    case Code::kUnavailable: return 503;
    case Code::kDeadlineExceeded: return 504;
    case Code::kUnimplemented: return 501;
    default: return 500;
  }
}

struct ServingHttpServer::Impl {
  ModelServer* models = nullptr;
  HttpOptions options;
  httplib::Server server;
  HttpMetrics metrics;
  std::thread thread;
  int port = 0;
  // The server's task queue while it listens (httplib owns and deletes it).
  std::atomic<ConnectionThreads*> connections{nullptr};

  // Beyond `max` open connections: sets `res` to the 503 that says so (the
  // connection then closes) and returns true.
  bool AnswerOverload(int64_t max, httplib::Response* res) const {
    ConnectionThreads* queue = connections.load();
    const int64_t open = queue != nullptr ? queue->active() : 0;
    if (open <= max) return false;
    res->status = 503;
    res->set_header("Connection", "close");
    res->set_content(ErrorJson(std::to_string(open) + " connections are open, the most "
                               "--max-connections " + std::to_string(max) + " allows")
                         .dump(),
                     "application/json");
    return true;
  }

  // Runs one API call and records it: `api` is "predict", "classify", "regress",
  // "status" or "metadata".
  // `numeric` is the body as ScanNumericPredictBody read it (a :predict body of
  // number lists), when it did.
  void Handle(const httplib::Request& req, httplib::Response& res, const std::string& api,
              const std::string& request_body = "",
              const std::optional<NumericPredictBody>& numeric = std::nullopt) {
    const auto start = std::chrono::steady_clock::now();
    std::string model = req.matches.size() > 1 ? std::string(req.matches[1]) : "";
    std::string version = "";
    Status s = [&]() -> Status {
      AF_ASSIGN_OR_RETURN(ModelRef ref, ModelRefFrom(req));
      if (api == "status") {
        AF_ASSIGN_OR_RETURN(std::vector<ServedVersionStatus> statuses, models->VersionStatuses(ref.model));
        if (statuses.empty() && ref.version <= 0 && ref.label.empty()) {
          // No version was ever seen (a missing or empty base path): an empty list
          // would hide why, so answer what a request would get (503 with the reason).
          AF_RETURN_IF_ERROR(models->Resolve(ref.model, 0, "").status());
        }
        if (ref.version <= 0 && !ref.label.empty()) {
          AF_ASSIGN_OR_RETURN(ServedVersion v, models->Resolve(ref.model, 0, ref.label));
          ref.version = v.version();
        }
        std::vector<VersionState> states;
        for (const ServedVersionStatus& st : statuses) {
          if (ref.version > 0 && st.version != ref.version) continue;
          states.push_back(VersionState{st.version, st.state,
                                        TfErrorCodeName(st.status.code()),
                                        st.status.ok() ? "" : st.status.message()});
        }
        if (ref.version > 0 && states.empty()) {
          return NotFound("Could not find version " + std::to_string(ref.version) + " of model " + ref.model);
        }
        SendJson(res, 200, ModelStatusJson(states));
        return Status::OK();
      }
      AF_ASSIGN_OR_RETURN(ServedVersion served, models->Resolve(ref.model, ref.version, ref.label));
      version = std::to_string(served.version());
      const Servable& servable = served.servable();
      if (api == "metadata") {
        SendJson(res, 200, ModelMetadataJson(ref.model, served.version(), servable.manifest));
        return Status::OK();
      }
      auto predict = [&](const SignatureDef& signature, PredictBody parsed) -> Status {
        AF_ASSIGN_OR_RETURN(auto outputs, models->Run(served, signature, std::move(parsed.inputs)));
        AF_RETURN_IF_ERROR(CheckFiniteOutputs(outputs));
        nlohmann::json response = PredictResponseJson(outputs, parsed.row_format);
        if (response.contains("error")) return Internal(response["error"].get<std::string>());
        SendJson(res, 200, response);
        return Status::OK();
      };
      if (numeric) {
        // Lists of numbers for one float input, read without a JSON document (the
        // same inputs; any other body, and every error, takes the general way below).
        AF_ASSIGN_OR_RETURN(
            const SignatureDef* signature,
            ChooseSignature(servable, numeric->signature_name, kPredictMethodName));
        if (std::optional<PredictBody> parsed = NumericPredictInputs(*numeric, *signature)) {
          return predict(*signature, std::move(*parsed));
        }
      }
      AF_ASSIGN_OR_RETURN(nlohmann::json body, ParseJsonText(request_body, "request body"));
      AF_ASSIGN_OR_RETURN(std::string signature_name, PeekSignatureName(body));
      const std::string method = api == "predict"    ? kPredictMethodName
                                 : api == "classify" ? kClassifyMethodName
                                                     : kRegressMethodName;
      AF_ASSIGN_OR_RETURN(const SignatureDef* signature,
                          ChooseSignature(servable, signature_name, method));
      if (api == "predict") {
        AF_ASSIGN_OR_RETURN(PredictBody parsed, ParsePredictBody(body, *signature));
        return predict(*signature, std::move(parsed));
      }
      const ClassifierInfo* classifier =
          servable.manifest.classifier ? &*servable.manifest.classifier : nullptr;
      AF_ASSIGN_OR_RETURN(auto inputs, ParseExamplesBody(body, *signature, classifier));
      AF_ASSIGN_OR_RETURN(auto outputs, models->Run(served, *signature, std::move(inputs)));
      AF_RETURN_IF_ERROR(CheckFiniteOutputs(outputs));
      if (api == "classify") {
        auto scores = outputs.find("scores");
        if (scores == outputs.end()) {
          return InvalidArgument("signature has no \"scores\" output to classify with");
        }
        std::vector<std::string> labels;
        if (classifier) labels = classifier->labels;
        const Tensor& t = scores->second;
        for (int64_t c = static_cast<int64_t>(labels.size());
             t.shape().rank() == 2 && c < t.shape().dim(1); ++c)
          labels.push_back(std::to_string(c));
        nlohmann::json response = ClassifyResponseJson(t, labels);
        if (response.contains("error")) return Internal(response["error"].get<std::string>());
        SendJson(res, 200, response);
        return Status::OK();
      }
      if (outputs.size() != 1) {
        return InvalidArgument("a regress signature needs exactly one output, this one has " +
                               std::to_string(outputs.size()));
      }
      AF_ASSIGN_OR_RETURN(nlohmann::json result, RegressResponseJson(outputs.begin()->second));
      SendJson(res, 200, result);
      return Status::OK();
    }();
    if (!s.ok()) SendError(res, s);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    metrics.Record(model, version, api, res.status, seconds);
  }
};

StatusOr<std::unique_ptr<ServingHttpServer>> ServingHttpServer::Start(ModelServer* models,
                                                                      const HttpOptions& options) {
  // Every connection holds a descriptor: allow as many as the hard limit lets.
  struct rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  auto impl = std::make_unique<Impl>();
  impl->models = models;
  impl->options = options;
  Impl* raw = impl.get();
  httplib::Server& svr = impl->server;
  const size_t threads = static_cast<size_t>(options.threads);
  // A thread per open connection: slow clients hold only their own (see
  // connection_threads.h); 64 beyond --max-connections answer the 503s.
  const size_t max_threads = static_cast<size_t>(options.max_connections) + 64;
  svr.new_task_queue = [raw, threads, max_threads] {
    auto* queue = new ConnectionThreads(threads, max_threads);
    raw->connections.store(queue);
    return queue;
  };
  // A request with a body is answered 503 by its handler once the body is read:
  // closing a connection whose request bytes were not read resets it, and the client
  // would lose the answer.
  svr.set_pre_routing_handler([raw, max = options.max_connections](const httplib::Request& req,
                                                                    httplib::Response& res) {
    const bool has_body = req.has_header("Transfer-Encoding") ||
                          (req.has_header("Content-Length") &&
                           req.get_header_value("Content-Length") != "0");
    if (has_body || !raw->AnswerOverload(max, &res)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    return httplib::Server::HandlerResponse::Handled;
  });
  svr.set_keep_alive_max_count(1 << 30);
  svr.set_keep_alive_timeout(options.keep_alive_timeout_seconds);
  svr.set_read_timeout(5, 0);
  svr.set_write_timeout(5, 0);
  svr.set_payload_max_length(static_cast<size_t>(options.max_body_bytes));
  svr.set_tcp_nodelay(true);
  // The listening socket, as httplib creates it (the last one it tries is the one
  // bound): its accept backlog is widened once bound.
  auto listen_fd = std::make_shared<socket_t>(INVALID_SOCKET);
  svr.set_socket_options([listen_fd](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    *listen_fd = sock;
  });
  const std::string model = R"(/v1/models/([^/:]+)(?:/versions/([^/:]+)|/labels/([^/:]+))?)";
  svr.Get(model, [raw](const httplib::Request& req, httplib::Response& res) { raw->Handle(req, res, "status"); });
  svr.Get(model + "/metadata", [raw](const httplib::Request& req, httplib::Response& res) {
    raw->Handle(req, res, "metadata");
  });
  for (const char* api : {"predict", "classify", "regress"}) {
    const std::string name = api;
    // The body is read here rather than by httplib, which refuses a body sent as
    // application/x-www-form-urlencoded (curl -d's and urllib's default) beyond 8 KiB:
    // the API takes JSON whatever the Content-Type says, up to --max-body-bytes.
    svr.Post(model + ":" + name, [raw, name, max = options.max_body_bytes,
                                  body_timeout_ms = options.body_timeout_ms,
                                  max_instances = options.max_instances,
                                  max_connections = options.max_connections](
                                     const httplib::Request& req, httplib::Response& res,
                                     const httplib::ContentReader& read) {
      std::string body;
      bool too_large = false;
      bool too_slow = false;
      const auto body_deadline =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(body_timeout_ms);
      // A declared length that is not a byte count is the client's error (400), not an
      // oversized body. One over the limit is refused (413) once httplib has drained
      // what the client sends of it, so that the connection's next request starts
      // where it should.
      const std::string declared = req.get_header_value("Content-Length");
      if (!declared.empty() &&
          (declared.size() > 19 || !AllDigits(declared))) {
        res.status = 400;
        res.set_content(
            ErrorJson("Content-Length '" + declared + "' is not a byte count").dump(),
            "application/json");
        return;
      }
      // A declared length over the limit is answered at once, without waiting for
      // the body (httplib would drain it first), and the connection closed: what the
      // client still sends of it is not read as a next request.
      if (!declared.empty() &&
          std::strtoull(declared.c_str(), nullptr, 10) > static_cast<uint64_t>(max)) {
        res.status = 413;
        res.set_header("Connection", "close");
        res.set_content(ErrorJson("request body of " + declared +
                                  " bytes is larger than the limit of " + std::to_string(max) +
                                  " bytes (--max-body-bytes)")
                            .dump(),
                        "application/json");
        return;
      }
      // A body that trickles in is cut off at its deadline (a client that sends
      // nothing at all is cut off by the 5 s read timeout).
      const bool read_whole = read([&](const char* data, size_t length) {
        too_large = body.size() + length > static_cast<size_t>(max);
        too_slow = std::chrono::steady_clock::now() > body_deadline;
        if (!too_large && !too_slow) body.append(data, length);
        return !too_large && !too_slow;
      });
      if (too_slow) {
        res.status = 408;
        res.set_header("Connection", "close");
        res.set_content(ErrorJson("request body not received within --body-timeout-ms " +
                                  std::to_string(body_timeout_ms) + " (" +
                                  std::to_string(body.size()) + " bytes arrived)")
                            .dump(),
                        "application/json");
        return;
      }
      // httplib refuses a declared length over the limit before reading any of it.
      if (!read_whole && !declared.empty() &&
          std::strtoull(declared.c_str(), nullptr, 10) > static_cast<uint64_t>(max)) {
        too_large = true;
      }
      if (too_large) {
        res.status = 413;
        res.set_content(
            ErrorJson("request body larger than the limit of " + std::to_string(max) + " bytes")
                .dump(),
            "application/json");
        return;
      }
      if (raw->AnswerOverload(max_connections, &res)) return;
      // Rows over the limit are refused before the body is parsed into a document (see
      // CountRequestRows): memory follows the rows. A :predict body of number lists
      // is read here once, values and all, by the reader that stops past the limit
      // (numeric_predict_body.h); others are counted when long enough to hold more
      // rows than the limit: every row takes at least 2 bytes ("1,").
      std::optional<NumericPredictBody> numeric;
      if (name == "predict") numeric = ScanNumericPredictBody(body, max_instances);
      const int64_t rows =
          !numeric && static_cast<int64_t>(body.size() + 1) / 2 > max_instances
              ? CountRequestRows(body)
              : 0;
      if (rows > max_instances) {
        res.status = 413;
        res.set_content(ErrorJson("request has " + std::to_string(rows) +
                                  " instances, over --max-instances " +
                                  std::to_string(max_instances))
                            .dump(),
                        "application/json");
        return;
      }
      raw->Handle(req, res, name, body, numeric);
    });
  }
  svr.Get("/monitoring/prometheus/metrics", [raw](const httplib::Request&, httplib::Response& res) {
    res.set_content(raw->metrics.Render(raw->models->Metrics()), "text/plain; version=0.0.4");
  });
  // Paths no route takes, and the errors httplib answers itself (413 for a body over
  // the limit, 400 for a request it cannot read), get a JSON error body too.
  svr.set_error_handler([max = options.max_body_bytes](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message;
    if (res.status == 404) {
      message = "no such endpoint: " + req.method + " " + req.path +
                " (see /v1/models/NAME, /v1/models/NAME/metadata, /v1/models/NAME:predict)";
    } else if (res.status == 413) {
      message = "request body larger than the limit of " + std::to_string(max) + " bytes";
    } else {
      message = "HTTP " + std::to_string(res.status) + " for " + req.method + " " + req.path;
    }
    res.set_content(ErrorJson(message).dump(), "application/json");
  });
  if (options.port == 0) {
    impl->port = svr.bind_to_any_port(options.host);
    if (impl->port <= 0) return Unavailable("--rest-api-port: cannot listen on " + options.host);
  } else {
    if (!svr.bind_to_port(options.host, options.port)) {
      return Unavailable("--rest-api-port " + std::to_string(options.port) + ": cannot listen on " +
                         options.host + ":" + std::to_string(options.port) + " (is the port in use?)");
    }
    impl->port = options.port;
  }
  // httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed when the
  // system library was built): a burst of connections beyond it has its SYNs dropped
  // and retried after 1, 2, 4... seconds. listen() again on the bound socket only
  // changes the backlog (capped by net.core.somaxconn).
  if (*listen_fd != INVALID_SOCKET) ::listen(*listen_fd, SOMAXCONN);
  impl->thread = std::thread([raw] { raw->server.listen_after_bind(); });
  return std::unique_ptr<ServingHttpServer>(new ServingHttpServer(std::move(impl)));
}

ServingHttpServer::ServingHttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ServingHttpServer::~ServingHttpServer() {
  // stop() only stops a server whose loop has started (see StatusServer).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!impl_->server.is_running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

int ServingHttpServer::port() const { return impl_->port; }

}  // namespace cli
}  // namespace actorflow
