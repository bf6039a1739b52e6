#include "actors/cluster/task_actors.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

#include "actors/cluster/graph_handoff.h"
#include "actors/runtime/device_actor.h"
#include "actors/runtime/device_supervisor.h"
#include "actors/runtime/master_actor.h"
#include "actors/protocol/messages.h"
#include "actors/ps/parameter_shard.h"
#include "actors/runtime/queue_actor.h"
#include "actors/protocol/shard_messages.h"
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
  ConnectorActor task_directory;  // for the masters' MasterConfig
  uint16_t step_port = 0;         // told to every session opened (0: no step channel)
  const char* name = "actorflow_front";
};

using FrontSelf = FrontActor::stateful_pointer<FrontState>;

// Closes session `id`: see close_atom at FrontActor (actors/protocol/front_protocol.h).
caf::result<Status> CloseSession(FrontSelf self, uint64_t id) {
  auto it = self->state.sessions.find(id);
  if (it == self->state.sessions.end()) return Status::OK();
  MasterActor master = std::move(it->second);
  self->state.sessions.erase(it);
  {
    std::lock_guard<std::mutex> lock(self->state.services->mu);
    self->state.services->masters.erase(id);
  }
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
// (actors/runtime/device_supervisor.h), and the task's devices and open sessions learn of it.
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

// The graph a session request brings: left in this process under its ticket
// (actors/cluster/graph_handoff.h), or written as JSON.
StatusOr<std::shared_ptr<const Graph>> RequestedGraph(const OpenSessionRequest& req) {
  if (req.graph_ticket != 0) {
    std::shared_ptr<const Graph> graph = graph_handoff::Take(req.graph_ticket);
    if (graph == nullptr) {
      return InvalidArgument("no graph was left in this process under ticket " +
                             std::to_string(req.graph_ticket) +
                             " (a ticket is only for a task of the client's own process)");
    }
    return graph;
  }
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, GraphFromJson(req.graph_json));
  return std::shared_ptr<const Graph>(std::move(graph));
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
        auto graph = RequestedGraph(req);
        if (!graph.ok()) {
          result.status = graph.status();
          return result;
        }
        result.status = CheckGraphNodes((*graph)->num_nodes(), st.limits);
        if (!result.status.ok()) return result;
        MasterConfig mc;
        mc.owned_graph = std::move(graph).value();
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
        mc.task_directory = st.task_directory;
        uint64_t id = st.next_session++;
        MasterActor master = SpawnMasterActor(self->system(), std::move(mc));
        {
          std::lock_guard<std::mutex> lock(st.services->mu);
          st.services->masters[id] = caf::actor_cast<caf::weak_actor_ptr>(master);
        }
        st.sessions[id] = std::move(master);
        result.session_id = id;
        result.step_port = st.step_port;
        return result;
      },
      [self](extend_atom, uint64_t id, const OpenSessionRequest& req) -> caf::result<Status> {
        auto it = self->state.sessions.find(id);
        if (it == self->state.sessions.end()) {
          return FailedPrecondition("session " + std::to_string(id) + " is not open on " +
                                    self->state.task_name);
        }
        auto graph = RequestedGraph(req);
        if (!graph.ok()) return graph.status();
        Status fits = CheckGraphNodes((*graph)->num_nodes(), self->state.limits);
        if (!fits.ok()) return fits;
        auto answer = self->make_response_promise<Status>();
        const std::string task = self->state.task_name;
        self->request(it->second, caf::infinite, extend_atom::value,
                      std::move(graph).value())
            .then([answer](Status& s) mutable { answer.deliver(std::move(s)); },
                  [answer, id, task](caf::error& e) mutable {
                    answer.deliver(Unavailable("session " + std::to_string(id) + " on " + task +
                                               ": its master did not answer: " +
                                               caf::to_string(e)));
                  });
        return answer;
      },
      [self](remote_step_atom, RemoteStep& step) -> caf::result<RemoteStepResult> {
        auto it = self->state.sessions.find(step.session_id);
        if (it == self->state.sessions.end()) {
          RemoteStepResult r;
          r.status = FailedPrecondition("session " + std::to_string(step.session_id) +
                                        " is not open on " + self->state.task_name);
          return r;
        }
        auto req = std::make_shared<StepRequest>();
        Status taken = TakeRemoteStep(std::move(step), self->state.limits, req.get());
        if (!taken.ok()) {
          RemoteStepResult r;
          r.status = std::move(taken);
          return r;
        }
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

}  // namespace

