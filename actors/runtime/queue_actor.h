// The queue actor: one per queue, holding a QueueState (kernels/queue_state.h) and
// answering every request through a response promise, so that an enqueue on a full
// queue or a dequeue on an empty one waits as a parked promise, never as a blocked
// thread. Queue actors live in their task's TaskServices::queues (key
// "container/name") and are reached by the device actors of that task, which run the
// queue kernels (kernels/queue_service.h); the queue ops are placed on the queue's
// task, so requests never cross processes and the payloads are local-only.
//
// The same actor hosts a ConditionalAccumulator instead (an AccumulatorState,
// kernels/accumulator_state.h) when its spec's kind is kConditionalAccumulator: it
// lives in the same registry, is found, timed out, withdrawn and stopped the same
// way, and answers the other kind's requests with InvalidArgument.
//
// Its protocol (messages, replies, contracts) is documented at QueueActor in
// actors/protocol/queue_protocol.h.
//
// Thread safety: actor; ClearQueues locks TaskServices::mu.
#ifndef ACTORFLOW_ACTORS_RUNTIME_QUEUE_ACTOR_H_
#define ACTORFLOW_ACTORS_RUNTIME_QUEUE_ACTOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "actors/protocol/queue_protocol.h"
#include "actors/runtime/task_services.h"
#include "kernels/queue_service.h"

namespace actorflow {

// Spawns the actor of a queue or an accumulator; precondition: QueueState::ValidateSpec
// (AccumulatorState::ValidateSpec for an accumulator) accepts `spec`.
// The queue monitors `owner` (the device actor that created it; may be null) and
// ends with it, so a task's queues go when its devices go. A queue that ends
// (owner gone, ClearQueues, its system shutting down) answers its waiting requests
// with Cancelled first.
QueueActor SpawnQueueActor(caf::actor_system& system, QueueSpec spec,
                           caf::strong_actor_ptr owner);

// Stops and forgets the queues of the given containers (all if empty): the queue
// side of TensorFlow's Session::Reset.
void ClearQueues(TaskServices& services, const std::vector<std::string>& containers);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_RUNTIME_QUEUE_ACTOR_H_
