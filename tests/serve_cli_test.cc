// End-to-end tests of `actorflow export` and `actorflow serve`: the built binary
// trains and exports models, then serves them as a child process on 127.0.0.1 (any
// free port, read from its "listening on" line) while the test talks TensorFlow
// Serving's REST API to it: Iris and half-plus-two answers checked value by value,
// a version swap under load, bad requests and bad versions, a burst of connections,
// batching, and the metrics that all of it leaves.
//
// Every wait is bounded: the server's first line (ChildProcess), status polls until
// a deadline, client timeouts. Each test starts its own server, so the counts it
// checks are its own; the server is stopped with SIGTERM and must exit 0.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "tests/child_process.h"
#include "tests/subprocess.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using subprocess::ChildProcess;
using subprocess::ProcessResult;
using Clock = std::chrono::steady_clock;

// How long a state the server reaches by polling its base path (every second) may take.
constexpr std::chrono::seconds kStateDeadline(20);

std::string Actorflow() { return subprocess::Runfile("tools/actorflow"); }
std::string Data(const std::string& file) { return subprocess::Runfile("examples/data/" + file); }

// An empty directory under the test's temporary directory.
std::string TestDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(tmp ? tmp : "/tmp") + "/" + name;
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs an actorflow command that must succeed; returns its stdout.
std::string RunOk(const std::vector<std::string>& args) {
  const ProcessResult r = subprocess::RunProcess(Actorflow(), args);
  EXPECT_TRUE(r.started) << r.error;
  EXPECT_TRUE(r.exited) << args[0] << " killed by signal " << r.signal << "; stderr: " << r.err;
  EXPECT_EQ(r.exit_code, 0) << args[0] << " stderr: " << r.err;
  return r.out;
}

