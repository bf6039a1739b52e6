#include "actors/remote_session.h"

#include <caf/io/all.hpp>

#include "actors/cluster_transport.h"
#include "actors/connect.h"
#include "actors/messages.h"
#include "actors/spinning_scheduler.h"
#include "graph/graph_json.h"
#include "placement/cluster_spec.h"

namespace actorflow {
namespace {

void ConfigureClient(caf::actor_system_config& cfg, int64_t spin_us) {
  ConfigureClusterTransport(cfg);
  ConfigureScheduler(cfg, SchedulerOptions{0, spin_us});
  cfg.set("logger.console", caf::atom("none"));
}

class RemoteSession : public Session {
 public:
  RemoteSession(const Graph* graph, const SessionOptions& options)
      : graph_(graph), options_(options) {
    ConfigureClient(cfg_, options.scheduler_spin_us);
    system_ = std::make_unique<caf::actor_system>(cfg_);
  }

  ~RemoteSession() override {
    Close();
    front_ = nullptr;
    ShutDownClusterSystem(system_);
  }

  Status Connect(int64_t timeout_ms) {
    connect_timeout_ms_ = timeout_ms;
    std::string host;
    uint16_t port = 0;
    AF_RETURN_IF_ERROR(ParseTarget(options_.target, &host, &port));
    AF_ASSIGN_OR_RETURN(front_, ConnectToServer(*system_, host, port,
                                                std::chrono::milliseconds(timeout_ms),
                                                options_.target));
    return OpenSession(timeout_ms);
  }

  Status Run(const RunOptions& run_options, const FeedList& feeds,
             const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs, RunMetadata* metadata) override {
    if (closed_) return FailedPrecondition("Run on a closed session");
    if (graph_->num_nodes() != sent_nodes_) AF_RETURN_IF_ERROR(OpenSession(connect_timeout_ms_));
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
    // The master enforces the step's deadline; the margin covers the network.
    caf::duration wait = timeout_ms > 0
                             ? caf::duration{std::chrono::milliseconds(timeout_ms + 5000)}
                             : caf::duration{caf::infinite};
    caf::scoped_actor self{*system_};
    Status status = Internal("no answer from " + options_.target);
    RemoteStepResult r = RunWatched(self, std::move(step), wait);
    status = r.status;
    if (status.ok() && outputs != nullptr) *outputs = std::move(r.outputs);
    if (metadata != nullptr) {
      metadata->executed_nodes = std::move(r.executed_nodes);
      metadata->step_stats = std::move(r.step_stats);
      metadata->transfers = std::move(r.transfers);
      metadata->transfer_stats = std::move(r.transfer_stats);
      metadata->clock_offsets = std::move(r.clock_offsets);
    }
    return status;
  }

  // Sends the step and waits for its result while a watcher pings the master's task
  // every quarter of the heartbeat timeout: a task that stops answering ends the
  // wait with Unavailable (see SessionOptions::heartbeat_timeout_in_ms).
  RemoteStepResult RunWatched(caf::scoped_actor& self, RemoteStep step, caf::duration wait) {
    const std::string target = options_.target;
    const int64_t heartbeat_ms = options_.heartbeat_timeout_in_ms;
    caf::actor client = caf::actor_cast<caf::actor>(self);
    FrontActor front = front_;
    auto watcher = system_->spawn([=](caf::event_based_actor* w) -> caf::behavior {
      auto finish = [w, client](RemoteStepResult r) {
        w->send(client, std::move(r));
        w->quit();
      };
      w->request(front, wait, remote_step_atom::value, std::move(step))
          .then([finish](RemoteStepResult& r) { finish(std::move(r)); },
                [finish, target](caf::error& e) {
                  RemoteStepResult r;
                  r.status = e == caf::sec::request_timeout
                                 ? DeadlineExceeded("no answer from " + target +
                                                    " within the step's deadline")
                                 : Unavailable("lost the master at " + target + ": " +
                                               caf::to_string(e));
                  finish(std::move(r));
                });
      if (heartbeat_ms <= 0) return {[](heartbeat_atom) {}};
      const auto interval = std::chrono::milliseconds(std::max<int64_t>(heartbeat_ms / 4, 10));
      w->delayed_send(w, interval, heartbeat_atom::value);
      return {
          [=](heartbeat_atom) {
            w->request(front, std::chrono::milliseconds(heartbeat_ms), ping_atom::value)
                .then([](std::string&) {},
                      [finish, target, heartbeat_ms](caf::error& e) {
                        RemoteStepResult r;
                        r.status = Unavailable(
                            target + " is down: " +
                            (e == caf::sec::request_timeout
                                 ? "no heartbeat answer within " + std::to_string(heartbeat_ms) + " ms"
                                 : caf::to_string(e)));
                        finish(std::move(r));
                      });
            w->delayed_send(w, interval, heartbeat_atom::value);
          },
      };
    });
    RemoteStepResult result;
    result.status = Internal("no answer from " + target);
    self->receive([&](RemoteStepResult& r) { result = std::move(r); });
    caf::anon_send_exit(watcher, caf::exit_reason::user_shutdown);
    return result;
  }

