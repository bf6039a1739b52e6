// The queue actor's protocol: its atoms, payloads and typed interface. Included only
// by actors/*.cc and actors headers that are themselves included only there (CAF).
//
// Queue ops are placed on the queue's task and run by that task's device actors
// (actors/runtime/device_queue_client.h), so requests never cross processes: the payloads
// are local-only (no `inspect`, CAF_ALLOW_UNSAFE_MESSAGE_TYPE).
#ifndef ACTORFLOW_ACTORS_PROTOCOL_QUEUE_PROTOCOL_H_
#define ACTORFLOW_ACTORS_PROTOCOL_QUEUE_PROTOCOL_H_

#include <cstdint>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "actors/protocol/wire_core.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/queue_service.h"

namespace actorflow {

using qop_atom = caf::atom_constant<caf::atom("qop")>;
using qcancel_atom = caf::atom_constant<caf::atom("qcancel")>;
using qrestore_atom = caf::atom_constant<caf::atom("qrestore")>;
using qtimeout_atom = caf::atom_constant<caf::atom("qtimeout")>;
using arestore_atom = caf::atom_constant<caf::atom("arestore")>;

// One request to a queue actor. kCheck serves queues and accumulators; kEnqueue to
// kSize are a queue's, kApplyGradient to kAccumulatorCounts an accumulator's (the
// other host answers InvalidArgument).
struct QueueOp {
  enum class Kind {
    kCheck, kEnqueue, kDequeue, kClose, kSize,
    kApplyGradient, kTakeGradient, kSetGlobalStep, kAccumulatorCounts
  };
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
  // kApplyGradient: the gradient's local step; kSetGlobalStep: the new global step.
  int64_t step = 0;
  Tensor gradient;           // kApplyGradient
  int64_t num_required = 0;  // kTakeGradient
};

struct QueueReply {
  Status status;
  std::vector<Tensor> components;  // kDequeue
  // The queue as the reply left it.
  int64_t size = 0;
  int64_t waiting_enqueues = 0;
  int64_t waiting_dequeues = 0;
  bool closed = false;
  // An accumulator's replies: the average (kTakeGradient), the take's id for
  // arestore (0 when it failed), and the accumulator as the reply left it.
  Tensor average;
  uint64_t take_id = 0;
  AccumulatorCounts counts;
};

}  // namespace actorflow

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorflow::QueueOp)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorflow::QueueReply)

namespace actorflow {

// The queue actor (SpawnQueueActor, actors/runtime/queue_actor.h). Every request is answered
// through a response promise, so a request that must wait parks; it never blocks.
//
//   (qop_atom, QueueOp) -> QueueReply
//       Served when the op can be: kCheck (spec equal to the queue's, else
//       InvalidArgument), kSize and kClose at once; kEnqueue on a full queue and
//       kDequeue on an empty one wait. An accumulator (kernels/accumulator_state.h)
//       answers kApplyGradient, kSetGlobalStep and kAccumulatorCounts at once;
//       kTakeGradient waits until num_required gradients are summed. A waiting
//       request with timeout_ms > 0 is answered alone with DeadlineExceeded after
//       timeout_ms and the queue stays as it was. A closed queue answers dequeues it
//       cannot serve with OutOfRange.
//   (qcancel_atom, uint64 client_id, Status)
//       Withdraws the sender's waiting request `client_id` (QueueOp::client_id); it
//       is answered with the Status. Unknown or already answered ids are ignored
//       (the answer and the cancel may cross).
//   (qrestore_atom, vector<Tensor> components, bool many)
//       Puts dequeued elements back at the front (their requester's step ended
//       before the answer arrived), so an aborted step loses no element.
//   (arestore_atom, uint64 take_id)
//       An accumulator puts back the average of take `take_id` (QueueReply::take_id;
//       its requester's step ended before the answer arrived) if nothing changed it
//       since; otherwise the average is lost and counted (AccumulatorCounts::num_lost).
//   (qtimeout_atom, uint64 request, int64 timeout_ms, string op)
//       Internal: the delayed message a waiting request with a timeout sends the
//       queue itself; answers that request with DeadlineExceeded if it still waits.
// A requester's own request timeout tells the queue nothing: hence qtimeout and
// qcancel. A queue that ends (its owner device gone, ClearQueues, shutdown) answers
// its waiting requests with Cancelled first.
using QueueActor = caf::typed_actor<
    caf::replies_to<qop_atom, QueueOp>::with<QueueReply>,
    caf::reacts_to<qcancel_atom, uint64_t, Status>,
    caf::reacts_to<qrestore_atom, std::vector<Tensor>, bool>,
    caf::reacts_to<arestore_atom, uint64_t>,
    caf::reacts_to<qtimeout_atom, uint64_t, int64_t, std::string>>;

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_PROTOCOL_QUEUE_PROTOCOL_H_
