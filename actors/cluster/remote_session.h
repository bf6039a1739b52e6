// A Session on a remote master: actorflow://host:port. The client talks through a
// client runtime (an actor system with CAF's middleman: its own, or one shared with
// other sessions through SessionOptions::client_runtime), sends the graph once (again
// when nodes were appended since), and runs each step as one request to the server's
// front actor; tensors cross as raw byte blocks. CAF-free header.
#ifndef ACTORFLOW_ACTORS_CLUSTER_REMOTE_SESSION_H_
#define ACTORFLOW_ACTORS_CLUSTER_REMOTE_SESSION_H_

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"
#include "kernels/session.h"

namespace actorflow {

// A runtime for remote sessions and resets to share (SessionOptions::client_runtime):
// its scheduler's idle threads poll for `scheduler_spin_us` before parking, as a
// session's own would. A session given it keeps its scheduler's polling, whatever
// that session's SessionOptions::scheduler_spin_us (which still bounds the session's
// own wait for a step's answer). Only runtimes made here are shared: a session given
// another subclass of ClientRuntime makes its own, as if given none.
std::shared_ptr<ClientRuntime> NewClientRuntime(int64_t scheduler_spin_us = 200);

// Connects to options.target ("actorflow://host:port"), waiting at most
// `connect_timeout_ms` (Unavailable naming the address; FailedPrecondition when the
// port is not an actorflow server). Precondition: `graph` outlives the session.
StatusOr<std::unique_ptr<Session>> NewRemoteSession(const Graph* graph,
                                                    const SessionOptions& options,
                                                    int64_t connect_timeout_ms = 30000);

// Clears the given resource containers (all if empty) on every task of the cluster
// that `target` belongs to: TensorFlow's Session::Reset. Tasks that cannot be reached
// are named in the error.
// `runtime`: talk through it (null: a runtime made for this call).
Status ResetCluster(const std::string& target, const std::vector<std::string>& containers,
                    int64_t timeout_ms = 30000, std::shared_ptr<ClientRuntime> runtime = nullptr);

// ResetCluster for the task at `target` only (a tool that runs one model after
// another on one task of a shared cluster must not clear the others').
Status ResetTask(const std::string& target, const std::vector<std::string>& containers,
                 int64_t timeout_ms = 30000, std::shared_ptr<ClientRuntime> runtime = nullptr);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_CLUSTER_REMOTE_SESSION_H_