// Graph JSON of y = a * x + b for x float32 [-1] (TensorFlow Serving's half_plus_two
// when a = 0.5, b = 2). a and b are written as given; keep them exact in float32.
std::string AffineGraph(const std::string& a, const std::string& b) {
  return R"({"format": "actorflow.graph/1",
 "nodes": [
  {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1]}},
  {"name": "a", "op": "Const", "attrs": {"value": {"dtype": "float32", "shape": [], "data": [)" +
         a + R"(]}}},
  {"name": "b", "op": "Const", "attrs": {"value": {"dtype": "float32", "shape": [], "data": [)" +
         b + R"(]}}},
  {"name": "ax", "op": "Mul", "inputs": ["a", "x"]},
  {"name": "y", "op": "Add", "inputs": ["ax", "b"]}
 ]}
)";
}

// Exports y = a * x + b as `version` of `base`, checking export's one stdout line.
void ExportAffine(const std::string& dir, const std::string& base, int version,
                  const std::string& a, const std::string& b) {
  const std::string graph = dir + "/affine_" + a + "_" + b + ".json";
  WriteFile(graph, AffineGraph(a, b));
  const std::string out =
      RunOk({"export", "--graph", graph, "--input", "x=x", "--output", "y=y", "--model-base-path",
             base, "--version", std::to_string(version)});
  EXPECT_EQ(out, "exported version " + std::to_string(version) + " to " + base + "/" +
                     std::to_string(version) + "\n");
}

// Copies version `from` of `base` into a hidden directory beside it, lets `damage`
// change the copy, and renames it to `to`: the server sees the damaged version whole
// (a copy in place could be polled half-written and fail for another reason).
void WriteDamagedVersion(const std::string& base, int from, int to,
                         const std::function<void(const std::string&)>& damage) {
  const std::string temp = base + "/.damaged-" + std::to_string(to);
  std::filesystem::remove_all(temp);
  std::filesystem::copy(base + "/" + std::to_string(from), temp,
                        std::filesystem::copy_options::recursive);
  damage(temp);
  std::filesystem::rename(temp, base + "/" + std::to_string(to));
}

// TensorFlow Serving's GetModelStatus body for versions in the given order, all OK.
json StatusJson(const std::vector<std::pair<int, std::string>>& versions) {
  json list = json::array();
  for (const auto& [version, state] : versions) {
    list.push_back({{"version", std::to_string(version)},
                    {"state", state},
                    {"status", {{"error_code", "OK"}, {"error_message", ""}}}});
  }
  return {{"model_version_status", list}};
}

// One HTTP answer: code 0 when none came (the error says why).
struct Reply {
  int code = 0;
  std::string text;
  json body;  // discarded when the text is not JSON
  std::string error;
};

std::unique_ptr<httplib::Client> NewClient(int port) {
  auto client = std::make_unique<httplib::Client>("127.0.0.1", port);
  client->set_connection_timeout(10);
  client->set_read_timeout(30);
  client->set_write_timeout(10);
  // One connection for all of a client's requests: status polls would otherwise
  // leave a socket in TIME_WAIT per request.
  client->set_keep_alive(true);
  // httplib writes a POST's headers and body apart: without TCP_NODELAY, Nagle holds
  // the body until the server's delayed ACK (~40 ms a request).
  client->set_tcp_nodelay(true);
  return client;
}

Reply ToReply(const httplib::Result& result) {
  Reply reply;
  if (!result) {
    reply.error = httplib::to_string(result.error());
    return reply;
  }
  reply.code = result->status;
  reply.text = result->body;
  reply.body = json::parse(result->body, nullptr, /*allow_exceptions=*/false);
  return reply;
}

Reply Post(httplib::Client& client, const std::string& path, const std::string& body) {
  return ToReply(client.Post(path.c_str(), body, "application/json"));
}

Reply Get(httplib::Client& client, const std::string& path) { return ToReply(client.Get(path.c_str())); }

std::ostream& operator<<(std::ostream& os, const Reply& r) {
  return os << "HTTP " << r.code << " " << r.text << (r.error.empty() ? "" : " (" + r.error + ")");
}

// An `actorflow serve` process on 127.0.0.1 and a client of it (for the test's own
// thread; other threads make their own with NewClient(port())).
class ServeProcess {
 public:
  // Null (with a test failure) when it does not print its address within 60 s.
  static std::unique_ptr<ServeProcess> Start(std::vector<std::string> flags) {
    std::vector<std::string> args = {"serve", "--rest-api-host", "127.0.0.1", "--rest-api-port", "0"};
    args.insert(args.end(), flags.begin(), flags.end());
    std::string error;
    auto child = ChildProcess::Start(Actorflow(), args, &error);
    if (child == nullptr) {
      ADD_FAILURE() << error;
      return nullptr;
    }
    const std::string prefix = "actorflow serve: listening on http://127.0.0.1:";
    std::string line;
    if (!child->WaitForLine(prefix, std::chrono::seconds(60), &line)) {
      ADD_FAILURE() << "serve did not print \"" << prefix << "PORT\"; stdout: " << child->out()
                    << "\nstderr: " << child->err();
      return nullptr;
    }
    std::unique_ptr<ServeProcess> server(new ServeProcess);
    server->child_ = std::move(child);
    server->port_ = std::stoi(line.substr(prefix.size()));
    server->client_ = NewClient(server->port_);
    return server;
  }

  int port() const { return port_; }
  ChildProcess& child() { return *child_; }
  Reply Get(const std::string& path) { return actorflow::Get(*client_, path); }
  Reply Post(const std::string& path, const std::string& body) {
    return actorflow::Post(*client_, path, body);
  }

  // Polls GET `path` until its 200 body satisfies `done` (true) or kStateDeadline
  // passes (false). *last gets the last answer.
  bool WaitForStatus(const std::string& path, const std::function<bool(const json&)>& done,
                     Reply* last) {
    const auto deadline = Clock::now() + kStateDeadline;
    do {
      *last = Get(path);
      if (last->code == 200 && done(last->body)) return true;
    } while (Clock::now() < deadline);
    return false;
  }
  bool WaitForStatus(const std::string& path, const json& expected, Reply* last) {
    return WaitForStatus(path, [&](const json& body) { return body == expected; }, last);
  }

  // SIGTERM: the server stops answering and exits 0.
  void Stop() {
    client_.reset();
    child_->Kill(SIGTERM);
    ASSERT_TRUE(child_->WaitForExit(std::chrono::seconds(30))) << "serve ignored SIGTERM";
    EXPECT_TRUE(child_->exited()) << "serve ended by signal " << child_->term_signal()
                                  << "; stderr: " << child_->err();
    EXPECT_EQ(child_->exit_code(), 0) << child_->err();
  }

 private:
  ServeProcess() = default;
  std::unique_ptr<ChildProcess> child_;
  int port_ = 0;
  std::unique_ptr<httplib::Client> client_;
};

// The bundled Iris test set: feature names, rows of features, labels.
struct CsvData {
  std::vector<std::string> feature_names;
  std::vector<std::vector<double>> rows;
};

CsvData ReadIrisTest() {
  CsvData data;
  std::ifstream in(Data("iris_test.csv"));
  std::string line;
  std::getline(in, line);
  std::stringstream header(line);
  for (std::string name; std::getline(header, name, ',');) data.feature_names.push_back(name);
  data.feature_names.pop_back();  // the label column
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::stringstream fields(line);
    std::vector<double> row;
    for (std::string field; std::getline(fields, field, ',');) row.push_back(std::stod(field));
    row.pop_back();
    data.rows.push_back(row);
  }
  return data;
}

// The value of the Prometheus sample `name{labels}` in `text`; -1 when absent.
long long Sample(const std::string& text, const std::string& name_and_labels) {
  const std::string prefix = name_and_labels + " ";
  for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
    if (at == 0 || text[at - 1] == '\n') return std::stoll(text.substr(at + prefix.size()));
  }
  return -1;
}

constexpr char kPredict[] = "/v1/models/hpt:predict";
const json kHalfPlusTwoOf12 = json::parse(R"({"predictions": [2.5, 3.0]})");    // 0.5 * [1, 2] + 2
const json kHalfPlusThreeOf12 = json::parse(R"({"predictions": [3.5, 4.0]})");  // 0.5 * [1, 2] + 3
constexpr char kBody12[] = R"({"instances": [1.0, 2.0]})";

