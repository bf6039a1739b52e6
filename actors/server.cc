#include "actors/server.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <thread>

#include <caf/io/all.hpp>

#include "actors/cluster_transport.h"
#include "actors/connect.h"
#include "actors/device_actor.h"
#include "actors/device_supervisor.h"
#include "actors/master_actor.h"
#include "actors/messages.h"
#include "actors/parameter_shard.h"
#include "actors/queue_actor.h"
#include "actors/shard_messages.h"
#include "actors/spinning_scheduler.h"
#include "graph/graph_json.h"

namespace actorflow {
namespace {

struct FrontState {
  std::string task_name;
  std::shared_ptr<TaskServices> services;
  std::vector<DevicePeer> devices;
  std::vector<std::shared_ptr<ResourceManager>> resources;  // parallel to devices
  // Respawns failed devices (shared with the Server, which stops them).
  std::shared_ptr<DeviceRoster> roster;
  // Shared with the Server object, which may replace it (LocalCluster) before use.
  std::shared_ptr<std::mutex> cluster_mu;
  std::shared_ptr<std::shared_ptr<const ClusterSpec>> cluster;
  std::map<uint64_t, MasterActor> sessions;
  uint64_t next_session = 1;
  int64_t heartbeat_timeout_ms = 2000;  // for the masters' MasterConfig
  RequestLimits limits;
  const char* name = "actorflow_front";
};

using FrontSelf = FrontActor::stateful_pointer<FrontState>;

// Closes session `id`: see close_atom at FrontActor (actors/front_protocol.h).
caf::result<Status> CloseSession(FrontSelf self, uint64_t id) {
  auto it = self->state.sessions.find(id);
  if (it == self->state.sessions.end()) return Status::OK();
  MasterActor master = std::move(it->second);
  self->state.sessions.erase(it);
  auto promise = self->make_response_promise<Status>();
  // The master answers once every device dropped the session's partitions (or its
  // own close deadline passed); it ends after that either way.
  self->request(master, caf::infinite, close_atom::value)
      .then(
          [self, promise, master](Status& status) mutable {
            self->send_exit(master, caf::exit_reason::user_shutdown);
            promise.deliver(status);
          },
          [self, promise, master](caf::error& e) mutable {
            self->send_exit(master, caf::exit_reason::user_shutdown);
            promise.deliver(Internal("the master of a closed session failed: " +
                                     caf::to_string(e)));
          });
  return promise;
}

// A device actor ended: unless the server is stopping, a new one takes its place
// (actors/device_supervisor.h), and the task's devices and open sessions learn of it.
void ReplaceFailedDevice(FrontSelf self, const caf::down_msg& down) {
  FrontState& st = self->state;
  if (!st.roster) return;
  auto fresh = RestartFailedDevice(self->system(), *st.roster, down.source,
                                   self->system().render(down.reason));
  if (!fresh) return;
  self->monitor(fresh->actor);
  for (DevicePeer& d : st.devices) {
    if (d.name == fresh->name) d.actor = fresh->actor;
  }
  for (const DevicePeer& d : st.devices) self->send(d.actor, peers_atom::value, st.devices);
  for (const auto& [id, master] : st.sessions) {
    self->send(master, device_restarted_atom::value, *fresh);
  }
}

FrontActor::behavior_type FrontBehavior(FrontSelf self, FrontState init) {
  self->state = std::move(init);
  for (const DevicePeer& d : self->state.devices) self->monitor(d.actor);
  self->set_down_handler([self](caf::down_msg& down) { ReplaceFailedDevice(self, down); });
  return {
      [self](ping_atom) -> std::string { return "actorflow server " + self->state.task_name; },
      [self](devices_atom) -> std::vector<DevicePeer> { return self->state.devices; },
      [self](open_atom, const OpenSessionRequest& req) -> OpenSessionResult {
        FrontState& st = self->state;
        OpenSessionResult result;
        auto graph = GraphFromJson(req.graph_json);
        if (!graph.ok()) {
          result.status = graph.status();
          return result;
        }
        result.status = CheckGraphNodes((*graph)->num_nodes(), st.limits);
        if (!result.status.ok()) return result;
        MasterConfig mc;
        mc.owned_graph = std::shared_ptr<const Graph>(std::move(graph).value());
        for (const DevicePeer& d : st.devices) {
          mc.devices.push_back(DeviceInfo{d.name, d.type});
          mc.device_actors.push_back(d.actor);
        }
        mc.default_device = st.devices.front().name;
        mc.allow_soft_placement = req.allow_soft_placement;
        mc.log_device_placement = req.log_device_placement;
        {
          std::lock_guard<std::mutex> lock(*st.cluster_mu);
          mc.cluster = *st.cluster;
        }
        mc.local_task = st.task_name;
        mc.heartbeat_timeout_ms = st.heartbeat_timeout_ms;
        uint64_t id = st.next_session++;
        st.sessions[id] = SpawnMasterActor(self->system(), std::move(mc));
        result.session_id = id;
        return result;
      },
      [self](remote_step_atom, RemoteStep& step) -> caf::result<RemoteStepResult> {
        auto it = self->state.sessions.find(step.session_id);
        if (it == self->state.sessions.end()) {
          RemoteStepResult r;
          r.status = FailedPrecondition("session " + std::to_string(step.session_id) +
                                        " is not open on " + self->state.task_name);
          return r;
        }
        for (size_t i = 0; i < step.feed_names.size() && i < step.feed_values.size(); ++i) {
          const Tensor& value = step.feed_values[i];
          Status fits = CheckFedTensorBytes(
              step.feed_names[i],
              value.IsInitialized() ? static_cast<int64_t>(value.TotalBytes()) : 0,
              self->state.limits);
          if (!fits.ok()) {
            RemoteStepResult r;
            r.status = std::move(fits);
            return r;
          }
        }
        auto req = std::make_shared<StepRequest>();
        for (size_t i = 0; i < step.feed_names.size() && i < step.feed_values.size(); ++i) {
          req->feeds.emplace_back(step.feed_names[i], std::move(step.feed_values[i]));
        }
        req->fetches = std::move(step.fetches);
        req->targets = std::move(step.targets);
        req->options.timeout_in_ms = step.timeout_in_ms;
        if (step.trace) req->options.trace_level = RunOptions::TraceLevel::kFullTrace;
        req->want_metadata = step.want_metadata;
        auto rp = self->make_response_promise<RemoteStepResult>();
        req->promise = caf::response_promise(rp);
        self->send(it->second, step_atom::value, std::move(req));
        return rp;
      },
      [self](close_atom, uint64_t session_id) -> caf::result<Status> {
        return CloseSession(self, session_id);
      },
      [self](reset_atom, const std::vector<std::string>& containers) -> std::string {
        for (auto& r : self->state.resources) r->Clear(containers);
        ClearQueues(*self->state.services, containers);
        ClearShards(*self->state.services, containers);
        std::lock_guard<std::mutex> lock(*self->state.cluster_mu);
        return *self->state.cluster ? (*self->state.cluster)->ToJson() : std::string();
      },
      [self](front_stats_atom) -> FrontStats {
        FrontStats stats;
        stats.task = self->state.task_name;
        stats.sessions = static_cast<int64_t>(self->state.sessions.size());
        stats.devices = static_cast<int64_t>(self->state.devices.size());
        return stats;
      },
      [self](get_shard_atom, const std::string& name,
             const ShardConfig& config) -> caf::result<Status, ShardActor> {
        return GetOrCreateShard(self, *self->state.services, name, config);
      },
  };
}

class ServerImpl : public Server {
 public:
  ServerImpl() = default;
  ~ServerImpl() override { Stop(); }

