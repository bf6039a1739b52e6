#include "actors/cluster/remote_session.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>

#include <caf/io/all.hpp>

#include "actors/transport/cluster_transport.h"
#include "actors/transport/connect.h"
#include "actors/protocol/messages.h"
#include "actors/scheduler/spinning_scheduler.h"
#include "actors/cluster/graph_handoff.h"
#include "actors/cluster/step_channel.h"
#include "graph/graph_json.h"
#include "placement/cluster_spec.h"

namespace actorflow {

// One client step in flight: filled by the session's stepper, waited on by the
// client's thread (polled for the scheduler's spin, then parked on `cv`).
struct PendingRemoteStep {
  RemoteStep step;
  caf::duration wait;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::atomic<bool> ready{false};  // `done`, readable without the lock
  RemoteStepResult result;

  // The first answer wins: a lost heartbeat may end the step before its late reply.
  // Notifies after unlocking (see StepReply::Deliver).
  void Deliver(RemoteStepResult r) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (done) return;
      result = std::move(r);
      done = true;
      ready.store(true, std::memory_order_release);
    }
    cv.notify_all();
  }
};

}  // namespace actorflow

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<actorflow::PendingRemoteStep>)

namespace actorflow {
namespace {

using watch_step_atom = caf::atom_constant<caf::atom("rwatch")>;

// A remote session's own actor, one for the session's life (local only):
//   (remote_step_atom, shared_ptr<PendingRemoteStep>)
//       sends the step to the server's front and delivers its RemoteStepResult, or
//       DeadlineExceeded / Unavailable naming the target;
//   (heartbeat_atom)
//       its own tick while steps are in flight: pings the front every quarter of
//       the heartbeat timeout, and a ping unanswered within it ends every step in
//       flight with Unavailable ("... is down").
//   (watch_step_atom, shared_ptr<PendingRemoteStep>)
//       a step sent on the step channel that waits long: only its heartbeat, which
//       delivers Unavailable to it as to the others. Its waiter delivers its own
//       answer; the next tick forgets it.
// Steps still in flight when it ends are answered Cancelled.
using StepperActor =
    caf::typed_actor<caf::reacts_to<remote_step_atom, std::shared_ptr<PendingRemoteStep>>,
                     caf::reacts_to<watch_step_atom, std::shared_ptr<PendingRemoteStep>>,
                     caf::reacts_to<heartbeat_atom>>;

struct StepperInFlight {
  std::map<uint64_t, std::shared_ptr<PendingRemoteStep>> steps;
  uint64_t next_id = 0;
  bool ticking = false;

