// The queue actor: one per queue, holding a QueueState (kernels/queue_state.h) and
// answering every request through a response promise, so that an enqueue on a full
// queue or a dequeue on an empty one waits as a parked promise, never as a blocked
// thread. Queue actors live in their task's TaskServices::queues (key
// "container/name") and are reached by the device actors of that task, which run the
// queue kernels (kernels/queue_service.h); the queue ops are placed on the queue's
// task, so requests never cross processes and the payloads are local-only.
//
// Protocol:
//   (qop_atom, QueueOp)                    -> QueueReply, when the request is served
//   (qcancel_atom, uint64 client_id, Status)  withdraws the sender's waiting request
//                                          `client_id`: it is answered with Status
//   (qrestore_atom, vector<Tensor>, bool many)  puts dequeued elements back (their
//                                          requester's step ended first)
// Timeouts: a QueueOp with timeout_ms > 0 that has to wait gets a delayed message to
// the queue actor itself; if the request still waits then, it alone is answered
// with DeadlineExceeded and the queue stays as it was. (A requester's own timeout
// tells the queue nothing, hence this and qcancel.)
//
// Thread safety: actor; ClearQueues locks TaskServices::mu.
#ifndef ACTORFLOW_ACTORS_QUEUE_ACTOR_H_
#define ACTORFLOW_ACTORS_QUEUE_ACTOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "actors/messages.h"
#include "actors/task_services.h"
#include "kernels/queue_service.h"

namespace actorflow {

using qop_atom = caf::atom_constant<caf::atom("qop")>;
using qcancel_atom = caf::atom_constant<caf::atom("qcancel")>;
using qrestore_atom = caf::atom_constant<caf::atom("qrestore")>;
using qtimeout_atom = caf::atom_constant<caf::atom("qtimeout")>;

struct QueueOp {
  enum class Kind { kCheck, kEnqueue, kDequeue, kClose, kSize };
  Kind kind = Kind::kSize;
  // The requester's id for this request, unique among its requests; qcancel names it.
  uint64_t client_id = 0;
  // > 0: a request that has to wait is answered with DeadlineExceeded after this.
  int64_t timeout_ms = 0;
  QueueSpec spec;                   // kCheck: must equal the queue's
  std::vector<Tensor> components;   // kEnqueue
  bool many = false;                // kEnqueue: components are [n, ...]
  int64_t n = -1;                   // kDequeue: < 0 one element, else DequeueMany(n)
  bool cancel_pending_enqueues = false;  // kClose
};

struct QueueReply {
  Status status;
  std::vector<Tensor> components;  // kDequeue
  // The queue as the reply left it.
  int64_t size = 0;
  int64_t waiting_enqueues = 0;
  int64_t waiting_dequeues = 0;
  bool closed = false;
};

// Spawns the actor of a queue; precondition: QueueState::ValidateSpec(spec) is OK.
// The queue monitors `owner` (the device actor that created it; may be null) and
// ends with it, so a task's queues go when its devices go. A queue that ends
// (owner gone, ClearQueues, its system shutting down) answers its waiting requests
// with Cancelled first.
caf::actor SpawnQueueActor(caf::actor_system& system, QueueSpec spec, caf::actor owner);

// Stops and forgets the queues of the given containers (all if empty): the queue
// side of TensorFlow's Session::Reset.
void ClearQueues(TaskServices& services, const std::vector<std::string>& containers);

}  // namespace actorflow

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorflow::QueueOp)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorflow::QueueReply)

#endif  // ACTORFLOW_ACTORS_QUEUE_ACTOR_H_
