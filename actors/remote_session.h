// A Session on a remote master: actorflow://host:port. The client keeps its own
// actor system with CAF's middleman, sends the graph once (again when nodes were
// appended since), and runs each step as one request to the server's front actor;
// tensors cross as raw byte blocks. CAF-free header.
#ifndef ACTORFLOW_ACTORS_REMOTE_SESSION_H_
#define ACTORFLOW_ACTORS_REMOTE_SESSION_H_

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"
#include "kernels/session.h"

namespace actorflow {

// Connects to options.target ("actorflow://host:port"), waiting at most
// `connect_timeout_ms` (Unavailable naming the address; FailedPrecondition when the
// port is not an actorflow server). Precondition: `graph` outlives the session.
StatusOr<std::unique_ptr<Session>> NewRemoteSession(const Graph* graph,
                                                    const SessionOptions& options,
                                                    int64_t connect_timeout_ms = 30000);

// Clears the given resource containers (all if empty) on every task of the cluster
// that `target` belongs to: TensorFlow's Session::Reset. Tasks that cannot be reached
// are named in the error.
Status ResetCluster(const std::string& target, const std::vector<std::string>& containers,
                    int64_t timeout_ms = 30000);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_REMOTE_SESSION_H_