  void Finish(uint64_t id, RemoteStepResult r) {
    auto it = steps.find(id);
    if (it == steps.end()) return;  // already ended by a lost heartbeat
    it->second->Deliver(std::move(r));
    steps.erase(it);
  }
  // Forgets the watched steps whose waiters already have their answers.
  void DropAnswered() {
    for (auto it = steps.begin(); it != steps.end();) {
      if (it->second->ready.load(std::memory_order_acquire)) {
        it = steps.erase(it);
      } else {
        ++it;
      }
    }
  }
  void FailAll(const Status& status) {
    for (auto& [id, pending] : steps) {
      RemoteStepResult r;
      r.status = status;
      pending->Deliver(std::move(r));
    }
    steps.clear();
  }
};

StepperActor::behavior_type StepperBehavior(StepperActor::pointer self, FrontActor front,
                                            std::string target, int64_t heartbeat_ms) {
  auto flight = std::make_shared<StepperInFlight>();
  self->attach_functor(
      [flight] { flight->FailAll(Cancelled("the session ended while the step ran")); });
  const auto interval = std::chrono::milliseconds(HeartbeatIntervalMs(heartbeat_ms));
  return {
      [=](remote_step_atom, std::shared_ptr<PendingRemoteStep>& pending) {
        const uint64_t id = ++flight->next_id;
        flight->steps[id] = pending;
        self->request(front, pending->wait, remote_step_atom::value, std::move(pending->step))
            .then([flight, id](RemoteStepResult& r) { flight->Finish(id, std::move(r)); },
                  [flight, id, target](caf::error& e) {
                    RemoteStepResult r;
                    r.status = e == caf::sec::request_timeout
                                   ? DeadlineExceeded("no answer from " + target +
                                                      " within the step's deadline")
                                   : Unavailable("lost the master at " + target + ": " +
                                                 caf::to_string(e));
                    flight->Finish(id, std::move(r));
                  });
        if (heartbeat_ms > 0 && !flight->ticking) {
          flight->ticking = true;
          self->delayed_send(self, interval, heartbeat_atom::value);
        }
      },
      [=](watch_step_atom, std::shared_ptr<PendingRemoteStep>& pending) {
        flight->steps[++flight->next_id] = std::move(pending);
        if (heartbeat_ms > 0 && !flight->ticking) {
          flight->ticking = true;
          self->delayed_send(self, interval, heartbeat_atom::value);
        }
      },
      [=](heartbeat_atom) {
        flight->DropAnswered();
        if (flight->steps.empty()) {
          flight->ticking = false;
          return;
        }
        self->request(front, std::chrono::milliseconds(heartbeat_ms), ping_atom::value)
            .then([](std::string&) {},
                  [flight, target, heartbeat_ms](caf::error& e) {
                    flight->FailAll(Unavailable(
                        target + " is down: " +
                        (e == caf::sec::request_timeout
                             ? "no heartbeat answer within " + std::to_string(heartbeat_ms) + " ms"
                             : caf::to_string(e))));
                  });
        self->delayed_send(self, interval, heartbeat_atom::value);
      },
  };
}

StepperActor SpawnStepper(caf::actor_system& system, FrontActor front, std::string target,
                          int64_t heartbeat_ms) {
  return system.spawn(StepperBehavior, std::move(front), std::move(target), heartbeat_ms);
}

void ConfigureClient(caf::actor_system_config& cfg, int64_t spin_us, int64_t peer_timeout_ms) {
  TransportLimits limits;
  limits.peer_timeout_ms = peer_timeout_ms;
  ConfigureClusterTransport(cfg, limits);
  ConfigureScheduler(cfg, SchedulerOptions{0, spin_us});
  cfg.set("logger.console", caf::atom("none"));
}

// A client actor system, ended (ShutDownClusterSystem) with its last holder.
class ClientRuntimeImpl : public ClientRuntime {
 public:
  ClientRuntimeImpl(int64_t spin_us, int64_t peer_timeout_ms) {
    ConfigureClient(cfg_, spin_us, peer_timeout_ms);
    system_ = std::make_unique<caf::actor_system>(cfg_);
  }
  ~ClientRuntimeImpl() override { ShutDownClusterSystem(system_); }

  caf::actor_system& system() { return *system_; }

 private:
  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> system_;
};

// `given` when it is one of ours (only NewClientRuntime makes them), else a new one
// whose connections are closed after the session's heartbeat timeout of silence.
std::shared_ptr<ClientRuntimeImpl> RuntimeFor(const std::shared_ptr<ClientRuntime>& given,
                                              int64_t spin_us, int64_t peer_timeout_ms) {
  if (auto shared = std::dynamic_pointer_cast<ClientRuntimeImpl>(given)) return shared;
  return std::make_shared<ClientRuntimeImpl>(spin_us, peer_timeout_ms);
}

class RemoteSession : public Session {
 public:
  RemoteSession(const Graph* graph, const SessionOptions& options)
      : graph_(graph),
        options_(options),
        runtime_(RuntimeFor(options.client_runtime, options.scheduler_spin_us,
                            options.heartbeat_timeout_in_ms)) {}

  ~RemoteSession() override {
    Close();
    step_channel_.reset();
    if (stepper_) caf::anon_send_exit(stepper_, caf::exit_reason::user_shutdown);
    stepper_ = nullptr;
    front_ = nullptr;
    runtime_.reset();  // ends the actor system unless other sessions share it
  }

  caf::actor_system& system() { return runtime_->system(); }

  Status Connect(int64_t timeout_ms) {
    connect_timeout_ms_ = timeout_ms;
    std::string host;
    uint16_t port = 0;
    AF_RETURN_IF_ERROR(ParseTarget(options_.target, &host, &port));
    host_ = host;
    endpoint_ = host + ":" + std::to_string(port);
    AF_ASSIGN_OR_RETURN(front_, ConnectToServer(system(), host, port,
                                                std::chrono::milliseconds(timeout_ms),
                                                options_.target));
    return OpenSession(timeout_ms);
  }

