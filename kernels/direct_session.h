// DirectSession: a Session on one CPU device with no actors: the oracle the actor
// runtime is checked against (target "direct" in actors/cluster/session_factory.h).
//
// Per Run: the (feeds, fetches, targets) signature selects a cached plan (pruned
// node set + kernels), and the Executor runs it. Variables live in the session's
// ResourceManager and keep their values across runs.
#ifndef ACTORFLOW_KERNELS_DIRECT_SESSION_H_
#define ACTORFLOW_KERNELS_DIRECT_SESSION_H_

#include <memory>

#include "graph/graph.h"
#include "graph/status.h"
#include "kernels/session.h"

namespace actorflow {

// Precondition: `graph` outlives the session. Errors: InvalidArgument for no graph or
// a negative default_step_timeout_in_ms. SessionOptions.target is not looked at (the
// factory in actors/cluster/session_factory.h picks this session for "direct").
StatusOr<std::unique_ptr<Session>> NewDirectSession(
    const Graph* graph, const SessionOptions& options = SessionOptions());

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_DIRECT_SESSION_H_