Status TakeRemoteStep(RemoteStep step, const RequestLimits& limits, StepRequest* request) {
  const size_t feeds = std::min(step.feed_names.size(), step.feed_values.size());
  for (size_t i = 0; i < feeds; ++i) {
    const Tensor& value = step.feed_values[i];
    AF_RETURN_IF_ERROR(CheckFedTensorBytes(
        step.feed_names[i], value.IsInitialized() ? static_cast<int64_t>(value.TotalBytes()) : 0,
        limits));
  }
  for (size_t i = 0; i < feeds; ++i) {
    request->feeds.emplace_back(std::move(step.feed_names[i]), std::move(step.feed_values[i]));
  }
  request->fetches = std::move(step.fetches);
  request->targets = std::move(step.targets);
  request->options.timeout_in_ms = step.timeout_in_ms;
  if (step.trace) request->options.trace_level = RunOptions::TraceLevel::kFullTrace;
  request->want_metadata = step.want_metadata;
  return Status::OK();
}

void TaskActors::SetCluster(const ClusterSpec& spec) {
  SetCluster(std::make_shared<const ClusterSpec>(spec));
}

void TaskActors::SetCluster(std::shared_ptr<const ClusterSpec> spec) {
  std::lock_guard<std::mutex> lock(*cluster_mu);
  *cluster = std::move(spec);
}

TaskActors SpawnTaskActors(caf::actor_system& system, const ServerOptions& options,
                           ConnectorActor task_directory, TaskBulkChannel bulk) {
  TaskActors task;
  task.task_name = ClusterSpec::TaskName(options.task);
  if (options.shared_cluster != nullptr) {
    task.SetCluster(options.shared_cluster);
  } else {
    task.SetCluster(options.cluster);
  }
  FrontState init;
  init.task_name = task.task_name;
  init.cluster_mu = task.cluster_mu;
  init.cluster = task.cluster;
  init.services = std::make_shared<TaskServices>();
  init.services->task_name = task.task_name;
  init.services->bulk_sender = bulk.sender;
  task.services = init.services;
  task.roster = std::make_shared<DeviceRoster>();
  DeviceRoster& roster = *task.roster;
  roster.task_name = task.task_name;
  roster.max_restarts = options.max_device_restarts;
  roster.window = std::chrono::milliseconds(options.device_restart_window_ms);
  roster.log = options.log;
  roster.on_failure = options.on_failure;
  auto file_access = std::make_shared<const FileAccessPolicy>(options.file_access);
  for (int i = 0; i < std::max(1, options.cpus); ++i) {
    DeviceConfig dc;
    dc.name = task.task_name + "/device:CPU:" + std::to_string(i);
    dc.type = "CPU";
    dc.resources = std::make_shared<ResourceManager>();
    dc.services = init.services;
    dc.file_access = file_access;
    dc.bulk_sender = bulk.sender;
    dc.bulk_min_bytes = bulk.sender ? bulk.min_bytes : 0;
    roster.configs.push_back(dc);
    init.resources.push_back(dc.resources);
  }
  SpawnRosterDevices(system, roster);
  init.devices = roster.devices;
  if (bulk.sender) {
    for (DevicePeer& d : init.devices) d.bulk_endpoint = bulk.endpoint;
  }
  for (const DevicePeer& d : init.devices) task.devices.push_back(d.actor);
  init.roster = task.roster;
  const std::vector<DevicePeer> peers = init.devices;
  for (const DeviceActor& d : task.devices) caf::anon_send(d, peers_atom::value, peers);
  init.heartbeat_timeout_ms = options.heartbeat_timeout_ms;
  init.limits = options.requests;
  init.task_directory = std::move(task_directory);
  init.step_port = bulk.step_port;
  // Scheduled like every other actor (a Server keeps a scheduler thread free for it):
  // a detached front would cost a thread wake-up on every remote step.
  task.front = system.spawn(FrontBehavior, std::move(init));
  return task;
}

void StopTaskActors(TaskActors& task) {
  if (task.front) caf::anon_send_exit(task.front, caf::exit_reason::user_shutdown);
  if (task.roster) task.devices = StopRoster(*task.roster);
  for (const DeviceActor& d : task.devices) caf::anon_send_exit(d, caf::exit_reason::user_shutdown);
  if (task.services) ClearShards(*task.services, {});
  task.front = nullptr;
  task.devices.clear();
}

}  // namespace actorflow