  // Returns once the server has freed the session (its master and every partition
  // on every device), so a long-lived server holds nothing of a closed session.
  // Bounded by the connect timeout; a server that is gone answers at once (CAF
  // bounces a request to a dead peer), and its resources went with it.
  Status Close() override {
    if (closed_.exchange(true)) return Status::OK();
    if (!front_ || session_id_ == 0) return Status::OK();
    caf::scoped_actor self{*system_};
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
  Status OpenSession(int64_t timeout_ms) {
    if (front_ && session_id_ != 0) caf::anon_send(front_, close_atom::value, session_id_);
    OpenSessionRequest req;
    req.graph_json = GraphToJson(*graph_);
    req.allow_soft_placement = options_.allow_soft_placement;
    req.log_device_placement = options_.log_device_placement;
    const int nodes = graph_->num_nodes();
    caf::scoped_actor self{*system_};
    Status status = Internal("no answer");
    self->request(front_, std::chrono::milliseconds(timeout_ms), open_atom::value, std::move(req))
        .receive(
            [&](OpenSessionResult& r) {
              status = r.status;
              session_id_ = r.session_id;
            },
            [&](caf::error& e) {
              status = Unavailable("cannot open a session on " + options_.target + ": " +
                                   system_->render(e));
            });
    if (status.ok()) sent_nodes_ = nodes;
    return status;
  }

  const Graph* graph_;
  SessionOptions options_;
  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> system_;
  FrontActor front_;
  uint64_t session_id_ = 0;
  int sent_nodes_ = -1;
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

Status ResetCluster(const std::string& target, const std::vector<std::string>& containers,
                    int64_t timeout_ms) {
  std::string host;
  uint16_t port = 0;
  AF_RETURN_IF_ERROR(ParseTarget(target, &host, &port));
  caf::actor_system_config cfg;
  ConfigureClient(cfg, 0);  // one-off requests: never poll
  caf::actor_system system{cfg};
  auto reset_one = [&](const std::string& h, uint16_t p, const std::string& who,
                       std::string* cluster_json) -> Status {
    AF_ASSIGN_OR_RETURN(FrontActor front, ConnectToServer(system, h, p,
                                                          std::chrono::milliseconds(timeout_ms), who));
    caf::scoped_actor self{system};
    Status status;
    self->request(front, std::chrono::milliseconds(timeout_ms), reset_atom::value, containers)
        .receive([&](std::string& json) { *cluster_json = std::move(json); },
                 [&](caf::error& e) { status = Unavailable(who + ": reset failed: " + system.render(e)); });
    return status;
  };
  std::string cluster_json;
  AF_RETURN_IF_ERROR(reset_one(host, port, target, &cluster_json));
  if (cluster_json.empty()) return Status::OK();
  AF_ASSIGN_OR_RETURN(ClusterSpec cluster, ClusterSpec::FromJson(cluster_json));
  for (const TaskId& task : cluster.AllTasks()) {
    auto address = cluster.Address(task);
    if (!address.ok()) return address.status();
    if (address->host == host && address->port == port) continue;
    std::string ignored;
    AF_RETURN_IF_ERROR(reset_one(address->host, address->port, task.ToString(), &ignored));
  }
  return Status::OK();
}

}  // namespace actorflow