TEST(ServeCliTest, IrisExportedFromTrainingAnswersAsPredictDoesAndACorruptVersionLeavesItServing) {
  const std::string dir = TestDir("iris");
  const std::string model_dir = dir + "/model";
  const std::string base = dir + "/models/iris";
  RunOk({"train", "--steps", "200", "--checkpoint-dir", model_dir, "--json"});
  EXPECT_EQ(RunOk({"export", "--checkpoint-dir", model_dir, "--model-base-path", base}),
            "exported version 1 to " + base + "/1\n");
  const json local = json::parse(
      RunOk({"predict", "--checkpoint-dir", model_dir, "--input", Data("iris_test.csv"), "--json"}));
  const CsvData test = ReadIrisTest();
  ASSERT_EQ(test.rows.size(), 30u);
  ASSERT_EQ(local.at("predictions").size(), test.rows.size());
  ASSERT_EQ(test.feature_names, (std::vector<std::string>{"sepal_length_cm", "sepal_width_cm",
                                                         "petal_length_cm", "petal_width_cm"}));

  auto server = ServeProcess::Start({"--model-name", "iris", "--model-base-path", base});
  ASSERT_NE(server, nullptr);
  Reply r = server->Get("/v1/models/iris");
  EXPECT_EQ(r.code, 200) << r;
  EXPECT_EQ(r.body, StatusJson({{1, "AVAILABLE"}})) << r;
  r = server->Get("/v1/models/iris/versions/1");
  EXPECT_EQ(r.body, StatusJson({{1, "AVAILABLE"}})) << r;

  r = server->Get("/v1/models/iris/metadata");
  ASSERT_EQ(r.code, 200) << r;
  EXPECT_EQ(r.body.at("model_spec"), json({{"name", "iris"}, {"signature_name", ""}, {"version", "1"}}));
  const json& sigs = r.body.at("metadata").at("signature_def").at("signature_def");
  std::vector<std::string> names;
  for (auto it = sigs.begin(); it != sigs.end(); ++it) names.push_back(it.key());
  EXPECT_EQ(names, (std::vector<std::string>{"classification", "predict", "serving_default"}));
  const json features_shape = json::parse(
      R"({"dim": [{"size": "-1", "name": ""}, {"size": "4", "name": ""}], "unknown_rank": false})");
  for (const char* name : {"serving_default", "predict", "classification"}) {
    const json& sig = sigs.at(name);
    EXPECT_EQ(sig.at("method_name"), std::string(name) == "classification"
                                         ? "tensorflow/serving/classify"
                                         : "tensorflow/serving/predict");
    EXPECT_EQ(sig.at("inputs").size(), 1u) << name;
    EXPECT_EQ(sig.at("inputs").at("inputs").at("dtype"), "DT_FLOAT") << name;
    EXPECT_EQ(sig.at("inputs").at("inputs").at("tensor_shape"), features_shape) << name;
    EXPECT_THAT(sig.at("inputs").at("inputs").at("name").get<std::string>(), ::testing::EndsWith(":0"));
  }
  const json& outputs = sigs.at("serving_default").at("outputs");
  EXPECT_EQ(outputs.size(), 3u);
  EXPECT_EQ(outputs.at("class_ids").at("dtype"), "DT_INT64");
  EXPECT_EQ(outputs.at("probabilities").at("tensor_shape"),
            json::parse(R"({"dim": [{"size": "-1", "name": ""}, {"size": "3", "name": ""}],
                            "unknown_rank": false})"));
  EXPECT_EQ(sigs.at("classification").at("outputs").size(), 2u);
  EXPECT_TRUE(sigs.at("classification").at("outputs").contains("scores"));

  // Row format: every row's class and probabilities as `actorflow predict` gives them.
  const json rows = test.rows;
  r = server->Post("/v1/models/iris:predict", json({{"instances", rows}}).dump());
  ASSERT_EQ(r.code, 200) << r;
  const json& predictions = r.body.at("predictions");
  ASSERT_EQ(predictions.size(), test.rows.size());
  for (size_t i = 0; i < test.rows.size(); ++i) {
    const json& expected = local["predictions"][i];
    EXPECT_EQ(predictions[i].at("class_ids"), expected.at("class")) << "row " << i;
    ASSERT_EQ(predictions[i].at("probabilities").size(), 3u);
    ASSERT_EQ(predictions[i].at("logits").size(), 3u);
    for (size_t c = 0; c < 3; ++c) {
      EXPECT_NEAR(predictions[i]["probabilities"][c].get<double>(),
                  expected["probabilities"][c].get<double>(), 1e-6)
          << "row " << i << " class " << c;
    }
  }
  // Columnar format, and the "predict" signature by name: the same classes.
  json classes = json::array();
  for (const json& p : predictions) classes.push_back(p["class_ids"]);
  r = server->Post("/v1/models/iris:predict",
                   json({{"signature_name", "predict"}, {"inputs", rows}}).dump());
  ASSERT_EQ(r.code, 200) << r;
  EXPECT_EQ(r.body.at("outputs").at("class_ids"), classes);

  // :classify with features by name: per example every label with its score, the
  // highest one predict's class.
  json examples = json::array();
  for (const auto& row : test.rows) {
    json example;
    for (size_t f = 0; f < row.size(); ++f) example[test.feature_names[f]] = row[f];
    examples.push_back(example);
  }
  r = server->Post("/v1/models/iris:classify", json({{"examples", examples}}).dump());
  ASSERT_EQ(r.code, 200) << r;
  const json& result = r.body.at("result");
  ASSERT_EQ(result.size(), test.rows.size());
  for (size_t i = 0; i < test.rows.size(); ++i) {
    ASSERT_EQ(result[i].size(), 3u) << result[i];
    size_t best = 0;
    for (size_t c = 0; c < 3; ++c) {
      EXPECT_EQ(result[i][c][0], std::to_string(c));
      if (result[i][c][1].get<double>() > result[i][best][1].get<double>()) best = c;
    }
    EXPECT_EQ(json(static_cast<int64_t>(best)), local["predictions"][i]["class"]) << "row " << i;
  }

  // A version 2 whose variables fail their checksum: it ends with that error and
  // version 1 keeps answering.
  WriteDamagedVersion(base, 1, 2, [](const std::string& version_dir) {
    const std::string data = version_dir + "/variables/ckpt-0.data";
    std::string bytes = ReadFile(data);
    ASSERT_GT(bytes.size(), 0u);
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0xff);
    WriteFile(data, bytes);
  });
  ASSERT_TRUE(server->WaitForStatus(
      "/v1/models/iris",
      [](const json& s) { return s["model_version_status"].size() == 2 && s["model_version_status"][0]["state"] == "END"; },
      &r))
      << r;
  const json& v2 = r.body["model_version_status"][0];
  EXPECT_EQ(v2["version"], "2");
  EXPECT_EQ(v2["status"]["error_code"], "INTERNAL");
  EXPECT_THAT(v2["status"]["error_message"].get<std::string>(), HasSubstr("checksum mismatch"));
  EXPECT_THAT(v2["status"]["error_message"].get<std::string>(), HasSubstr(base + "/2"));
  EXPECT_EQ(r.body["model_version_status"][1], StatusJson({{1, "AVAILABLE"}})["model_version_status"][0]);
  r = server->Post("/v1/models/iris:predict", json({{"inputs", rows}}).dump());
  ASSERT_EQ(r.code, 200) << r;
  EXPECT_EQ(r.body.at("outputs").at("class_ids"), classes);
  server->Stop();
}

