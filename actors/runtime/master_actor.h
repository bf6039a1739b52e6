// The master actor of a session: it turns a client's steps into device steps. Its
// protocol (messages, replies, contracts) is documented at MasterActor in
// actors/protocol/master_protocol.h.
//
// Invariants: every partition the master registered with a device is listed in one
// of its plans until the master deregisters it (a plan dropped because its device
// went down needs no deregistration: the device is gone). Step and partition ids
// come from actors/runtime/step_ids.h, so they are unique on every device the master shares
// with other masters. The master monitors every device actor it uses.
//
// Thread safety: an actor; its config is copied in at spawn.
#ifndef ACTORFLOW_ACTORS_RUNTIME_MASTER_ACTOR_H_
#define ACTORFLOW_ACTORS_RUNTIME_MASTER_ACTOR_H_

#include <memory>
#include <string>
#include <vector>

#include "actors/transport/connect.h"
#include "actors/protocol/master_protocol.h"
#include "graph/graph.h"
#include "placement/cluster_spec.h"
#include "placement/placer.h"

namespace actorflow {

struct MasterConfig {
  const Graph* graph = nullptr;  // outlives the master (or is held by owned_graph)
  std::shared_ptr<const Graph> owned_graph;
  // The devices of the master's own task, parallel lists.
  std::vector<DeviceInfo> devices;
  std::vector<DeviceActor> device_actors;
  std::string default_device;
  bool allow_soft_placement = false;
  bool log_device_placement = false;
  // Cluster mode (null: one task): the other tasks, reached through front actors.
  std::shared_ptr<const ClusterSpec> cluster;
  std::string local_task;  // "/job:worker/replica:0/task:0"
  // When set, asked (connect_atom) for the other tasks' fronts instead of a network
  // connector per task: the directory of a cluster whose tasks share one actor system
  // (a simulated cluster, actors/sim/task_directory.h).
  ConnectorActor task_directory;
  // How long to keep trying to reach a task when the step itself has no deadline.
  int64_t connect_timeout_ms = 30000;
  // How long close waits for each device to confirm a deregistration.
  int64_t close_timeout_ms = 10000;
  // A task whose front does not answer a ping within this long, while a step uses
  // it, is declared down (0: only a closed connection says so). Pings go every
  // quarter of it, and only while steps are in flight.
  int64_t heartbeat_timeout_ms = 2000;
};

MasterActor SpawnMasterActor(caf::actor_system& system, MasterConfig config);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_RUNTIME_MASTER_ACTOR_H_
