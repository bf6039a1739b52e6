#include "actors/serving/model_server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/transport/cluster_transport.h"
#include "actors/transport/connect.h"
#include "actors/protocol/messages.h"
#include "actors/serving/served_version.h"
#include "actors/serving/serving_protocol.h"
#include "actors/scheduler/caller_jobs.h"
#include "actors/scheduler/spinning_scheduler.h"
#include "actors/protocol/wire.h"
#include "graph/graph_json.h"
#include "graph/tensor_json.h"

namespace actorflow {


namespace {

// What the server remembers of one version of a model.
struct VersionRecord {
  std::string state;
  Status status;
  std::weak_ptr<LoadedVersion> unloading;  // while UNLOADING: END once expired
};

struct ModelEntry {
  ModelConfig config;
  std::map<int64_t, std::shared_ptr<LoadedVersion>> available;
  std::map<int64_t, VersionRecord> records;
  Status base_error;  // why the base path could not be listed, if it could not
};

std::vector<int64_t> SelectVersions(const VersionPolicy& policy, const std::vector<int64_t>& found) {
  std::vector<int64_t> selected;
  switch (policy.kind) {
    case VersionPolicy::Kind::kAll:
      selected = found;
      break;
    case VersionPolicy::Kind::kLatest: {
      const size_t n = static_cast<size_t>(std::max<int64_t>(1, policy.num_versions));
      selected.assign(found.size() > n ? found.end() - n : found.begin(), found.end());
      break;
    }
    case VersionPolicy::Kind::kSpecific:
      for (int64_t v : found)
        if (std::count(policy.versions.begin(), policy.versions.end(), v)) selected.push_back(v);
      break;
  }
  return selected;
}

}  // namespace

struct ModelServer::Impl {
  ServeOptions options;
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> system;

  mutable std::mutex mu;
  std::map<std::string, ModelEntry> models;
  std::mutex poll_mu;  // one poll at a time

  std::map<std::string, FrontActor> fronts;  // by task; used by the polling thread only

  // Local replicas on each CPU device, or sessions on each cluster task. Blocks (it
  // connects and opens sessions): called from the polling thread or Start.
  StatusOr<Replicas> MakeReplicas(const std::shared_ptr<const Servable>& servable) {
    Replicas replicas;
    if (options.cluster_tasks.empty()) {
      const int64_t count = int64_t{options.cpu_devices} * options.replicas_per_device;
      for (int64_t i = 0; i < count; ++i)
        replicas.actors.push_back(SpawnServingReplica(*system, servable));
      return replicas;
    }
    const std::string graph_json = GraphToJson(*servable->graph);
    Status failed;
    for (const auto& entry : options.cluster_tasks) {
      // Plain references: lambdas below capture them (C++17 cannot capture bindings).
      const std::string& task = entry.first;
      const std::string& address = entry.second;
      auto front = fronts.find(task);
      if (front == fronts.end()) {
        std::string host;
        uint16_t port = 0;
        AF_RETURN_IF_ERROR(ParseTarget("actorflow://" + address, &host, &port));
        AF_ASSIGN_OR_RETURN(FrontActor connected,
                            ConnectToServer(*system, host, port,
                                            std::chrono::milliseconds(options.connect_timeout_ms),
                                            task));
        front = fronts.emplace(task, connected).first;
      }
      for (int k = 0; k < options.replicas_per_device && failed.ok(); ++k) {
        OpenSessionRequest request;
        request.graph_json = graph_json;
        request.allow_soft_placement = true;
        caf::scoped_actor self{*system};
        self->request(front->second, std::chrono::milliseconds(options.connect_timeout_ms),
                      open_atom::value, std::move(request))
            .receive(
                [&](OpenSessionResult& r) {
                  failed = r.status;
                  if (!r.status.ok()) return;
                  replicas.remote_sessions.emplace_back(front->second, r.session_id);
                  auto lost = std::make_shared<std::atomic<bool>>(false);
                  replicas.lost.push_back(lost);
                  replicas.actors.push_back(SpawnRemoteServingReplica(
                      *system,
                      RemoteReplicaTarget{front->second, r.session_id, task, address, lost},
                      options.request_timeout_ms));
                },
                [&](caf::error& e) {
                  failed = Unavailable("cannot open a serving session on " + task + " (" +
                                       address + "): " + system->render(e));
                });
      }
      if (!failed.ok()) {
        // Its connection may be gone (the task lost): the next load connects anew.
        fronts.erase(front);
        break;
      }
    }
    if (!failed.ok()) {
      for (const auto& [front, id] : replicas.remote_sessions) caf::anon_send(front, close_atom::value, id);
      for (const ServingReplica& r : replicas.actors) caf::anon_send_exit(r, caf::exit_reason::user_shutdown);
      return failed;
    }
    return replicas;
  }