TEST(ServeCliTest, HalfPlusTwoAnswersExactlyInRowAndColumnarFormat) {
  const std::string dir = TestDir("half_plus_two");
  const std::string base = dir + "/models/hpt";
  ExportAffine(dir, base, 1, "0.5", "2");
  // A version is never overwritten.
  const ProcessResult again = subprocess::RunProcess(
      Actorflow(), {"export", "--graph", dir + "/affine_0.5_2.json", "--input", "x=x", "--output",
                    "y=y", "--model-base-path", base, "--version", "1"});
  EXPECT_TRUE(again.exited);
  EXPECT_NE(again.exit_code, 0);
  EXPECT_THAT(again.err, HasSubstr("exists already"));

  auto server = ServeProcess::Start({"--model-name", "hpt", "--model-base-path", base});
  ASSERT_NE(server, nullptr);
  Reply r = server->Post(kPredict, R"({"instances": [1.0, 2.0, 5.0]})");
  EXPECT_EQ(r.code, 200) << r;
  EXPECT_EQ(r.body, json::parse(R"({"predictions":[2.5,3.0,4.5]})")) << r;
  r = server->Post(kPredict, R"({"inputs": [1.0]})");
  EXPECT_EQ(r.code, 200) << r;
  EXPECT_EQ(r.body, json::parse(R"({"outputs":[2.5]})")) << r;
  // Inputs keyed by name, and the version named in the path.
  r = server->Post(kPredict, R"({"instances": [{"x": 1.0}, {"x": 2.0}]})");
  EXPECT_EQ(r.body, kHalfPlusTwoOf12) << r;
  r = server->Post("/v1/models/hpt/versions/1:predict", R"({"inputs": {"x": [1.0, 2.0]}})");
  EXPECT_EQ(r.body, json::parse(R"({"outputs":[2.5,3.0]})")) << r;

  r = server->Get("/v1/models/hpt/metadata");
  ASSERT_EQ(r.code, 200) << r;
  EXPECT_EQ(r.body, json::parse(R"({
      "model_spec": {"name": "hpt", "signature_name": "", "version": "1"},
      "metadata": {"signature_def": {"signature_def": {"serving_default": {
          "method_name": "tensorflow/serving/predict",
          "inputs": {"x": {"dtype": "DT_FLOAT", "name": "x:0",
                           "tensor_shape": {"dim": [{"size": "-1", "name": ""}], "unknown_rank": false}}},
          "outputs": {"y": {"dtype": "DT_FLOAT", "name": "y:0",
                            "tensor_shape": {"dim": [{"size": "-1", "name": ""}], "unknown_rank": false}}}
      }}}}})"))
      << r;
  server->Stop();
}

TEST(ServeCliTest, ANewVersionTakesOverUnderLoadWithoutAFailedRequest) {
  const std::string dir = TestDir("swap");
  const std::string base = dir + "/models/hpt";
  ExportAffine(dir, base, 1, "0.5", "2");
  auto server = ServeProcess::Start(
      {"--model-name", "hpt", "--model-base-path", base, "--file-system-poll-wait-seconds", "1"});
  ASSERT_NE(server, nullptr);

  // Each client posts [1, 2] back to back and keeps what each answer was: 1 (v1's
  // values), 2 (v2's) or 0 (anything else: another code or body).
  constexpr int kClients = 4;
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::vector<int>> seen(kClients);
  std::vector<std::string> unexpected;
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto client = NewClient(server->port());
      while (!stop.load()) {
        const Reply r = Post(*client, kPredict, kBody12);
        const int which = r.code != 200 ? 0 : r.body == kHalfPlusTwoOf12 ? 1 : r.body == kHalfPlusThreeOf12 ? 2 : 0;
        std::lock_guard<std::mutex> lock(mu);
        seen[c].push_back(which);
        if (which == 0 && unexpected.size() < 10) {
          std::ostringstream s;
          s << r;
          unexpected.push_back(s.str());
        }
        cv.notify_all();
      }
    });
  }
  auto every_client_saw = [&](int which) {
    for (const auto& answers : seen)
      if (std::find(answers.begin(), answers.end(), which) == answers.end()) return false;
    return true;
  };
  bool loaded_before_swap = false, swapped = false;
  {
    std::unique_lock<std::mutex> lock(mu);
    loaded_before_swap = cv.wait_for(lock, kStateDeadline, [&] { return every_client_saw(1); });
  }
  Reply r;
  if (loaded_before_swap) {
    ExportAffine(dir, base, 2, "0.5", "3");
    // Version 1 ends once its last request finished: it was UNLOADING until then.
    EXPECT_TRUE(server->WaitForStatus("/v1/models/hpt", StatusJson({{2, "AVAILABLE"}, {1, "END"}}), &r))
        << r;
    std::unique_lock<std::mutex> lock(mu);
    swapped = cv.wait_for(lock, kStateDeadline, [&] { return every_client_saw(2); });
  }
  stop = true;
  for (std::thread& t : clients) t.join();
  ASSERT_TRUE(loaded_before_swap) << "the clients got no answer from version 1";
  EXPECT_TRUE(swapped) << "not every client got an answer from version 2";
  EXPECT_TRUE(unexpected.empty()) << unexpected.size() << " unexpected answers, e.g. " << unexpected[0];
  for (int c = 0; c < kClients; ++c) {
    // Each client's answers: version 1's, then version 2's, never back.
    const std::vector<int>& answers = seen[c];
    const auto first_v2 = std::find(answers.begin(), answers.end(), 2);
    EXPECT_TRUE(std::all_of(answers.begin(), first_v2, [](int w) { return w == 1; })) << "client " << c;
    EXPECT_TRUE(std::all_of(first_v2, answers.end(), [](int w) { return w == 2; })) << "client " << c;
  }
  r = server->Get("/monitoring/prometheus/metrics");
  ASSERT_EQ(r.code, 200) << r;
  EXPECT_EQ(Sample(r.text, R"(actorflow_serving_request_errors_total{model="hpt",version="1",api="predict",code="503"})"), -1);
  EXPECT_EQ(Sample(r.text, R"(actorflow_serving_request_errors_total{model="hpt",version="2",api="predict",code="503"})"), -1);
  server->Stop();
}

