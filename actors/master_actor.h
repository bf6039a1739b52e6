// The master actor of a task: it turns a client's step into device steps. Per
// (feeds, fetches, targets) signature it prunes the graph, places the nodes,
// partitions them per device with Send/Recv pairs and registers each partition once
// with its device actor; then each step is one run message per involved device, the
// fetches gathered from their answers.
//
// Protocol: (step_atom, shared_ptr<StepRequest>) — answered through the request's
// StepReply (the client thread waits on it; no scoped_actor round trip).
// Errors and deadlines: the first failing device's Status (naming node and device)
// ends the step; a missed RunOptions.timeout_in_ms is DeadlineExceeded. Either way
// every device of the step gets an abort, so no Recv is left waiting and the next
// step on the same session runs normally.
#ifndef ACTORFLOW_ACTORS_MASTER_ACTOR_H_
#define ACTORFLOW_ACTORS_MASTER_ACTOR_H_

#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/actor.hpp>

#include "graph/graph.h"
#include "placement/placer.h"

namespace actorflow {

struct MasterConfig {
  const Graph* graph = nullptr;  // outlives the master
  std::vector<DeviceInfo> devices;
  std::vector<caf::actor> device_actors;  // parallel to devices
  std::string default_device;
  bool allow_soft_placement = false;
  bool log_device_placement = false;
};

caf::actor SpawnMasterActor(caf::actor_system& system, MasterConfig config);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_MASTER_ACTOR_H_