  Status Run(const RunOptions& run_options, const FeedList& feeds,
             const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs, RunMetadata* metadata) override {
    if (closed_) return FailedPrecondition("Run on a closed session");
    if (graph_->num_nodes() != sent_nodes_.load()) AF_RETURN_IF_ERROR(ExtendSession());
    const int64_t timeout_ms = run_options.timeout_in_ms > 0
                                   ? run_options.timeout_in_ms
                                   : options_.default_step_timeout_in_ms;
    RemoteStep step;
    step.session_id = session_id_;
    for (const auto& [name, value] : feeds) {
      step.feed_names.push_back(name);
      step.feed_values.push_back(value);
    }
    step.fetches = fetches;
    step.targets = targets;
    step.timeout_in_ms = timeout_ms;
    step.trace = run_options.trace_level == RunOptions::TraceLevel::kFullTrace;
    step.want_metadata = metadata != nullptr;
    RemoteStepResult r = SendStep(std::move(step), timeout_ms);
    Status status = r.status;
    if (status.ok() && outputs != nullptr) *outputs = std::move(r.outputs);
    if (metadata != nullptr) MoveRunMetadata(&r, metadata);
    return status;
  }

  // Returns once the server has freed the session (its master and every partition
  // on every device), so a long-lived server holds nothing of a closed session.
  // Bounded by the connect timeout; a server that is gone answers at once (CAF
  // bounces a request to a dead peer), and its resources went with it.
  Status Close() override {
    if (closed_.exchange(true)) return Status::OK();
    if (step_channel_) step_channel_->CloseAll();
    if (!front_ || session_id_ == 0) return Status::OK();
    caf::scoped_actor self{system()};
    // A master whose connection the failure detector closed (it hung, or its host
    // was cut off) is not asked: a request to its dead proxy would wait out the
    // whole timeout. Monitoring a dead actor delivers its down message at once.
    self->monitor(front_);
    bool master_down = false;
    self->receive([&](caf::down_msg&) { master_down = true; },
                  caf::after(std::chrono::milliseconds(0)) >> [] {});
    if (master_down) {
      return Unavailable(options_.target + ": closing session " + std::to_string(session_id_) +
                         ": the connection to the master was lost; its session ends with the "
                         "master's own cleanup");
    }
    self->demonitor(front_.address());
    Status status;
    self->request(front_, std::chrono::milliseconds(connect_timeout_ms_), close_atom::value,
                  session_id_)
        .receive([&](Status& s) { status = std::move(s); },
                 [&](caf::error& e) {
                   status = Unavailable(options_.target + ": closing session " +
                                        std::to_string(session_id_) + ": " + caf::to_string(e));
                 });
    return status;
  }

 private:
  // The step's answer: over the step channel when the server has one (and it takes
  // the step), else over CAF through the stepper.
  RemoteStepResult SendStep(RemoteStep step, int64_t timeout_ms) {
    // The master enforces the step's deadline; the margin covers the network.
    const int64_t wait_ms = timeout_ms > 0 ? timeout_ms + 5000 : 0;
    RemoteStepResult r;
    if (step_channel_ != nullptr) {
      // Made only for a step that waits long: most steps never touch the stepper.
      std::shared_ptr<PendingRemoteStep> watched;
      StepChannelClient::Watch watch;
      const int64_t heartbeat_ms = options_.heartbeat_timeout_in_ms;
      watch.long_wait = std::chrono::milliseconds(std::max<int64_t>(heartbeat_ms / 4, 10));
      watch.on_long_wait = [&] {
        if (heartbeat_ms <= 0) return;
        watched = std::make_shared<PendingRemoteStep>();
        caf::anon_send(Stepper(), watch_step_atom::value, watched);
      };
      watch.lost = [&](Status* status) {
        if (!watched || !watched->ready.load(std::memory_order_acquire)) return false;
        *status = watched->result.status;
        return true;
      };
      const auto deadline = wait_ms > 0 ? std::chrono::steady_clock::now() +
                                              std::chrono::milliseconds(wait_ms)
                                        : std::chrono::steady_clock::time_point::max();
      auto outcome = step_channel_->Run(step, deadline, watch, &r);
      // The stepper forgets a watched step at its next tick.
      if (watched) watched->Deliver(RemoteStepResult());
      if (outcome == StepChannelClient::Outcome::kAnswered) return r;
    }
    auto pending = std::make_shared<PendingRemoteStep>();
    pending->step = std::move(step);
    pending->wait = wait_ms > 0 ? caf::duration{std::chrono::milliseconds(wait_ms)}
                                : caf::duration{caf::infinite};
    caf::anon_send(Stepper(), remote_step_atom::value, pending);
    // Most steps end within the poll; a longer one parks this thread.
    if (!SpinUntil([&] { return pending->ready.load(std::memory_order_acquire); },
                   std::chrono::microseconds(options_.scheduler_spin_us))) {
      std::unique_lock<std::mutex> lock(pending->mu);
      pending->cv.wait(lock, [&] { return pending->done; });
    }
    return std::move(pending->result);
  }