// A bad request: where it goes, its body, the code and a piece of the error naming
// the culprit.
struct BadRequest {
  std::string path;
  std::string body;  // empty: GET
  int code;
  std::string culprit;
};

TEST(ServeCliTest, BadRequestsGetTheirCodeAndAnErrorNamingTheCulpritAndTheServerKeepsServing) {
  const std::string dir = TestDir("bad_requests");
  const std::string base = dir + "/models/hpt";
  ExportAffine(dir, base, 1, "0.5", "2");
  auto server = ServeProcess::Start(
      {"--model-name", "hpt", "--model-base-path", base, "--max-body-bytes", "1000000"});
  ASSERT_NE(server, nullptr);

  // 2 MB of instances, over --max-body-bytes.
  std::string big = R"({"instances": [1.0)";
  while (big.size() < (2u << 20)) big += ", 1.0";
  big += "]}";
  const std::vector<BadRequest> cases = {
      {kPredict, "this is not json", 400, "request body: malformed JSON at line 1"},
      {kPredict, R"({"instances": [1.0, 2.0)", 400, "malformed JSON at line 1, column"},
      {kPredict, R"({"instancez": [1.0]})", 400, "'instancez'"},
      {kPredict, R"({"instances": [1.0], "inputs": [1.0]})", 400, "\"inputs\""},
      {kPredict, R"({"instances": []})", 400, "\"instances\""},
      {kPredict, R"([1.0, 2.0])", 400, "JSON object"},
      {kPredict, R"({"instances": [[1.0, 2.0], [3.0]]})", 400, "instance 1"},
      {kPredict, R"({"instances": [[1.0, 2.0], [3.0, 4.0]]})", 400, "expected shape [-1]"},
      {kPredict, R"({"instances": [1.0, "two"]})", 400, "\"two\""},
      {kPredict, R"({"instances": [{"z": 1.0}]})", 400, "'z'"},
      {kPredict, R"({"inputs": {"x": [true]}})", 400, "input 'x'"},
      {kPredict, R"({"instances": [1.0, "nan"]})", 400, "not a finite number"},
      {kPredict, R"({"instances": [1.0, NaN]})", 400, "malformed JSON at line 1, column"},
      {kPredict, R"({"instances": [1e999]})", 400, "1e999"},
      {kPredict, R"({"signature_name": 7, "instances": [1.0]})", 400, "signature_name"},
      {"/v1/models/hpt:classify", R"({"examples": [{"x": 1.0}]})", 400, "classify"},
      {kPredict, big, 413, "1000000 bytes"},
      {"/v1/models/nope:predict", kBody12, 404, "nope"},
      {"/v1/models/nope", "", 404, "nope"},
      {"/v1/models/hpt/versions/7:predict", kBody12, 404, "hpt, 7"},
      {"/v1/models/hpt/versions/7", "", 404, "version 7"},
      {"/v1/models/hpt/versions/seven:predict", kBody12, 404, "'seven'"},
      {"/v1/models/hpt/labels/stable:predict", kBody12, 404, "'stable'"},
      {kPredict, R"({"signature_name": "zz", "instances": [1.0]})", 404, "\"zz\""},
      {"/v1/modelz/hpt", "", 404, "/v1/modelz/hpt"},
  };
  int hpt_400s = 0;
  for (const BadRequest& c : cases) {
    SCOPED_TRACE(c.path + " " + c.body.substr(0, 60));
    const Reply r = c.body.empty() ? server->Get(c.path) : server->Post(c.path, c.body);
    EXPECT_EQ(r.code, c.code) << r;
    ASSERT_TRUE(r.body.is_object() && r.body.size() == 1 && r.body.contains("error") &&
                r.body["error"].is_string())
        << r;
    EXPECT_THAT(r.body["error"].get<std::string>(), HasSubstr(c.culprit));
    if (c.code == 400 && c.path == kPredict) ++hpt_400s;
    // The next request is answered as if nothing happened.
    const Reply good = server->Post(kPredict, kBody12);
    EXPECT_EQ(good.code, 200) << good;
    EXPECT_EQ(good.body, kHalfPlusTwoOf12) << good;
  }

  // The metrics count each answer by code: the good ones (one after each bad one)
  // and the bad ones the model got.
  const Reply m = server->Get("/monitoring/prometheus/metrics");
  ASSERT_EQ(m.code, 200) << m;
  EXPECT_EQ(Sample(m.text, R"(actorflow_serving_requests_total{model="hpt",version="1",api="predict",code="200"})"),
            static_cast<long long>(cases.size()));
  EXPECT_EQ(Sample(m.text, R"(actorflow_serving_requests_total{model="hpt",version="1",api="predict",code="400"})"),
            hpt_400s);
  EXPECT_EQ(Sample(m.text, R"(actorflow_serving_request_errors_total{model="hpt",version="1",api="predict",code="400"})"),
            hpt_400s);
  EXPECT_EQ(Sample(m.text, R"(actorflow_serving_requests_total{model="nope",version="",api="predict",code="404"})"), 1);
  EXPECT_EQ(Sample(m.text, R"(actorflow_serving_replicas{model="hpt",version="1"})"), 1);
  EXPECT_GT(Sample(m.text, R"(actorflow_serving_request_latency_seconds_count{model="hpt",api="predict"})"),
            static_cast<long long>(cases.size()) + hpt_400s);
  server->Stop();
}

