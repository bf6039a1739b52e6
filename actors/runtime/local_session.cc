#include "actors/runtime/local_session.h"

#include <algorithm>
#include <chrono>

#include "actors/scheduler/caller_jobs.h"
#include "actors/runtime/device_actor.h"
#include "actors/runtime/direct_steps.h"
#include "actors/runtime/master_actor.h"
#include "actors/protocol/messages.h"
#include "actors/scheduler/spinning_scheduler.h"
#include "kernels/gpu_runtime.h"
#include "placement/placer.h"

namespace actorflow {
namespace {

class LocalActorSession : public ActorSession {
 public:
  LocalActorSession(const Graph* graph, const SessionOptions& options, size_t num_cpus,
                    size_t num_gpus)
      : graph_(graph), options_(options) {
    // By default a thread per device: a device runs a partition's ready nodes on one
    // thread until they are done, so with fewer threads than devices a device waits
    // for another's burst (a model split over 3 devices on 2 cores would run its
    // stages one after the other instead of overlapping them). More threads than
    // devices would find no work of their own: the master and queue actors only pass
    // messages, and a device's burst cannot be shared. They would cost every step
    // instead: each message from the master to a device, and back, would wake (or
    // be taken by) another thread rather than be run by the thread that sent it,
    // which on a small step costs more than the step's kernels.
    size_t threads = options.inter_op_parallelism_threads > 0
                         ? static_cast<size_t>(options.inter_op_parallelism_threads)
                         : std::max<size_t>(1, num_cpus + num_gpus);
    ConfigureScheduler(cfg_, SchedulerOptions{threads, options.scheduler_spin_us});
    cfg_.set("logger.console", caf::atom("none"));
    RegisterMessageTypes(cfg_);
    system_ = std::make_unique<caf::actor_system>(cfg_);

    resources_ = std::make_shared<ResourceManager>();
    services_ = std::make_shared<TaskServices>();
    services_->task_name = kLocalTask;
    std::vector<DevicePeer> peers;
    for (size_t i = 0; i < num_cpus + num_gpus; ++i) {
      const bool gpu = i >= num_cpus;
      const size_t id = gpu ? i - num_cpus : i;
      DeviceConfig dc;
      dc.type = gpu ? "GPU" : "CPU";
      dc.name = std::string(kLocalTask) + "/device:" + dc.type + ":" + std::to_string(id);
      // Each device keeps its own variables.
      dc.resources = std::make_shared<ResourceManager>();
      dc.operation_timeout_in_ms = options.operation_timeout_in_ms;
      dc.services = services_;
      devices_.push_back(DeviceInfo{dc.name, dc.type});
      device_actors_.push_back(SpawnDeviceActor(*system_, dc));
      peers.push_back(DevicePeer{dc.name, dc.type, device_actors_.back()});
    }
    for (const DeviceActor& d : device_actors_) caf::anon_send(d, peers_atom::value, peers);
    // As in TensorFlow, nodes without a requested device prefer the first GPU; the
    // placer puts those that have no GPU kernel on the CPU.
    default_device_ = num_gpus > 0 ? devices_[num_cpus].name : devices_.front().name;
    MasterConfig mc;
    mc.graph = graph;
    mc.devices = devices_;
    mc.device_actors = device_actors_;
    mc.default_device = default_device_;
    mc.allow_soft_placement = options.allow_soft_placement;
    mc.log_device_placement = options.log_device_placement;
    master_ = SpawnMasterActor(*system_, mc);
  }

