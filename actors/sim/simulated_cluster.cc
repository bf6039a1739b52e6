#include "actors/sim/simulated_cluster.h"

#include <map>
#include <utility>

#include "actors/protocol/messages.h"
#include "actors/sim/driver_checks.h"
#include "actors/sim/simulated_cluster_impl.h"
#include "graph/graph_json.h"

namespace actorflow {

SimulatedCluster::SimulatedCluster(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SimulatedCluster::~SimulatedCluster() = default;

StatusOr<std::unique_ptr<SimulatedCluster>> SimulatedCluster::Start(const Options& options) {
  AF_RETURN_IF_ERROR(options.link.Validate());
  if (options.shape.tasks.empty()) return InvalidArgument("a simulated cluster needs tasks");
  AF_RETURN_IF_ERROR(CheckSimulationFits(options.shape, options.model_bytes, options.available_bytes));
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  AF_ASSIGN_OR_RETURN(impl->cluster, options.shape.ToClusterSpec());
  impl->shared_cluster = std::make_shared<const ClusterSpec>(impl->cluster);
  caf::actor_system_config& cfg = impl->cfg;
  cfg.set("scheduler.policy", caf::atom("testing"));
  cfg.set("logger.console", caf::atom("none"));
  cfg.set("logger.file-verbosity", caf::atom("quiet"));
  impl->system = std::make_unique<caf::actor_system>(cfg);
  impl->sched = &dynamic_cast<caf::scheduler::test_coordinator&>(impl->system->scheduler());
  impl->client = std::make_unique<caf::scoped_actor>(*impl->system, /*hide=*/true);
  impl->start = impl->sched->clock().now();
  impl->network = std::make_shared<SimNetwork>(
      *impl->system, FaultInjector(options.faults, options.link, options.seed));
  impl->network->log().MixSeed(options.seed);
  for (const TaskId& id : impl->cluster.AllTasks()) {
    Impl::TaskSlot& slot = impl->tasks[id.ToString()];
    slot.id = id;
    slot.directory = SpawnTaskDirectory(*impl->system, impl->registry, id, impl->network);
    impl->Spawn(slot);
  }
  return std::unique_ptr<SimulatedCluster>(new SimulatedCluster(std::move(impl)));
}

const ClusterSpec& SimulatedCluster::cluster() const { return impl_->cluster; }

StatusOr<uint64_t> SimulatedCluster::OpenSession(const TaskId& task, const Graph& graph) {
  AF_ASSIGN_OR_RETURN(Impl::TaskSlot * slot, impl_->LiveSlot(task));
  OpenSessionRequest req;
  req.graph_json = GraphToJson(graph);
  OpenSessionResult opened;
  AF_RETURN_IF_ERROR(impl_->Ask(&opened, slot->actors.front, "opening a session on " + task.ToString(),
                                open_atom::value, std::move(req)));
  AF_RETURN_IF_ERROR(opened.status);
  return opened.session_id;
}

StatusOr<std::vector<Tensor>> SimulatedCluster::Run(const TaskId& task, uint64_t session,
                                                    const FeedList& feeds,
                                                    const std::vector<std::string>& fetches,
                                                    const std::vector<std::string>& targets,
                                                    int64_t timeout_in_ms, RunMetadata* metadata) {
  AF_ASSIGN_OR_RETURN(Impl::TaskSlot * slot, impl_->LiveSlot(task));
  RemoteStep step;
  step.session_id = session;
  for (const auto& [name, value] : feeds) {
    step.feed_names.push_back(name);
    step.feed_values.push_back(value);
  }
  step.fetches = fetches;
  step.targets = targets;
  step.timeout_in_ms = timeout_in_ms;
  step.want_metadata = metadata != nullptr;
  RemoteStepResult result;
  AF_RETURN_IF_ERROR(impl_->Ask(&result, slot->actors.front, "a step on " + task.ToString(),
                                remote_step_atom::value, std::move(step)));
  if (metadata != nullptr) MoveRunMetadata(&result, metadata);
  AF_RETURN_IF_ERROR(result.status);
  return std::move(result.outputs);
}

Status SimulatedCluster::ExtendSession(const TaskId& task, uint64_t session, const Graph& graph) {
  AF_ASSIGN_OR_RETURN(Impl::TaskSlot * slot, impl_->LiveSlot(task));
  OpenSessionRequest req;
  req.graph_json = GraphToJson(graph);
  Status extended;
  AF_RETURN_IF_ERROR(impl_->Ask(&extended, slot->actors.front,
                                "extending a session on " + task.ToString(), extend_atom::value,
                                session, std::move(req)));
  return extended;
}

Status SimulatedCluster::CloseSession(const TaskId& task, uint64_t session) {
  AF_ASSIGN_OR_RETURN(Impl::TaskSlot * slot, impl_->LiveSlot(task));
  Status closed;
  AF_RETURN_IF_ERROR(impl_->Ask(&closed, slot->actors.front, "closing a session on " + task.ToString(),
                                close_atom::value, session));
  return closed;
}

namespace {

class SimulatedSession : public Session {
 public:
  SimulatedSession(SimulatedCluster* cluster, TaskId task, const Graph* graph,
                   std::shared_ptr<const Status> process_end,
                   std::shared_ptr<DriverStepChecks> checks, int64_t default_step_timeout_ms)
      : cluster_(cluster),
        task_(std::move(task)),
        graph_(graph),
        process_end_(std::move(process_end)),
        checks_(std::move(checks)),
        default_step_timeout_ms_(default_step_timeout_ms) {}
  ~SimulatedSession() override { Close(); }

  Status Run(const RunOptions& given, const FeedList& feeds,
             const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs, RunMetadata* metadata) override {
    if (closed_) return FailedPrecondition("Run on a closed session");
    RunOptions options = given;
    if (options.timeout_in_ms == 0) options.timeout_in_ms = default_step_timeout_ms_;
    if (process_end_ != nullptr && !process_end_->ok()) return *process_end_;
    if (!open_) {
      AF_ASSIGN_OR_RETURN(session_, cluster_->OpenSession(task_, *graph_));
      sent_nodes_ = graph_->num_nodes();
      open_ = true;
    } else if (graph_->num_nodes() != sent_nodes_) {
      AF_RETURN_IF_ERROR(cluster_->ExtendSession(task_, session_, *graph_));
      sent_nodes_ = graph_->num_nodes();
    }
    const double started_s = cluster_->VirtualSeconds();
    StatusOr<std::vector<Tensor>> out =
        cluster_->Run(task_, session_, feeds, fetches, targets, options.timeout_in_ms, metadata);
    if (checks_ != nullptr) Check(started_s, options, feeds, fetches, out);
    // A process that died during the step never sees its answer.
    if (process_end_ != nullptr && !process_end_->ok()) return *process_end_;
    AF_RETURN_IF_ERROR(out.status());
    if (outputs != nullptr) *outputs = std::move(*out);
    return Status::OK();
  }

  Status Close() override {
    if (closed_) return Status::OK();
    closed_ = true;
    if (process_end_ != nullptr && !process_end_->ok()) return Status::OK();  // gone with it
    if (!open_) return Status::OK();
    open_ = false;
    return cluster_->CloseSession(task_, session_);
  }

 private:
  // Tells checks_ the step's span and bytes, and the global step it read.
  void Check(double started_s, const RunOptions& options, const FeedList& feeds,
             const std::vector<std::string>& fetches,
             const StatusOr<std::vector<Tensor>>& out) {
    const double ended_s = cluster_->VirtualSeconds();
    int64_t bytes = 0;
    for (const auto& [name, value] : feeds) bytes += static_cast<int64_t>(value.TotalBytes());
    if (out.ok()) {
      for (const Tensor& t : *out) bytes += static_cast<int64_t>(t.TotalBytes());
    }
    const std::string task = task_.ToString();
    checks_->Step(task, started_s, ended_s, options.timeout_in_ms, bytes);
    const std::vector<std::string>& global_step = graph_->GetCollection(kGlobalStepCollection);
    if (!out.ok() || global_step.empty()) return;
    for (size_t i = 0; i < fetches.size() && i < out->size(); ++i) {
      const Tensor& value = (*out)[i];
      const bool is_step = fetches[i] == global_step.front() ||
                           fetches[i] == global_step.front() + ":0";
      if (is_step && value.dtype() == DType::kInt64 && value.NumElements() == 1) {
        checks_->GlobalStep(task, value.data<int64_t>()[0], ended_s);
      }
    }
  }

  SimulatedCluster* cluster_;
  TaskId task_;
  const Graph* graph_;
  int sent_nodes_ = -1;
  uint64_t session_ = 0;
  bool open_ = false;
  bool closed_ = false;
  // Not OK once the process this session's client stands for has died.
  std::shared_ptr<const Status> process_end_;
  std::shared_ptr<DriverStepChecks> checks_;  // null outside RunDrivers
  // SessionOptions::default_step_timeout_in_ms: a step's deadline when its
  // RunOptions give none (virtual; 0: none).
  int64_t default_step_timeout_ms_ = 0;
};

}  // namespace

std::unique_ptr<Session> SimulatedCluster::NewSession(const TaskId& task, const Graph* graph) {
  return std::make_unique<SimulatedSession>(this, task, graph, nullptr, nullptr, 0);
}

std::unique_ptr<Session> NewSimulatedDriverSession(SimulatedCluster* cluster, const TaskId& task,
                                                   const Graph* graph,
                                                   std::shared_ptr<const Status> process_end,
                                                   std::shared_ptr<DriverStepChecks> checks,
                                                   int64_t default_step_timeout_ms) {
  return std::make_unique<SimulatedSession>(cluster, task, graph, std::move(process_end),
                                            std::move(checks), default_step_timeout_ms);
}

Status SimulatedCluster::KillTask(const TaskId& task) {
  AF_ASSIGN_OR_RETURN(Impl::TaskSlot * slot, impl_->Slot(task));
  if (!slot->alive) return FailedPrecondition("task " + task.ToString() + " is already down");
  impl_->registry->Remove(impl_->cluster.Address(task)->ToString());
  StopTaskActors(slot->actors);
  for (caf::actor& a : slot->companions) caf::anon_send_exit(a, caf::exit_reason::kill);
  slot->companions.clear();
  slot->alive = false;
  impl_->RecordTaskEvent(SimEvent::Kind::kKilled, task);
  impl_->Drain();
  return Status::OK();
}

Status SimulatedCluster::RestartTask(const TaskId& task) {
  AF_ASSIGN_OR_RETURN(Impl::TaskSlot * slot, impl_->Slot(task));
  if (slot->alive) return FailedPrecondition("task " + task.ToString() + " is running");
  impl_->RecordTaskEvent(SimEvent::Kind::kRestarted, task);
  impl_->Spawn(*slot);
  return Status::OK();
}

void SimulatedCluster::AdvanceSeconds(double seconds) {
  auto& clock = impl_->sched->clock();
  const auto until = clock.now() + std::chrono::duration_cast<caf::timespan>(
                                       std::chrono::duration<double>(std::max(0.0, seconds)));
  impl_->Drain();
  while (!clock.schedule().empty() && clock.schedule().begin()->first <= until) {
    impl_->sched->trigger_timeout();
    impl_->Drain();
  }
  if (clock.current_time < until) clock.current_time = until;
}

double SimulatedCluster::VirtualSeconds() const {
  return std::chrono::duration<double>(impl_->sched->clock().now() - impl_->start).count();
}

const EventLog& SimulatedCluster::event_log() const { return impl_->network->log(); }

}  // namespace actorflow
