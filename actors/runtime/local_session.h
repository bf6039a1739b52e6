// The in-process actor session: one task (/job:localhost/replica:0/task:0) with the
// devices SessionOptions.device_count asks for (CPU:0..n-1 as virtual CPU devices;
// GPU:0..m-1 for the GPUs that the GPU runtime (kernels/gpu_runtime.h) finds, all of
// them unless device_count caps them, none in a build without one), a device actor
// per device and a master actor, in an actor system owned by the session. Nodes
// without a requested device default to GPU:0 when there is one (the placer moves
// those without a GPU kernel to CPU:0), else to CPU:0. Fetched tensors always come
// back in host memory. CAF stays out of this header.
#ifndef ACTORFLOW_ACTORS_RUNTIME_LOCAL_SESSION_H_
#define ACTORFLOW_ACTORS_RUNTIME_LOCAL_SESSION_H_

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"
#include "kernels/session.h"

namespace actorflow {

inline constexpr char kLocalTask[] = "/job:localhost/replica:0/task:0";

// Introspection of a device actor, for tests and tools.
struct DeviceStatus {
  std::string device;
  int64_t pending_recvs = 0;
  int64_t inbox_tensors = 0;
  int64_t active_steps = 0;
};

class ActorSession : public Session {
 public:
  // The full names of this session's devices.
  virtual std::vector<std::string> DeviceNames() const = 0;
  // Each node of the whole graph with its device and the reason (requested,
  // colocated with X, soft placement because of Y, default); or the placement error.
  virtual StatusOr<std::string> ExplainPlacement() const = 0;
  // Asks every device actor for its state (waits at most `timeout_ms`).
  virtual StatusOr<std::vector<DeviceStatus>> DeviceStatuses(int64_t timeout_ms = 5000) = 0;
  // Steps that went from this session straight to their device, without the master
  // (later steps of a one-partition plan that want no run metadata), whatever
  // their status.
  virtual int64_t DirectStepCount() const = 0;
};

// Precondition: `graph` outlives the session. Errors: InvalidArgument for a bad
// device_count.
StatusOr<std::unique_ptr<ActorSession>> NewActorSession(const Graph* graph,
                                                        const SessionOptions& options);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_RUNTIME_LOCAL_SESSION_H_