  ~LocalActorSession() override {
    Close();
    for (const DeviceActor& d : device_actors_) caf::anon_send_exit(d, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(master_, caf::exit_reason::user_shutdown);
    master_ = nullptr;
    device_actors_.clear();
    system_.reset();  // waits for every actor to terminate
  }

  Status Run(const RunOptions& run_options, const FeedList& feeds,
             const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs, RunMetadata* metadata) override {
    if (closed_) return FailedPrecondition("Run on a closed session");
    RunOptions options = run_options;
    if (options.timeout_in_ms <= 0) options.timeout_in_ms = options_.default_step_timeout_in_ms;
    // Run metadata and traces are the master's to build; other steps of a
    // one-partition plan go straight to the device (actors/runtime/direct_steps.h).
    const bool direct_ok =
        metadata == nullptr && options.trace_level == RunOptions::TraceLevel::kNoTrace;
    if (direct_ok) {
      if (std::shared_ptr<DirectPlan> plan = direct_.Find(feeds, fetches, targets)) {
        Status status;
        auto send = [this](const DeviceActor& device, std::shared_ptr<DirectRun> run,
                           const std::shared_ptr<PartitionReply>& reply, int64_t timeout_ms) {
          const auto sent_at = std::chrono::steady_clock::now();
          Enqueue(caf::actor_cast<caf::strong_actor_ptr>(device),
                  caf::make_message(direct_run_atom::value, std::move(run)), *reply);
          return Await(*reply, sent_at, timeout_ms);
        };
        if (direct_.Run(*plan, options.timeout_in_ms, feeds, fetches.size(), send, outputs,
                        &status)) {
          AF_RETURN_IF_ERROR(status);
          return FetchesToHost(outputs);
        }
      }
    }

    auto req = std::make_shared<StepRequest>();
    req->feeds = feeds;
    req->fetches = fetches;
    req->targets = targets;
    req->options = options;
    req->accepts_direct = direct_ok;
    const int64_t timeout_ms = req->options.timeout_in_ms;
    req->reply = std::make_shared<StepReply>();
    std::shared_ptr<StepReply> reply = req->reply;
    // Run metadata costs per-node work on every device; build it only when asked.
    req->want_metadata = metadata != nullptr;
    const auto sent_at = std::chrono::steady_clock::now();
    Enqueue(caf::actor_cast<caf::strong_actor_ptr>(master_),
            caf::make_message(step_atom::value, std::move(req)), *reply);
    // The master enforces the deadline; this margin only guards against a bug.
    if (!Await(*reply, sent_at, timeout_ms > 0 ? timeout_ms + 10000 : 0)) {
      return Internal("the master did not answer within the step's deadline plus 10 s");
    }
    if (metadata != nullptr) *metadata = std::move(reply->metadata);
    AF_RETURN_IF_ERROR(reply->status);
    if (reply->direct != nullptr) direct_.Remember(feeds, fetches, targets, reply->direct);
    if (outputs != nullptr) *outputs = std::move(reply->outputs);
    return FetchesToHost(outputs);
  }

  // Steps answered without the master (actors/runtime/direct_steps.h).
  int64_t DirectStepCount() const override { return direct_.steps(); }

  Status Close() override {
    closed_ = true;
    return Status::OK();
  }

  std::vector<std::string> DeviceNames() const override {
    std::vector<std::string> names;
    for (const DeviceInfo& d : devices_) names.push_back(d.name);
    return names;
  }

  StatusOr<std::string> ExplainPlacement() const override {
    std::vector<const Node*> nodes;
    for (int i = 0; i < graph_->num_nodes(); ++i) nodes.push_back(graph_->node(i));
    PlacerOptions popts;
    popts.devices = devices_;
    popts.default_device = default_device_;
    popts.allow_soft_placement = options_.allow_soft_placement;
    AF_ASSIGN_OR_RETURN(auto placement, PlaceNodes(*graph_, nodes, popts));
    return actorflow::ExplainPlacement(*graph_, placement);
  }

  StatusOr<std::vector<DeviceStatus>> DeviceStatuses(int64_t timeout_ms) override {
    caf::scoped_actor self{*system_};
    std::vector<DeviceStatus> out;
    for (const DeviceActor& d : device_actors_) {
      Status status;
      self->request(d, std::chrono::milliseconds(timeout_ms), device_stats_atom::value)
          .receive(
              [&](const DeviceStats& s) {
                out.push_back(DeviceStatus{s.device, s.pending_recvs, s.inbox_tensors,
                                           s.active_steps});
              },
              [&](caf::error& e) {
                status = Unavailable("device did not report its state: " + caf::to_string(e));
              });
      AF_RETURN_IF_ERROR(status);
    }
    return out;
  }

 private:
  // Sends `msg` to `actor`. With one device, an idle actor is scheduled through this
  // thread's unit, and so is the actor it asks (actors/scheduler/caller_jobs.h): a step on
  // idle actors runs its whole chain here, until `reply` is ready. Busy actors take
  // the message on the scheduler's threads, as a plain send would. Only with one
  // device: with several, a device running here would hold a device it sends a
  // tensor to until its own turn ends, and the two could no longer work side by
  // side (a pipeline's stages, a model's towers).
  template <typename Reply>
  void Enqueue(const caf::strong_actor_ptr& actor, caf::message msg, const Reply& reply) {
    if (device_actors_.size() != 1) {
      actor->enqueue(nullptr, caf::make_message_id(), std::move(msg), nullptr);
      return;
    }
    CallerJobs caller(*system_);
    actor->enqueue(nullptr, caf::make_message_id(), std::move(msg), &caller);
    caller.RunHeld([&reply] { return reply.ready.load(std::memory_order_acquire); });
  }

  // Waits for `reply` (a StepReply or PartitionReply); false when `limit_ms` (> 0)
  // after `sent_at` passed first. Most steps end within the poll; a longer one parks this thread on
  // the reply's condition variable. A session whose last step outlasted the poll
  // parks at once: its poll would only take a core from the devices (a model split
  // over more devices than cores runs its stages concurrently only if no thread
  // polls).
  template <typename Reply>
  bool Await(Reply& reply, std::chrono::steady_clock::time_point sent_at, int64_t limit_ms) {
    auto is_answered = [&reply] { return reply.ready.load(std::memory_order_acquire); };
    if (is_answered()) {
      // The step ran on this thread (Enqueue): it kept this thread busy, not waiting,
      // and costs no clock read.
      last_step_wait_us_.store(0, std::memory_order_relaxed);
      return true;
    }
    const int64_t spin_us = options_.scheduler_spin_us;
    const bool expect_short = last_step_wait_us_.load(std::memory_order_relaxed) <= spin_us;
    bool answered =
        SpinUntil(is_answered, std::chrono::microseconds(expect_short ? spin_us : 0));
    if (!answered) {
      std::unique_lock<std::mutex> lock(reply.mu);
      if (limit_ms > 0) {
        answered = reply.cv.wait_until(lock, sent_at + std::chrono::milliseconds(limit_ms),
                                       [&] { return reply.done; });
      } else {
        reply.cv.wait(lock, [&] { return reply.done; });
        answered = true;
      }
    }
    last_step_wait_us_.store(std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::steady_clock::now() - sent_at)
                                 .count(),
                             std::memory_order_relaxed);
    return answered;
  }

