// The master actor of a session: it turns a client's step into device steps. Per
// (feeds, fetches, targets) signature it prunes the graph, places the nodes,
// partitions them per device with Send/Recv pairs and registers each partition once
// with its device actor; then each step is one run message per involved device, the
// fetches gathered from their answers.
//
// Protocol: (step_atom, shared_ptr<StepRequest>[, bool metadata]) — answered through
// the request's StepReply (an in-process client thread waits on it) or its response
// promise (a remote client, through the front actor). `metadata` (default true):
// whether the client wants RunMetadata (executed nodes; step stats when
// RunOptions.trace_level is kFullTrace). Without it the step builds none: the devices
// record nothing per node and the master sorts, looks up and copies no node names.
// The flag travels beside the request because StepRequest has no field for it.
// Clusters: devices of other tasks are found lazily, through the tasks' front
// actors, the first time a step needs them; connecting retries until the step's
// deadline, then fails with Unavailable naming the task and its address. The master
// monitors every device actor it uses: a device that goes down fails the steps in
// flight on it (Unavailable naming its task), drops the plans that use it, and
// makes the next step that needs its task connect again.
// Errors and deadlines: the first failing device's Status (naming node and device)
// ends the step; a missed RunOptions.timeout_in_ms is DeadlineExceeded. Either way
// every device of the step gets an abort, so no Recv is left waiting.
#ifndef ACTORFLOW_ACTORS_MASTER_ACTOR_H_
#define ACTORFLOW_ACTORS_MASTER_ACTOR_H_

#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/actor.hpp>

#include "graph/graph.h"
#include "placement/cluster_spec.h"
#include "placement/placer.h"

namespace actorflow {

struct MasterConfig {
  const Graph* graph = nullptr;  // outlives the master (or is held by owned_graph)
  std::shared_ptr<const Graph> owned_graph;
  // The devices of the master's own task, parallel lists.
  std::vector<DeviceInfo> devices;
  std::vector<caf::actor> device_actors;
  std::string default_device;
  bool allow_soft_placement = false;
  bool log_device_placement = false;
  // Cluster mode (null: one task): the other tasks, reached through front actors.
  std::shared_ptr<const ClusterSpec> cluster;
  std::string local_task;  // "/job:worker/replica:0/task:0"
  // How long to keep trying to reach a task when the step itself has no deadline.
  int64_t connect_timeout_ms = 30000;
};

caf::actor SpawnMasterActor(caf::actor_system& system, MasterConfig config);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_MASTER_ACTOR_H_
