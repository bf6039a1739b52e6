// The master actor's protocol: its atoms, payloads and typed interface
// (MasterActor). Included only by actors/*.cc and actors headers that are
// themselves included only there (CAF).
//
// A master lives in the process of the task that serves its session (an in-process
// session's own, or a Server's for a remote client), so its step message is
// local-only: the client's reply handle (a condition variable, or the front's
// response promise) travels with it.
#ifndef ACTORFLOW_ACTORS_PROTOCOL_MASTER_PROTOCOL_H_
#define ACTORFLOW_ACTORS_PROTOCOL_MASTER_PROTOCOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "actors/protocol/wire_core.h"
#include "actors/protocol/device_protocol.h"
#include "graph/graph.h"
#include "graph/prune.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/session.h"

namespace actorflow {

using step_atom = caf::atom_constant<caf::atom("step")>;
using heartbeat_atom = caf::atom_constant<caf::atom("heartbeat")>;
using close_atom = caf::atom_constant<caf::atom("close")>;
using master_stats_atom = caf::atom_constant<caf::atom("mstats")>;
using extend_atom = caf::atom_constant<caf::atom("extend")>;
using device_restarted_atom = caf::atom_constant<caf::atom("devrestart")>;
using step_deadline_atom = caf::atom_constant<caf::atom("stepdeadl")>;

// What an in-process session needs to send the steps of a one-partition plan
// straight to its device (direct_run_atom), without the master: handed back with
// such a step's answer when the request accepts it. Immutable once handed out,
// except `valid`, which the master clears when it drops the plan (the partition is
// then deregistered, and the session goes through the master again).
struct DirectPlan {
  DeviceActor device_actor;
  // Shared with each DirectRun, which names it only if its device ends unanswered.
  std::shared_ptr<const std::string> device;
  uint64_t partition_id = 0;
  uint32_t ordinal = 0;            // the master's task ordinal, for step ids
  RunSignature signature;          // for the feeds' checks
  std::vector<int> feed_sources;   // per partition feed: index into the client's feeds
  std::vector<int> fetch_targets;  // per partition fetch: index into the client's fetches
  std::vector<std::pair<int, int>> fed_fetches;        // (fetch, feed)
  std::vector<std::pair<int, int>> duplicate_fetches;  // (fetch, first fetch)
  std::atomic<bool> valid{true};
};

// A step's missed RunOptions.timeout_in_ms, worded the same whoever enforces it
// (the master, or an in-process session for a step it sent straight to a device).
// `device`: the unfinished device, or several joined by ", ".
inline Status StepDeadlineExceeded(int64_t timeout_ms, const std::string& device) {
  return DeadlineExceeded("step exceeded its deadline of " + std::to_string(timeout_ms) +
                          " ms (RunOptions.timeout_in_ms) while " +
                          (device.find(", ") == std::string::npos ? "device " + device + " was"
                                                                 : "devices " + device + " were") +
                          " still running: their tasks still answer heartbeats, so the step "
                          "is slow or stuck there, not a task lost");
}

// A client's step: filled by the session, answered by the master through `reply`.
struct StepReply {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  // `done`, readable without the lock: a waiter may poll it before parking on cv.
  std::atomic<bool> ready{false};
  Status status;
  std::vector<Tensor> outputs;
  RunMetadata metadata;
  // Set before Deliver for a request that accepts_direct, when its plan is one
  // partition whose later steps the session may send straight to the device.
  std::shared_ptr<DirectPlan> direct;

