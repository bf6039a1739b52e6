// The serving actors' protocol (actors/serving/model_server.h): replica actors that run a
// version's frozen graph, and a version's batcher actor. Local-only payloads (no
// `inspect`, CAF_ALLOW_UNSAFE_MESSAGE_TYPE). Included only by actors/*.cc.
#ifndef ACTORFLOW_ACTORS_SERVING_SERVING_PROTOCOL_H_
#define ACTORFLOW_ACTORS_SERVING_SERVING_PROTOCOL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "actors/protocol/front_protocol.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/session.h"
#include "training/serving/servable.h"

namespace actorflow {

// One request to a replica (or the batcher): feed these, fetch those, and call `done`
// exactly once with the fetched tensors in `fetches` order, or the error.
struct ServeCall {
  FeedList feeds;                    // graph endpoint -> value, every value [rows, ...]
  std::vector<std::string> fetches;  // graph endpoints
  int64_t rows = 0;
  std::function<void(StatusOr<std::vector<Tensor>>)> done;
};
using ServeCallPtr = std::shared_ptr<ServeCall>;

using serve_flush_atom = caf::atom_constant<caf::atom("sflush")>;

}  // namespace actorflow

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorflow::ServeCallPtr)

namespace actorflow {

// A replica: runs each call on its session, one at a time, and answers through
// call->done. Quits when its version unloads.
using ServingReplica = caf::typed_actor<caf::reacts_to<ServeCallPtr>>;

// A version's batcher: merges calls with the same feeds and fetches into batches of
// at most max_batch_size rows; a batch leaves when full or batch_timeout_micros after
// its first call (the sflush timer, tagged with the batch's generation).
using ServingBatcher =
    caf::typed_actor<caf::reacts_to<ServeCallPtr>, caf::reacts_to<serve_flush_atom, uint64_t>>;

// Picks a replica for a batch and sends it there (the version's least-loaded
// dispatch); the callee owns the in-flight accounting.
using DispatchFn = std::function<void(ServeCallPtr)>;

ServingReplica SpawnServingReplica(caf::actor_system& system,
                                   std::shared_ptr<const Servable> servable);
// Where a remote replica's calls go: session `session_id` on the task `task`
// ("/job:worker/task:0") at `address` ("host:port"), whose front is `front`. `lost`
// (may be null) is set when the task is lost, for the version's pool.
struct RemoteReplicaTarget {
  FrontActor front;
  uint64_t session_id = 0;
  std::string task;
  std::string address;
  std::shared_ptr<std::atomic<bool>> lost;
};

// A replica on another task: each call becomes a step of the target's session that
// the task's front (master service) runs; errors name the task and its address.
// Several calls may be in flight at once (the replica waits for none of them). When
// the task is lost (its connection closed, or silent past the failure detector's
// timeout), the calls in flight there and every later one fail at once with
// Unavailable naming it and how it was lost.
ServingReplica SpawnRemoteServingReplica(caf::actor_system& system, RemoteReplicaTarget target,
                                         int64_t timeout_ms);
ServingBatcher SpawnServingBatcher(caf::actor_system& system, int64_t max_batch_size,
                                   int64_t batch_timeout_micros, DispatchFn dispatch);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SERVING_SERVING_PROTOCOL_H_