  // The graph as it is now, for the server: by reference to a task of this process
  // (a copy, since graph_ may grow), as JSON to any other.
  void PutGraph(OpenSessionRequest* req) const {
    if (graph_handoff::ServesTask(endpoint_)) {
      req->graph_ticket =
          graph_handoff::Leave(endpoint_, std::shared_ptr<const Graph>(graph_->Clone()));
    }
    if (req->graph_ticket == 0) req->graph_json = GraphToJson(*graph_);
  }
  // A graph the task did not take (its request got no answer) is not kept.
  static void TakeBackGraph(uint64_t ticket) {
    if (ticket != 0) graph_handoff::Take(ticket);
  }

  Status OpenSession(int64_t timeout_ms) {
    if (front_ && session_id_ != 0) caf::anon_send(front_, close_atom::value, session_id_);
    OpenSessionRequest req;
    PutGraph(&req);
    req.allow_soft_placement = options_.allow_soft_placement;
    req.log_device_placement = options_.log_device_placement;
    const int nodes = graph_->num_nodes();
    const uint64_t ticket = req.graph_ticket;
    caf::scoped_actor self{system()};
    Status status = Internal("no answer");
    uint16_t step_port = 0;
    self->request(front_, std::chrono::milliseconds(timeout_ms), open_atom::value, std::move(req))
        .receive(
            [&](OpenSessionResult& r) {
              status = r.status;
              session_id_ = r.session_id;
              step_port = r.step_port;
            },
            [&](caf::error& e) {
              status = Unavailable("cannot open a session on " + options_.target + ": " +
                                   system().render(e));
            });
    TakeBackGraph(ticket);
    if (status.ok()) sent_nodes_ = nodes;
    // The port is the server's for its life: one channel serves every reopen.
    if (status.ok() && step_port != 0 && step_channel_ == nullptr && options_.step_channel &&
        !system().has_openssl_manager()) {
      StepChannelOptions so;
      so.spin_us = options_.scheduler_spin_us;
      step_channel_ = std::make_unique<StepChannelClient>(
          system(), host_ + ":" + std::to_string(step_port), options_.target, so, timeout_ms);
    }
    return status;
  }

  // The graph grew since it was sent: the server's session takes the new nodes
  // (TensorFlow's Session::Extend) and keeps its id, plans, steps in flight and
  // private resources. One thread extends; the others find it done.
  Status ExtendSession() {
    std::lock_guard<std::mutex> lock(extend_mu_);
    const int nodes = graph_->num_nodes();
    if (nodes == sent_nodes_.load()) return Status::OK();
    OpenSessionRequest req;
    PutGraph(&req);
    const uint64_t ticket = req.graph_ticket;
    caf::scoped_actor self{system()};
    Status status = Internal("no answer");
    self->request(front_, std::chrono::milliseconds(connect_timeout_ms_), extend_atom::value,
                  session_id_, std::move(req))
        .receive([&](Status& s) { status = std::move(s); },
                 [&](caf::error& e) {
                   status = Unavailable("cannot extend session " + std::to_string(session_id_) +
                                        " on " + options_.target + ": " + system().render(e));
                 });
    TakeBackGraph(ticket);
    if (status.ok()) sent_nodes_ = nodes;
    return status;
  }

  // The session's stepper, spawned with its first step.
  StepperActor Stepper() {
    std::lock_guard<std::mutex> lock(stepper_mu_);
    if (!stepper_) {
      stepper_ = SpawnStepper(system(), front_, options_.target, options_.heartbeat_timeout_in_ms);
    }
    return stepper_;
  }