TEST(ServeCliTest, ACorruptVersionEndsWithItsErrorWhileThePreviousOneServes) {
  const std::string dir = TestDir("corrupt");
  const std::string base = dir + "/models/hpt";
  ExportAffine(dir, base, 1, "0.5", "2");
  ExportAffine(dir, base, 2, "0.5", "3");
  auto server = ServeProcess::Start(
      {"--model-name", "hpt", "--model-base-path", base, "--file-system-poll-wait-seconds", "1"});
  ASSERT_NE(server, nullptr);
  Reply r = server->Get("/v1/models/hpt");
  EXPECT_EQ(r.body, StatusJson({{2, "AVAILABLE"}})) << r;

  // Version 3: its graph.json cut in half.
  WriteDamagedVersion(base, 2, 3, [](const std::string& version_dir) {
    const std::string graph = ReadFile(version_dir + "/graph.json");
    WriteFile(version_dir + "/graph.json", graph.substr(0, graph.size() / 2));
  });
  ASSERT_TRUE(server->WaitForStatus(
      "/v1/models/hpt/versions/3",
      [](const json& s) { return s["model_version_status"].size() == 1 && s["model_version_status"][0]["state"] == "END"; },
      &r))
      << r;
  const json& v3 = r.body["model_version_status"][0];
  EXPECT_EQ(v3["status"]["error_code"], "INVALID_ARGUMENT");
  EXPECT_THAT(v3["status"]["error_message"].get<std::string>(), HasSubstr(base + "/3"));
  EXPECT_THAT(v3["status"]["error_message"].get<std::string>(), HasSubstr("graph JSON: malformed JSON"));
  r = server->Get("/v1/models/hpt/versions/2");
  EXPECT_EQ(r.body, StatusJson({{2, "AVAILABLE"}})) << r;
  r = server->Post(kPredict, kBody12);
  EXPECT_EQ(r.body, kHalfPlusThreeOf12) << r;
  r = server->Post("/v1/models/hpt/versions/3:predict", kBody12);
  EXPECT_EQ(r.code, 404) << r;

  // A good version 4 replaces version 2.
  ExportAffine(dir, base, 4, "0.5", "2");
  ASSERT_TRUE(server->WaitForStatus(
      "/v1/models/hpt",
      [](const json& s) {
        return s["model_version_status"].size() == 3 && s["model_version_status"][0]["state"] == "AVAILABLE" &&
               s["model_version_status"][2]["state"] == "END";
      },
      &r))
      << r;
  EXPECT_EQ(r.body["model_version_status"][0], StatusJson({{4, "AVAILABLE"}})["model_version_status"][0]);
  EXPECT_EQ(r.body["model_version_status"][1]["version"], "3");
  EXPECT_EQ(r.body["model_version_status"][1]["state"], "END");
  EXPECT_EQ(r.body["model_version_status"][2], StatusJson({{2, "END"}})["model_version_status"][0]);
  r = server->Post(kPredict, kBody12);
  EXPECT_EQ(r.body, kHalfPlusTwoOf12) << r;
  server->Stop();
}

TEST(ServeCliTest, AModelWhoseBasePathIsMissingSaysWhyUntilAVersionIsExportedThere) {
  const std::string dir = TestDir("missing_base");
  const std::string base = dir + "/models/hpt";
  auto server = ServeProcess::Start(
      {"--model-name", "hpt", "--model-base-path", base, "--file-system-poll-wait-seconds", "1"});
  ASSERT_NE(server, nullptr);
  std::string line;
  EXPECT_TRUE(server->child().WaitForErrLine("actorflow serve: model hpt is not available yet",
                                             std::chrono::seconds(10), &line))
      << server->child().err();
  EXPECT_THAT(line, HasSubstr(base));
  for (const std::string path : {"/v1/models/hpt", "/v1/models/hpt/metadata"}) {
    const Reply r = server->Get(path);
    EXPECT_EQ(r.code, 503) << path << ": " << r;
    EXPECT_THAT(r.body.value("error", ""), HasSubstr("model base path '" + base + "' does not exist"))
        << path;
  }
  Reply r = server->Post(kPredict, kBody12);
  EXPECT_EQ(r.code, 503) << r;
  EXPECT_THAT(r.body.value("error", ""), HasSubstr(base));

  ExportAffine(dir, base, 1, "0.5", "2");
  ASSERT_TRUE(server->WaitForStatus("/v1/models/hpt", StatusJson({{1, "AVAILABLE"}}), &r)) << r;
  r = server->Post(kPredict, kBody12);
  EXPECT_EQ(r.code, 200) << r;
  EXPECT_EQ(r.body, kHalfPlusTwoOf12) << r;
  server->Stop();
}

