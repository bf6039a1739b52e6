// The actors of one task of a cluster, spawned into an actor system that someone
// else owns: the task's devices (under their supervisor roster), its front (sessions,
// remote steps, parameter shards; actors/protocol/front_protocol.h) and its services (queues,
// shards). A Server (actors/cluster/server.h) spawns them into its own system and publishes
// the front over the network; a simulated cluster spawns every task's actors into one
// system under a deterministic scheduler. Includes CAF: actors/*.cc and tests only.
#ifndef ACTORFLOW_ACTORS_CLUSTER_TASK_ACTORS_H_
#define ACTORFLOW_ACTORS_CLUSTER_TASK_ACTORS_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actors/transport/bulk_channel.h"
#include "actors/transport/connect.h"
#include "actors/protocol/device_protocol.h"
#include "actors/protocol/front_protocol.h"
#include "actors/cluster/server.h"

namespace actorflow {

struct DeviceRoster;
struct TaskServices;

struct TaskActors {
  std::string task_name;  // "/job:J/replica:0/task:I"
  FrontActor front;
  std::vector<DeviceActor> devices;  // as first spawned; the roster knows restarts
  std::shared_ptr<DeviceRoster> roster;
  std::shared_ptr<TaskServices> services;
  // The cluster the front's masters see; SetCluster may replace it (LocalCluster
  // learns its ports only after every task listens).
  std::shared_ptr<std::mutex> cluster_mu = std::make_shared<std::mutex>();
  std::shared_ptr<std::shared_ptr<const ClusterSpec>> cluster =
      std::make_shared<std::shared_ptr<const ClusterSpec>>();

  void SetCluster(const ClusterSpec& spec);
  // The same without a copy: `spec` may be shared with other tasks' actors.
  void SetCluster(std::shared_ptr<const ClusterSpec> spec);
};

// Spawns `options.task`'s devices (options.cpus CPUs, supervised as
// options.max_device_restarts / device_restart_window_ms say) and its front into
// `system`. Uses the options' cluster, task, cpus, heartbeat timeout, request limits,
// file access, restart limits, log and on_failure; not the transport or the port.
// `task_directory`, when set, is where the task's masters find other tasks' fronts
// (MasterConfig::task_directory); otherwise they connect over the network.
// `bulk`, when it has a sender, carries this task's large Sends to other processes
// and its endpoint is advertised with the task's devices (actors/transport/bulk_channel.h).
struct TaskBulkChannel {
  std::shared_ptr<BulkSender> sender;  // null: every tensor goes over CAF
  std::string endpoint;                // this process's receiver, "host:port"
  int64_t min_bytes = 0;               // smaller tensors stay on CAF
  uint16_t step_port = 0;  // the task's step channel (0: none), told to remote sessions
};
TaskActors SpawnTaskActors(caf::actor_system& system, const ServerOptions& options,
                           ConnectorActor task_directory = ConnectorActor(),
                           TaskBulkChannel bulk = TaskBulkChannel());

// Fills *request (feeds, fetches, targets, deadline, trace, metadata) from a remote
// client's step, as the task's master takes it; ResourceExhausted naming the feed
// and --max-tensor-bytes when a fed tensor is over `limits` (*request then has no
// feeds). Shared by the front and the step channel (actors/cluster/step_channel.h).
Status TakeRemoteStep(RemoteStep step, const RequestLimits& limits, StepRequest* request);

// Ends the task's front, devices (restarted ones included; none is restarted after
// this) and parameter shards. Asynchronous: the actors end on their own threads.
void StopTaskActors(TaskActors& task);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_CLUSTER_TASK_ACTORS_H_