  const Graph* graph_;
  SessionOptions options_;
  std::shared_ptr<ClientRuntimeImpl> runtime_;
  FrontActor front_;
  std::string host_;  // the server's, as the target names it
  std::string endpoint_;  // host_:port
  // Steps beside CAF (actors/cluster/step_channel.h); null when the server has none.
  std::unique_ptr<StepChannelClient> step_channel_;
  std::mutex stepper_mu_;
  StepperActor stepper_;
  uint64_t session_id_ = 0;
  // The nodes the server's session has (ExtendSession sends the rest).
  std::atomic<int> sent_nodes_{-1};
  std::mutex extend_mu_;
  // SessionOptions.connect_timeout_in_ms: bounds every (re)open of the session.
  int64_t connect_timeout_ms_ = 30000;
  std::atomic<bool> closed_{false};
};

}  // namespace

StatusOr<std::unique_ptr<Session>> NewRemoteSession(const Graph* graph,
                                                    const SessionOptions& options,
                                                    int64_t connect_timeout_ms) {
  if (graph == nullptr) return InvalidArgument("NewRemoteSession: no graph");
  auto session = std::make_unique<RemoteSession>(graph, options);
  AF_RETURN_IF_ERROR(session->Connect(connect_timeout_ms));
  return std::unique_ptr<Session>(std::move(session));
}

namespace {

// Clears `containers` on the task whose front is at host:port; *cluster_json: the
// cluster spec it answers with ("" for a task outside any cluster).
Status ResetOne(caf::actor_system& system, const std::string& host, uint16_t port,
                const std::string& who, const std::vector<std::string>& containers,
                int64_t timeout_ms, std::string* cluster_json) {
  AF_ASSIGN_OR_RETURN(FrontActor front, ConnectToServer(system, host, port,
                                                        std::chrono::milliseconds(timeout_ms), who));
  caf::scoped_actor self{system};
  Status status;
  self->request(front, std::chrono::milliseconds(timeout_ms), reset_atom::value, containers)
      .receive([&](std::string& json) { *cluster_json = std::move(json); },
               [&](caf::error& e) {
                 status = Unavailable(who + ": reset failed: " + system.render(e));
               });
  return status;
}

}  // namespace

std::shared_ptr<ClientRuntime> NewClientRuntime(int64_t scheduler_spin_us) {
  return std::make_shared<ClientRuntimeImpl>(scheduler_spin_us, DefaultPeerTimeoutMs());
}

Status ResetTask(const std::string& target, const std::vector<std::string>& containers,
                 int64_t timeout_ms, std::shared_ptr<ClientRuntime> runtime) {
  std::string host;
  uint16_t port = 0;
  AF_RETURN_IF_ERROR(ParseTarget(target, &host, &port));
  // A runtime of its own for a one-off request never polls.
  std::shared_ptr<ClientRuntimeImpl> client = RuntimeFor(runtime, 0, DefaultPeerTimeoutMs());
  std::string ignored;
  return ResetOne(client->system(), host, port, target, containers, timeout_ms, &ignored);
}

Status ResetCluster(const std::string& target, const std::vector<std::string>& containers,
                    int64_t timeout_ms, std::shared_ptr<ClientRuntime> runtime) {
  std::string host;
  uint16_t port = 0;
  AF_RETURN_IF_ERROR(ParseTarget(target, &host, &port));
  std::shared_ptr<ClientRuntimeImpl> client = RuntimeFor(runtime, 0, DefaultPeerTimeoutMs());
  caf::actor_system& system = client->system();
  std::string cluster_json;
  AF_RETURN_IF_ERROR(ResetOne(system, host, port, target, containers, timeout_ms, &cluster_json));
  if (cluster_json.empty()) return Status::OK();
  AF_ASSIGN_OR_RETURN(ClusterSpec cluster, ClusterSpec::FromJson(cluster_json));
  for (const TaskId& task : cluster.AllTasks()) {
    auto address = cluster.Address(task);
    if (!address.ok()) return address.status();
    if (address->host == host && address->port == port) continue;
    std::string ignored;
    AF_RETURN_IF_ERROR(ResetOne(system, address->host, address->port, task.ToString(), containers,
                                timeout_ms, &ignored));
  }
  return Status::OK();
}

}  // namespace actorflow