  Status Init(const ServerOptions& options) {
    auto address = options.cluster.Address(options.task);
    if (!address.ok()) return address.status();
    host_ = address->host;
    const uint16_t want_port =
        options.port_override >= 0 ? static_cast<uint16_t>(options.port_override) : address->port;
    task_name_ = ClusterSpec::TaskName(options.task);
    ConfigureClusterTransport(cfg_, options.transport);
    // One scheduler thread more than devices (and no fewer than the cores): a device
    // runs its kernels on a scheduler thread until they end, so with every device busy
    // a thread is still free for the front's heartbeat answers, the masters and the
    // parameter shards.
    const size_t devices = static_cast<size_t>(std::max(1, options.cpus));
    const size_t threads = std::max<size_t>(std::thread::hardware_concurrency(), devices + 1);
    ConfigureScheduler(cfg_, SchedulerOptions{threads, options.scheduler_spin_us});
    cfg_.set("logger.console", caf::atom("none"));
    system_ = std::make_unique<caf::actor_system>(cfg_);

    FrontState init;
    init.task_name = task_name_;
    init.cluster_mu = cluster_mu_;
    init.cluster = cluster_;
    *cluster_ = std::make_shared<const ClusterSpec>(options.cluster);
    init.services = std::make_shared<TaskServices>();
    init.services->task_name = task_name_;
    services_ = init.services;
    roster_ = std::make_shared<DeviceRoster>();
    roster_->task_name = task_name_;
    roster_->max_restarts = options.max_device_restarts;
    roster_->window = std::chrono::milliseconds(options.device_restart_window_ms);
    roster_->log = options.log;
    roster_->on_failure = options.on_failure;
    auto file_access = std::make_shared<const FileAccessPolicy>(options.file_access);
    for (int i = 0; i < std::max(1, options.cpus); ++i) {
      DeviceConfig dc;
      dc.name = task_name_ + "/device:CPU:" + std::to_string(i);
      dc.type = "CPU";
      dc.resources = std::make_shared<ResourceManager>();
      dc.services = init.services;
      dc.file_access = file_access;
      roster_->configs.push_back(dc);
      init.resources.push_back(dc.resources);
    }
    SpawnRosterDevices(*system_, *roster_);
    init.devices = roster_->devices;
    for (const DevicePeer& d : init.devices) devices_.push_back(d.actor);
    init.roster = roster_;
    std::vector<DevicePeer> peers = init.devices;
    for (const DeviceActor& d : devices_) caf::anon_send(d, peers_atom::value, peers);
    init.heartbeat_timeout_ms = options.heartbeat_timeout_ms;
    init.limits = options.requests;
    // Scheduled like every other actor (the thread count above keeps one free for it):
    // a detached front would cost a thread wake-up on every remote step.
    front_ = system_->spawn(FrontBehavior, std::move(init));
    // SO_REUSEADDR: a restarted task binds its port again at once; a port with a live
    // listener still fails, so "port in use" is still reported.
    auto published = PublishOnTransport(front_, want_port, host_);
    if (!published) {
      return Unavailable("cannot listen on " + host_ + ":" + std::to_string(want_port) + " for " +
                         task_name_ + " (port in use?): " + system_->render(published.error()));
    }
    port_ = *published;
    return Status::OK();
  }

