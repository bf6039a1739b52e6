// DeviceQueueClient's accumulator requests (device_queue_client.h): each one is a
// QueueOp to the accumulator's actor, remembered with its step like a queue request,
// so that aborting the step withdraws a waiting take.
#include <utility>

#include "actors/runtime/device_queue_client.h"

namespace actorflow {

void DeviceQueueClient::AccumulatorApplyGradient(int64_t step_id, const QueueRef& accumulator,
                                                 int64_t local_step, Tensor gradient,
                                                 StatusCallback done) {
  StatusOr<QueueActor> actor = Find(accumulator, /*accumulator=*/true);
  if (!actor.ok()) return done(actor.status());
  QueueOp op;
  op.kind = QueueOp::Kind::kApplyGradient;
  op.step = local_step;
  op.gradient = std::move(gradient);
  Send(step_id, std::move(actor).value(), std::move(op),
       [done](QueueReply& r) { done(r.status); });
}

void DeviceQueueClient::AccumulatorTakeGradient(int64_t step_id, const QueueRef& accumulator,
                                                int64_t num_required, int64_t timeout_ms,
                                                GradientCallback done) {
  StatusOr<QueueActor> actor = Find(accumulator, /*accumulator=*/true);
  if (!actor.ok()) return done(actor.status(), Tensor());
  QueueOp op;
  op.kind = QueueOp::Kind::kTakeGradient;
  op.num_required = num_required;
  op.timeout_ms = Timeout(timeout_ms);
  Send(step_id, std::move(actor).value(), std::move(op),
       [done](QueueReply& r) { done(r.status, std::move(r.average)); });
}

void DeviceQueueClient::AccumulatorSetGlobalStep(int64_t step_id, const QueueRef& accumulator,
                                                 int64_t new_global_step, StatusCallback done) {
  StatusOr<QueueActor> actor = Find(accumulator, /*accumulator=*/true);
  if (!actor.ok()) return done(actor.status());
  QueueOp op;
  op.kind = QueueOp::Kind::kSetGlobalStep;
  op.step = new_global_step;
  Send(step_id, std::move(actor).value(), std::move(op),
       [done](QueueReply& r) { done(r.status); });
}

void DeviceQueueClient::ReadAccumulatorCounts(int64_t step_id, const QueueRef& accumulator,
                                              CountsCallback done) {
  StatusOr<QueueActor> actor = Find(accumulator, /*accumulator=*/true);
  if (!actor.ok()) return done(actor.status(), AccumulatorCounts());
  QueueOp op;
  op.kind = QueueOp::Kind::kAccumulatorCounts;
  Send(step_id, std::move(actor).value(), std::move(op),
       [done](QueueReply& r) { done(r.status, r.counts); });
}

}  // namespace actorflow