TEST(ServeCliTest, ADeletedVersionEndsAndTheOthersKeepServing) {
  const std::string dir = TestDir("deleted");
  const std::string base = dir + "/models/hpt";
  ExportAffine(dir, base, 1, "0.5", "2");
  ExportAffine(dir, base, 2, "0.5", "3");
  const std::string config = dir + "/models.json";
  WriteFile(config, json({{"model_config_list",
                           {{{"name", "hpt"},
                             {"base_path", base},
                             {"model_version_policy", {{"all", json::object()}}},
                             {"version_labels", {{"stable", 1}}}}}}})
                        .dump());
  auto server = ServeProcess::Start(
      {"--model-config-file", config, "--file-system-poll-wait-seconds", "1"});
  ASSERT_NE(server, nullptr);
  Reply r = server->Get("/v1/models/hpt");
  EXPECT_EQ(r.body, StatusJson({{2, "AVAILABLE"}, {1, "AVAILABLE"}})) << r;
  EXPECT_EQ(server->Post(kPredict, kBody12).body, kHalfPlusThreeOf12);
  EXPECT_EQ(server->Post("/v1/models/hpt/versions/2:predict", kBody12).body, kHalfPlusThreeOf12);
  EXPECT_EQ(server->Post("/v1/models/hpt/versions/1:predict", kBody12).body, kHalfPlusTwoOf12);
  EXPECT_EQ(server->Post("/v1/models/hpt/labels/stable:predict", kBody12).body, kHalfPlusTwoOf12);
  r = server->Get("/v1/models/hpt/labels/stable");
  EXPECT_EQ(r.body, StatusJson({{1, "AVAILABLE"}})) << r;

  std::filesystem::remove_all(base + "/2");
  ASSERT_TRUE(server->WaitForStatus("/v1/models/hpt", StatusJson({{2, "END"}, {1, "AVAILABLE"}}), &r)) << r;
  r = server->Post("/v1/models/hpt/versions/2:predict", kBody12);
  EXPECT_EQ(r.code, 404) << r;
  EXPECT_THAT(r.body.value("error", ""), HasSubstr("hpt, 2"));
  r = server->Get("/v1/models/hpt/versions/2");
  EXPECT_EQ(r.body, StatusJson({{2, "END"}})) << r;
  r = server->Post(kPredict, kBody12);
  EXPECT_EQ(r.code, 200) << r;
  EXPECT_EQ(r.body, kHalfPlusTwoOf12) << r;
  EXPECT_EQ(server->Post("/v1/models/hpt/labels/stable:predict", kBody12).body, kHalfPlusTwoOf12);
  server->Stop();
}

// One raw connection of the burst below: a request written and the answer read to
// the end (the request asks the server to close).
struct RawConnection {
  int fd = -1;
  size_t sent = 0;
  std::string received;
  bool done = false;
  std::string error;  // why it got no answer
};