  // A GPU partition returns its fetches in device memory; this thread may wait for
  // their copies (the device actors never do).
  static Status FetchesToHost(std::vector<Tensor>* outputs) {
    if (outputs == nullptr) return Status::OK();
    for (Tensor& t : *outputs) {
      if (t.IsOnDevice()) {
        AF_ASSIGN_OR_RETURN(t, ToHostTensor(t));
      }
    }
    return Status::OK();
  }

  const Graph* graph_;
  SessionOptions options_;
  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> system_;
  std::shared_ptr<ResourceManager> resources_;
  std::shared_ptr<TaskServices> services_;
  std::vector<DeviceInfo> devices_;
  std::string default_device_;
  std::vector<DeviceActor> device_actors_;
  MasterActor master_;
  DirectSteps direct_;
  std::atomic<bool> closed_{false};
  // How long the last step's answer took (any thread's): decides whether the next
  // Run polls for its answer or parks at once.
  std::atomic<int64_t> last_step_wait_us_{0};
};

}  // namespace

StatusOr<std::unique_ptr<ActorSession>> NewActorSession(const Graph* graph,
                                                        const SessionOptions& options) {
  if (graph == nullptr) return InvalidArgument("NewActorSession: no graph");
  int cpus = 1;
  // Every GPU found unless device_count caps it (as TensorFlow's device_count).
  int gpus = GpuDeviceCount();
  for (const auto& [type, count] : options.device_count) {
    if (count < 0) {
      return InvalidArgument("device_count for " + type + " is negative (" +
                             std::to_string(count) + ")");
    }
    if (type == "CPU" || type == "cpu") {
      cpus = count;
    } else if (type == "GPU" || type == "gpu") {
      gpus = std::min(gpus, count);
    } else {
      return InvalidArgument("device_count names an unknown device type '" + type +
                             "' (known: CPU, GPU)");
    }
  }
  if (cpus < 1) return InvalidArgument("device_count needs at least one CPU device");
  return std::unique_ptr<ActorSession>(
      new LocalActorSession(graph, options, static_cast<size_t>(cpus), static_cast<size_t>(gpus)));
}

}  // namespace actorflow