  // Notifies after unlocking: a waiter woken while the lock is still held would block
  // on it at once and need a second wake-up. Contract: the caller keeps this reply
  // alive until Deliver returns (it holds a shared_ptr), since the waiter may return
  // as soon as the lock is released.
  void Deliver(Status s, std::vector<Tensor> out, RunMetadata meta) {
    {
      std::lock_guard<std::mutex> lock(mu);
      status = std::move(s);
      outputs = std::move(out);
      metadata = std::move(meta);
      done = true;
      ready.store(true, std::memory_order_release);
    }
    cv.notify_all();
  }
};

// A step inside a task: from the in-process session (answered through `reply`, a
// condition variable the client thread waits on) or from the front actor for a
// remote client (answered through `promise`, with a RemoteStepResult).
struct StepRequest {
  FeedList feeds;
  std::vector<std::string> fetches;
  std::vector<std::string> targets;
  RunOptions options;
  // Build RunMetadata (executed nodes; stats when traced) for the reply: only when
  // the caller passed a RunMetadata to fill.
  bool want_metadata = true;
  std::shared_ptr<StepReply> reply;
  // The client (an in-process session) can take a DirectPlan with the answer.
  bool accepts_direct = false;
  caf::response_promise promise;
};

// What a master holds (tests assert a closed session leaves nothing behind).
struct MasterStats {
  int64_t plans = 0;       // cached (feeds, fetches, targets) plans
  int64_t partitions = 0;  // partitions registered with devices, over all plans
  int64_t in_flight = 0;   // steps not answered yet
  bool closed = false;
};

}  // namespace actorflow

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<actorflow::StepRequest>)
// A grown graph, from a task's front to its master (extend_atom): local only.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<const actorflow::Graph>)

namespace actorflow {

// The master actor of one session (SpawnMasterActor, actors/runtime/master_actor.h).
//
//   (step_atom, shared_ptr<StepRequest>)
//       Runs one step; the answer goes through the request (its StepReply, or its
//       response promise with a RemoteStepResult), never as this message's reply.
//       Per (feeds, fetches, targets) signature the master prunes, places and
//       partitions the graph once and registers each partition with its device
//       (cached); each step is then one run message per involved device. Devices
//       of other tasks are found through their front actors the first time a step
//       needs them. Errors: the first failing device's Status (naming node and
//       device); a missed RunOptions.timeout_in_ms is DeadlineExceeded; a device
//       that goes down is Unavailable naming its task. On any error every device of
//       the step gets an abort. want_metadata false: no per-node bookkeeping.
//       After close, every step is answered FailedPrecondition.
//   (close_atom) -> Status, once every device confirmed
//       Ends the session: answers its waiting steps with Cancelled, drops its plans
//       and deregisters their partitions from every device it registered them
//       with. A device that does not answer within the close deadline is skipped
//       (its partitions go with it). Idempotent.
//   (master_stats_atom) -> MasterStats
//   (heartbeat_atom)
//       The master's own tick while steps are in flight: it pings the front of
//       every other task those steps use, and a task that does not answer within
//       MasterConfig::heartbeat_timeout_ms is down: its steps end with Unavailable
//       naming it, as when its connection closes.
//   (step_deadline_atom, uint64_t generation)
//       The master's own timer for the earliest deadline among its steps in flight
//       (one timer, re-armed only when a step's deadline comes before it, not one
//       per step): steps past their deadline end with DeadlineExceeded naming the
//       first device still running. A stale generation is ignored.
//   (device_restarted_atom, DevicePeer)
//       A device of the master's own task failed and its owner (the Server) put a
//       new actor in its place under the same name: steps still on the old actor
//       end with Unavailable, plans that used it are dropped, and later steps
//       register their partitions with the new actor.
//   (extend_atom, shared_ptr<const Graph> grown) -> Status
//       The session's graph grew (TensorFlow's Session::Extend): `grown` is the
//       master's graph with nodes added after its own. Later steps plan on it; plans
//       made before and steps in flight keep the graph they were made on (the master
//       keeps every version alive), as do the session's resources. InvalidArgument
//       naming the first node that differs when `grown` does not start with the
//       graph's nodes; FailedPrecondition once closed.
using MasterActor = caf::typed_actor<
    caf::reacts_to<step_atom, std::shared_ptr<StepRequest>>,
    caf::replies_to<extend_atom, std::shared_ptr<const Graph>>::with<Status>,
    caf::reacts_to<heartbeat_atom>,
    caf::reacts_to<step_deadline_atom, uint64_t>,
    caf::reacts_to<device_restarted_atom, DevicePeer>,
    caf::replies_to<close_atom>::with<Status>,
    caf::replies_to<master_stats_atom>::with<MasterStats>>;

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_PROTOCOL_MASTER_PROTOCOL_H_