  std::thread poller;
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stopping = false;

  void PollModel(const std::string& name) {
    ModelConfig config;
    std::set<int64_t> loaded, failed;
    {
      std::lock_guard<std::mutex> lock(mu);
      const ModelEntry& entry = models.at(name);
      config = entry.config;
      for (const auto& [v, l] : entry.available) loaded.insert(v);
      for (const auto& [v, r] : entry.records)
        if (r.state == "END" && !r.status.ok()) failed.insert(v);
    }
    StatusOr<std::vector<int64_t>> found = ListServableVersions(config.base_path);
    std::vector<int64_t> selected;
    if (found.ok()) {
      selected = SelectVersions(config.policy, *found);
      if (found->empty()) {
        std::lock_guard<std::mutex> lock(mu);
        models.at(name).base_error =
            NotFound("no version under the model base path '" + config.base_path + "'");
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      ModelEntry& entry = models.at(name);
      if (!found.ok()) entry.base_error = found.status();
      if (found.ok() && !found->empty()) entry.base_error = Status::OK();
      for (int64_t v : selected)
        if (!loaded.count(v) && !failed.count(v)) entry.records[v] = VersionRecord{"LOADING", Status::OK(), {}};
    }
    // Load outside the lock: requests keep being served by the loaded versions.
    for (int64_t v : selected) {
      if (loaded.count(v)) continue;
      const std::string dir = config.base_path + "/" + std::to_string(v);
      StatusOr<std::shared_ptr<const Servable>> servable = LoadServable(dir, v);
      Replicas replicas;
      if (servable.ok()) {
        StatusOr<Replicas> made = MakeReplicas(*servable);
        if (made.ok()) {
          replicas = std::move(made).value();
        } else {
          servable = made.status().WithContext("version directory '" + dir + "'");
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      ModelEntry& entry = models.at(name);
      if (!servable.ok()) {
        entry.records[v] = VersionRecord{"END", servable.status(), {}};
        continue;
      }
      entry.available[v] = std::make_shared<LoadedVersion>(
          *system, name, std::move(servable).value(), options, std::move(replicas));
      entry.records[v] = VersionRecord{"AVAILABLE", Status::OK(), {}};
    }
    // Unload what left the policy, but only once something selected serves: a new
    // version that failed to load leaves the old one serving.
    std::lock_guard<std::mutex> lock(mu);
    ModelEntry& entry = models.at(name);
    bool selected_serves = false;
    for (int64_t v : selected) selected_serves = selected_serves || entry.available.count(v) > 0;
    if (!selected_serves && !selected.empty()) return;
    for (auto it = entry.available.begin(); it != entry.available.end();) {
      if (std::count(selected.begin(), selected.end(), it->first)) {
        ++it;
        continue;
      }
      // In-flight requests hold the version; it ends when the last one finishes.
      entry.records[it->first] = VersionRecord{"UNLOADING", Status::OK(), it->second};
      it = entry.available.erase(it);
    }
  }

  void PollAll() {
    std::lock_guard<std::mutex> poll_lock(poll_mu);
    std::vector<std::string> names;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& [name, entry] : models) names.push_back(name);
    }
    for (const std::string& name : names) PollModel(name);
  }

  void PollLoop() {
    std::unique_lock<std::mutex> lock(stop_mu);
    while (!stopping) {
      stop_cv.wait_for(lock, std::chrono::seconds(options.file_system_poll_wait_seconds));
      if (stopping) break;
      lock.unlock();
      PollAll();
      lock.lock();
    }
  }
};

ModelServer::ModelServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ModelServer::~ModelServer() {
  {
    std::lock_guard<std::mutex> lock(impl_->stop_mu);
    impl_->stopping = true;
  }
  impl_->stop_cv.notify_all();
  if (impl_->poller.joinable()) impl_->poller.join();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->models.clear();  // sends every replica and batcher its exit
  }
  ShutDownClusterSystem(impl_->system);  // waits for the actors
}

StatusOr<std::unique_ptr<ModelServer>> ModelServer::Start(std::vector<ModelConfig> models,
                                                          ServeOptions options) {
  if (models.empty()) return InvalidArgument("serve: no model to serve");
  if (options.cpu_devices < 1 || options.replicas_per_device < 1) {
    return InvalidArgument("serve: --devices cpu=N and --replicas-per-device need values >= 1");
  }
  if (options.enable_batching && (options.max_batch_size < 1 || options.batch_timeout_micros < 0 ||
                                  options.max_enqueued_batches < 1)) {
    return InvalidArgument("serve: --max-batch-size and --max-enqueued-batches need values >= 1, "
                           "--batch-timeout-micros >= 0");
  }
  if (options.max_in_flight_per_replica < 1 || options.file_system_poll_wait_seconds < 0 ||
      options.request_timeout_ms < 0) {
    return InvalidArgument("serve: bad limits (in-flight bound >= 1, poll wait and timeout >= 0)");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  for (ModelConfig& config : models) {
    if (impl->models.count(config.name)) {
      return InvalidArgument("serve: model '" + config.name + "' is configured twice");
    }
    std::string name = config.name;
    impl->models[name].config = std::move(config);
  }
  // A replica computes on its scheduler thread: as many threads as replicas can run
  // at once, at least the cores (the sharing policy wakes a parked thread at once).
  const size_t threads = std::max<size_t>(
      {2, std::thread::hardware_concurrency(),
       static_cast<size_t>(options.cpu_devices) * static_cast<size_t>(options.replicas_per_device)});
  ConfigureScheduler(impl->cfg, SchedulerOptions{threads});
  impl->cfg.set("logger.console", caf::atom("none"));
  if (!options.cluster_tasks.empty()) {
    ConfigureClusterTransport(impl->cfg);
  }
  impl->system = std::make_unique<caf::actor_system>(impl->cfg);
  std::unique_ptr<ModelServer> server(new ModelServer(std::move(impl)));
  server->PollNow();
  if (options.file_system_poll_wait_seconds > 0) {
    Impl* raw = server->impl_.get();
    server->impl_->poller = std::thread([raw] { raw->PollLoop(); });
  }
  return server;
}

void ModelServer::PollNow() { impl_->PollAll(); }

StatusOr<ServedVersion> ModelServer::Resolve(const std::string& model, int64_t version,
                                             const std::string& label) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->models.find(model);
  if (it == impl_->models.end()) return NotFound("Servable not found for request: Latest(" + model + ")");
  const ModelEntry& entry = it->second;
  if (version <= 0 && !label.empty()) {
    auto l = entry.config.labels.find(label);
    if (l == entry.config.labels.end()) {
      return NotFound("model '" + model + "' has no version label '" + label + "'");
    }
    version = l->second;
  }
  if (version > 0) {
    auto v = entry.available.find(version);
    if (v == entry.available.end()) {
      return NotFound("Servable not found for request: Specific(" + model + ", " +
                      std::to_string(version) + ")");
    }
    return ServedVersion{v->second};
  }
  if (entry.available.empty()) {
    std::string why = entry.base_error.ok() ? "" : ": " + entry.base_error.ToString();
    for (auto r = entry.records.rbegin(); why.empty() && r != entry.records.rend(); ++r)
      if (!r->second.status.ok()) why = ": version " + std::to_string(r->first) + " failed to load: " + r->second.status.ToString();
    return Unavailable("model '" + model + "' has no available version" + why);
  }
  return ServedVersion{entry.available.rbegin()->second};
}

namespace {

// RunAsync's work; an idle replica is scheduled through `unit` when given.
Status SubmitRun(const ServedVersion& version, const SignatureDef& signature,
                 std::map<std::string, Tensor> inputs, ModelServer::RunCallback done,
                 caf::execution_unit* unit) {
  auto call = std::make_shared<ServeCall>();
  int64_t rows = -1;
  for (const auto& [key, info] : signature.inputs) {
    auto it = inputs.find(key);
    if (it == inputs.end()) return InvalidArgument("input '" + key + "' is missing");
    const Tensor& value = it->second;
    const int64_t r = value.shape().rank() == 0 ? 1 : value.shape().dim(0);
    if (rows >= 0 && r != rows) {
      return InvalidArgument("input '" + key + "' has " + std::to_string(r) +
                             " rows, another input " + std::to_string(rows));
    }
    rows = r;
    call->feeds.emplace_back(info.endpoint, std::move(it->second));
  }
  std::vector<std::string> keys;
  for (const auto& [key, info] : signature.outputs) {
    keys.push_back(key);
    call->fetches.push_back(info.endpoint);
  }
  call->rows = std::max<int64_t>(rows, 1);
  call->done = [keys = std::move(keys), done = std::move(done)](StatusOr<std::vector<Tensor>> result) {
    if (!result.ok()) {
      done(result.status());
      return;
    }
    std::map<std::string, Tensor> outputs;
    for (size_t i = 0; i < keys.size() && i < result->size(); ++i)
      outputs[keys[i]] = std::move((*result)[i]);
    done(std::move(outputs));
  };
  return version.loaded->Submit(std::move(call), unit);
}

}  // namespace

Status ModelServer::RunAsync(const ServedVersion& version, const SignatureDef& signature,
                             std::map<std::string, Tensor> inputs, RunCallback done) const {
  return SubmitRun(version, signature, std::move(inputs), std::move(done), nullptr);
}

StatusOr<std::map<std::string, Tensor>> ModelServer::Run(const ServedVersion& version,
                                                         const SignatureDef& signature,
                                                         std::map<std::string, Tensor> inputs) const {
  struct Waiter {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<StatusOr<std::map<std::string, Tensor>>> result;
  };
  auto waiter = std::make_shared<Waiter>();
  const int64_t timeout_ms = impl_->options.request_timeout_ms;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  // An idle replica runs the call on this thread, which would only wait for it: no
  // hand-off to a scheduler thread and back, two context switches a request fewer.
  // This call and at most seven queued behind it: the rest goes on on the scheduler's
  // threads (unbounded, this caller's answer waited for a whole queue's: MNIST's p99
  // went to 1.7 s under load). A busy replica takes the call in its turn on its own
  // thread. A call run here cannot be left at its deadline; it is answered
  // DeadlineExceeded if it ended past it.
  CallerJobs caller(*impl_->system, /*max_throughput=*/8);
  AF_RETURN_IF_ERROR(SubmitRun(version, signature, std::move(inputs),
                               [waiter](StatusOr<std::map<std::string, Tensor>> result) {
                                 std::lock_guard<std::mutex> lock(waiter->mu);
                                 waiter->result.emplace(std::move(result));
                                 waiter->cv.notify_one();
                               },
                               &caller));
  caller.RunHeld([&waiter] {
    std::lock_guard<std::mutex> lock(waiter->mu);
    return waiter->result.has_value();
  });
  std::unique_lock<std::mutex> lock(waiter->mu);
  auto answered = [&] { return waiter->result.has_value(); };
  if (timeout_ms > 0) {
    if (!waiter->cv.wait_until(lock, deadline, answered) ||
        std::chrono::steady_clock::now() > deadline) {
      return DeadlineExceeded("the request to " + version.loaded->model() + " version " +
                              std::to_string(version.version()) + " took longer than " +
                              std::to_string(timeout_ms) + " ms");
    }
  } else {
    waiter->cv.wait(lock, answered);
  }
  return std::move(*waiter->result);
}

StatusOr<EnsembleResult> ModelServer::PredictWithEnsemble(
    const std::vector<std::string>& models, const std::map<std::string, Tensor>& inputs,
    const std::string& output, EnsembleCombine combine, int64_t timeout_ms) const {
  if (models.empty()) return InvalidArgument("an ensemble needs at least one member model");
  struct Gather {
    std::mutex mu;
    std::condition_variable cv;
    size_t pending = 0;
    std::map<int, Tensor> answers;  // member -> its `output`
  };
  auto gather = std::make_shared<Gather>();
  for (size_t m = 0; m < models.size(); ++m) {
    auto served = Resolve(models[m], 0, "");
    if (!served.ok()) continue;  // a member that cannot serve is missing, not fatal
    auto signature = served->servable().Signature("");
    if (!signature.ok()) continue;
    {
      std::lock_guard<std::mutex> lock(gather->mu);
      ++gather->pending;
    }
    const int member = static_cast<int>(m);
    Status submitted = RunAsync(
        *served, **signature, inputs,
        [gather, member, output](StatusOr<std::map<std::string, Tensor>> result) {
          std::lock_guard<std::mutex> lock(gather->mu);
          if (result.ok() && result->count(output)) gather->answers[member] = result->at(output);
          --gather->pending;
          gather->cv.notify_one();
        });
    if (!submitted.ok()) {
      std::lock_guard<std::mutex> lock(gather->mu);
      --gather->pending;
    }
  }
  std::unique_lock<std::mutex> lock(gather->mu);
  auto all_in = [&] { return gather->pending == 0; };
  if (timeout_ms > 0) {
    gather->cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), all_in);
  } else {
    gather->cv.wait(lock, all_in);
  }
  std::vector<Tensor> predictions;
  std::vector<int> answered;
  for (const auto& [member, tensor] : gather->answers) {
    answered.push_back(member);
    predictions.push_back(tensor);
  }
  if (answered.empty()) {
    return DeadlineExceeded("no member of the ensemble answered with '" + output + "' within " +
                            std::to_string(timeout_ms) + " ms");
  }
  AF_ASSIGN_OR_RETURN(EnsembleResult result, CombinePredictions(predictions, answered, combine));
  for (size_t m = 0; m < models.size(); ++m) {
    if (!gather->answers.count(static_cast<int>(m))) result.missing.push_back(static_cast<int>(m));
  }
  return result;
}

StatusOr<std::vector<ServedVersionStatus>> ModelServer::VersionStatuses(
    const std::string& model) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->models.find(model);
  if (it == impl_->models.end()) return NotFound("Could not find any versions of model " + model);
  std::vector<ServedVersionStatus> statuses;
  for (auto r = it->second.records.rbegin(); r != it->second.records.rend(); ++r) {
    std::string state = r->second.state;
    if (state == "UNLOADING" && r->second.unloading.expired()) state = "END";
    statuses.push_back(ServedVersionStatus{r->first, state, r->second.status});
  }
  return statuses;
}

std::vector<std::string> ModelServer::ModelNames() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<std::string> names;
  for (const auto& [name, entry] : impl_->models) names.push_back(name);
  return names;
}

std::vector<VersionMetrics> ModelServer::Metrics() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<VersionMetrics> metrics;
  for (const auto& [name, entry] : impl_->models)
    for (const auto& [v, loaded] : entry.available) metrics.push_back(loaded->Metrics());
  return metrics;
}

const ServeOptions& ModelServer::options() const { return impl_->options; }

}  // namespace actorflow