  uint16_t port() const override { return port_; }
  std::string host() const override { return host_; }

  Status failure() const override {
    if (!roster_) return Status::OK();
    std::lock_guard<std::mutex> lock(roster_->mu);
    return roster_->failure;
  }

  void SetCluster(const ClusterSpec& cluster) override {
    std::lock_guard<std::mutex> lock(*cluster_mu_);
    *cluster_ = std::make_shared<const ClusterSpec>(cluster);
  }

  void Stop() override {
    if (!system_) return;
    // Over TLS the acceptor closes with the system (CAF 0.17's OpenSSL unpublish
    // header does not compile).
    if (port_ != 0 && !system_->has_openssl_manager()) system_->middleman().unpublish(front_, port_);
    caf::anon_send_exit(front_, caf::exit_reason::user_shutdown);
    // The roster's devices, restarted ones included; none is restarted after this.
    if (roster_) devices_ = StopRoster(*roster_);
    for (const DeviceActor& d : devices_) caf::anon_send_exit(d, caf::exit_reason::user_shutdown);
    if (services_) ClearShards(*services_, {});
    front_ = nullptr;
    devices_.clear();
    ShutDownClusterSystem(system_);
  }

 private:
  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> system_;
  FrontActor front_;
  std::vector<DeviceActor> devices_;
  std::shared_ptr<DeviceRoster> roster_;
  std::shared_ptr<TaskServices> services_;
  std::shared_ptr<std::mutex> cluster_mu_ = std::make_shared<std::mutex>();
  std::shared_ptr<std::shared_ptr<const ClusterSpec>> cluster_ =
      std::make_shared<std::shared_ptr<const ClusterSpec>>();
  std::string host_;
  std::string task_name_;
  uint16_t port_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options) {
  auto server = std::make_unique<ServerImpl>();
  AF_RETURN_IF_ERROR(server->Init(options));
  return std::unique_ptr<Server>(std::move(server));
}

}  // namespace actorflow