TEST(ServeCliTest, ABurstOfConnectionsIsAnsweredWith200Or503AndAnotherClientStillGetsItsAnswer) {
  const std::string dir = TestDir("burst");
  const std::string base = dir + "/models/hpt";
  ExportAffine(dir, base, 1, "0.5", "2");
  // Descriptors for the burst (the server raises its own limit to the hard one).
  struct rlimit limit;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  const rlim_t wanted = 10000 + 256;
  if (limit.rlim_cur < wanted) {
    limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? wanted : std::min(limit.rlim_max, wanted);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0);
  }
  const int connections = static_cast<int>(std::min<rlim_t>(10000, limit.rlim_cur - 256));
  ASSERT_GE(connections, 500) << "RLIMIT_NOFILE's hard limit " << limit.rlim_max << " is too low";
  auto server = ServeProcess::Start({"--model-name", "hpt", "--model-base-path", base});
  ASSERT_NE(server, nullptr);

  const std::string request = std::string("POST ") + kPredict +
                              " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                              "Connection: close\r\nContent-Length: " +
                              std::to_string(std::string(kBody12).size()) + "\r\n\r\n" + kBody12;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(server->port()));
  std::vector<RawConnection> conns(connections);
  for (RawConnection& c : conns) {
    c.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c.fd < 0) {
      c.done = true;
      c.error = std::string("socket: ") + std::strerror(errno);
    } else if (connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 &&
               errno != EINPROGRESS) {
      c.done = true;
      c.error = std::string("connect: ") + std::strerror(errno);
    }
  }
  // Another client, while the burst is in flight.
  Reply other;
  Clock::duration other_took{};
  std::thread other_client([&] {
    auto client = NewClient(server->port());
    const auto start = Clock::now();
    other = Post(*client, kPredict, R"({"instances": [5.0]})");
    other_took = Clock::now() - start;
  });

  const auto deadline = Clock::now() + std::chrono::seconds(30);
  std::vector<pollfd> fds;
  std::vector<RawConnection*> polled;
  while (Clock::now() < deadline) {
    fds.clear();
    polled.clear();
    for (RawConnection& c : conns) {
      if (c.done) continue;
      fds.push_back({c.fd, static_cast<short>(c.sent < request.size() ? POLLOUT : POLLIN), 0});
      polled.push_back(&c);
    }
    if (fds.empty()) break;
    if (poll(fds.data(), fds.size(), 100) < 0 && errno != EINTR) break;
    for (size_t i = 0; i < fds.size(); ++i) {
      RawConnection& c = *polled[i];
      if (fds[i].revents == 0) continue;
      if (c.sent < request.size()) {
        const ssize_t n = send(c.fd, request.data() + c.sent, request.size() - c.sent, MSG_NOSIGNAL);
        if (n > 0) c.sent += static_cast<size_t>(n);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
          c.done = true;
          c.error = std::string("send: ") + std::strerror(errno);
        }
        continue;
      }
      char buffer[4096];
      for (;;) {
        const ssize_t n = read(c.fd, buffer, sizeof(buffer));
        if (n > 0) {
          c.received.append(buffer, static_cast<size_t>(n));
          continue;
        }
        if (n == 0) c.done = true;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
          c.done = true;
          c.error = std::string("read: ") + std::strerror(errno);
        }
        break;
      }
    }
  }
  other_client.join();

  int ok = 0, overloaded = 0, no_answer = 0, wrong = 0;
  std::string example;
  for (RawConnection& c : conns) {
    if (c.fd >= 0) close(c.fd);
    const size_t body_at = c.received.find("\r\n\r\n");
    const std::string status_line = c.received.substr(0, c.received.find("\r\n"));
    const json body = body_at == std::string::npos
                          ? json()
                          : json::parse(c.received.substr(body_at + 4), nullptr, false);
    if (!c.done || !c.error.empty() || body_at == std::string::npos) {
      ++no_answer;
      if (example.empty()) example = c.done ? c.error + " after: " + c.received : "no answer in 30 s";
    } else if (status_line == "HTTP/1.1 200 OK" && body == kHalfPlusTwoOf12) {
      ++ok;
    } else if (status_line.rfind("HTTP/1.1 503", 0) == 0 && body.contains("error")) {
      ++overloaded;
    } else {
      ++wrong;
      if (example.empty()) example = c.received;
    }
  }
  EXPECT_EQ(no_answer, 0) << example;
  EXPECT_EQ(wrong, 0) << example;
  EXPECT_EQ(ok + overloaded, connections);
  EXPECT_GT(ok, 0);
  EXPECT_EQ(other.code, 200) << other;
  EXPECT_EQ(other.body, json::parse(R"({"predictions":[4.5]})")) << other;
  EXPECT_LT(other_took, std::chrono::seconds(10));
  ASSERT_FALSE(server->child().HasExited()) << server->child().err();
  EXPECT_EQ(server->Post(kPredict, kBody12).body, kHalfPlusTwoOf12);
  server->Stop();
}

TEST(ServeCliTest, BatchingMergesConcurrentRequestsAndSplitsTheAnswersBack) {
  const std::string dir = TestDir("batching");
  const std::string base = dir + "/models/hpt";
  ExportAffine(dir, base, 1, "0.5", "2");
  auto server = ServeProcess::Start({"--model-name", "hpt", "--model-base-path", base,
                                     "--enable-batching", "--max-batch-size", "8",
                                     "--batch-timeout-micros", "5000"});
  ASSERT_NE(server, nullptr);
  // 16 clients, released together, each posting 10 single instances of its own
  // values; every answer must be its own 0.5 * v + 2.
  constexpr int kClients = 16, kRequests = 10;
  std::mutex mu;
  std::condition_variable cv;
  bool go = false;
  std::vector<std::string> wrong;
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto client = NewClient(server->port());
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return go; });
      }
      for (int i = 0; i < kRequests; ++i) {
        const int v = c * 100 + i;
        const Reply r = Post(*client, kPredict, "{\"instances\": [" + std::to_string(v) + "]}");
        const json expected = {{"predictions", json::array({0.5 * v + 2})}};
        if (r.code != 200 || r.body != expected) {
          std::ostringstream s;
          s << "value " << v << ": " << r;
          std::lock_guard<std::mutex> lock(mu);
          wrong.push_back(s.str());
        }
      }
    });
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    go = true;
  }
  cv.notify_all();
  for (std::thread& t : clients) t.join();
  EXPECT_TRUE(wrong.empty()) << wrong.size() << " wrong answers, e.g. " << wrong[0];

  const Reply m = server->Get("/monitoring/prometheus/metrics");
  ASSERT_EQ(m.code, 200) << m;
  const std::string labels = R"({model="hpt",version="1")";
  const long long batches = Sample(m.text, "actorflow_serving_batch_size_count" + labels + "}");
  const long long single_row = Sample(m.text, "actorflow_serving_batch_size_bucket" + labels + R"(,le="1"})");
  // Every row went through exactly one batch, none over --max-batch-size, and with
  // 16 clients inside a 5 ms window some batches held more than one row.
  EXPECT_EQ(Sample(m.text, "actorflow_serving_batch_size_sum" + labels + "}"), kClients * kRequests)
      << m.text;
  EXPECT_EQ(Sample(m.text, "actorflow_serving_batch_size_bucket" + labels + R"(,le="8"})"), batches);
  EXPECT_GT(batches, 0) << m.text;
  EXPECT_LT(single_row, batches) << "no batch held more than one row:\n" << m.text;
  EXPECT_EQ(Sample(m.text, R"(actorflow_serving_requests_total{model="hpt",version="1",api="predict",code="200"})"),
            kClients * kRequests);
  server->Stop();
}

}  // namespace
}  // namespace actorflow
