// Opens a Session for a target (SessionOptions.target), so that drivers, tools and
// training/ never name an implementation:
//   ""  or "local"          the actor runtime in this process (ActorSession)
//   "direct"                DirectSession: one CPU device, no actors (the oracle)
//   "actorflow://host:port" a remote master (cluster support)
// CAF-free header.
#ifndef ACTORFLOW_ACTORS_CLUSTER_SESSION_FACTORY_H_
#define ACTORFLOW_ACTORS_CLUSTER_SESSION_FACTORY_H_

#include <memory>

#include "graph/graph.h"
#include "graph/status.h"
#include "kernels/session.h"

namespace actorflow {

// Precondition: `graph` outlives the session. InvalidArgument for an unknown target
// or a bad timeout (a negative default_step_timeout_in_ms; for a remote target a
// connect_timeout_in_ms <= 0). Every session honours
// SessionOptions.default_step_timeout_in_ms; a remote one also connect_timeout_in_ms.
StatusOr<std::unique_ptr<Session>> NewSession(const Graph* graph, const SessionOptions& options);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_CLUSTER_SESSION_FACTORY_H_
