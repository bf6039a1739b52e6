#include "actors/runtime/device_queue_client.h"

#include <utility>
#include <vector>

#include "kernels/accumulator_state.h"
#include "kernels/queue_state.h"

namespace actorflow {

DeviceQueueClient::DeviceQueueClient(DeviceActor::pointer self,
                                     std::shared_ptr<TaskServices> services, std::string device,
                                     int64_t default_timeout_ms)
    : self_(self),
      services_(std::move(services)),
      device_(std::move(device)),
      default_timeout_ms_(default_timeout_ms) {}

StatusOr<QueueActor> DeviceQueueClient::Find(const QueueRef& queue, bool accumulator) const {
  if (services_) {
    std::lock_guard<std::mutex> lock(services_->mu);
    // The session's own queue of that name first, then the shared one.
    const std::string session_key = queue.SessionKey();
    if (!session_key.empty()) {
      auto it = services_->queues.find(session_key);
      if (it != services_->queues.end()) return it->second;
    }
    auto it = services_->queues.find(queue.Key());
    if (it != services_->queues.end()) return it->second;
  }
  const std::string task = services_ ? services_->task_name : std::string("this task");
  if (accumulator) {
    return NotFound("no accumulator '" + queue.Key() + "' on task " + task + " (device " +
                    device_ + "): run its ConditionalAccumulator node on this task first, and "
                    "place the accumulator's ops on the accumulator's task");
  }
  return NotFound("no queue '" + queue.Key() + "' on task " + task + " (device " + device_ +
                  "): run its FIFOQueue or RandomShuffleQueue node on this task first, and "
                  "place the queue's ops on the queue's task");
}

void DeviceQueueClient::EnsureQueue(int64_t step_id, const QueueSpec& spec, StatusCallback done) {
  Status valid = spec.is_accumulator() ? AccumulatorState::ValidateSpec(spec)
                                       : QueueState::ValidateSpec(spec);
  if (!valid.ok()) return done(valid);
  if (!services_) return done(Internal("device " + device_ + " has no task services"));
  QueueActor queue;
  {
    std::lock_guard<std::mutex> lock(services_->mu);
    auto it = services_->queues.find(spec.Key());
    if (it == services_->queues.end()) {
      queue = SpawnQueueActor(self_->system(), spec, caf::actor_cast<caf::strong_actor_ptr>(self_));
      services_->queues.emplace(spec.Key(), queue);
      checked_[spec.DebugString()] = queue.address();
      return done(Status::OK());
    }
    queue = it->second;
  }
  const std::string signature = spec.DebugString();
  auto seen = checked_.find(signature);
  if (seen != checked_.end() && seen->second == queue.address()) return done(Status::OK());
  QueueOp op;
  op.kind = QueueOp::Kind::kCheck;
  op.spec = spec;
  caf::actor_addr address = queue.address();
  Send(step_id, std::move(queue), std::move(op),
       [this, done, signature, address](QueueReply& r) {
         if (r.status.ok()) checked_[signature] = address;
         done(r.status);
       });
}

void DeviceQueueClient::Enqueue(int64_t step_id, const QueueRef& queue,
                                std::vector<Tensor> components, bool many, int64_t timeout_ms,
                                StatusCallback done) {
  StatusOr<QueueActor> actor = Find(queue);
  if (!actor.ok()) return done(actor.status());
  QueueOp op;
  op.kind = QueueOp::Kind::kEnqueue;
  op.components = std::move(components);
  op.many = many;
  op.timeout_ms = Timeout(timeout_ms);
  Send(step_id, std::move(actor).value(), std::move(op),
       [done](QueueReply& r) { done(r.status); });
}

void DeviceQueueClient::Dequeue(int64_t step_id, const QueueRef& queue, int64_t n,
                                int64_t timeout_ms, DequeueCallback done) {
  StatusOr<QueueActor> actor = Find(queue);
  if (!actor.ok()) return done(actor.status(), {});
  QueueOp op;
  op.kind = QueueOp::Kind::kDequeue;
  op.n = n;
  op.timeout_ms = Timeout(timeout_ms);
  Send(step_id, std::move(actor).value(), std::move(op),
       [done](QueueReply& r) { done(r.status, std::move(r.components)); });
}

void DeviceQueueClient::Close(int64_t step_id, const QueueRef& queue,
                              bool cancel_pending_enqueues, StatusCallback done) {
  StatusOr<QueueActor> actor = Find(queue);
  if (!actor.ok()) return done(actor.status());
  QueueOp op;
  op.kind = QueueOp::Kind::kClose;
  op.cancel_pending_enqueues = cancel_pending_enqueues;
  Send(step_id, std::move(actor).value(), std::move(op),
       [done](QueueReply& r) { done(r.status); });
}

void DeviceQueueClient::Size(int64_t step_id, const QueueRef& queue, SizeCallback done) {
  StatusOr<QueueActor> actor = Find(queue);
  if (!actor.ok()) return done(actor.status(), 0);
  QueueOp op;
  op.kind = QueueOp::Kind::kSize;
  Send(step_id, std::move(actor).value(), std::move(op),
       [done](QueueReply& r) { done(r.status, r.size); });
}

void DeviceQueueClient::Send(int64_t step_id, QueueActor queue, QueueOp op, ReplyFn done) {
  const uint64_t id = next_id_++;
  op.client_id = id;
  Pending& p = pending_[id];
  p.step_id = step_id;
  p.queue = queue;
  p.kind = op.kind;
  p.many = op.n >= 0;
  p.done = std::move(done);
  const std::string device = device_;
  // No timeout here: the queue itself answers a request that waits too long, and a
  // queue that ends answers its waiting requests first.
  self_->request(queue, caf::infinite, qop_atom::value, std::move(op))
      .then([this, id](QueueReply& r) { OnReply(id, r); },
            [this, id, device](caf::error& e) {
              QueueReply r;
              r.status = Unavailable("the queue did not answer device " + device + ": " +
                                     caf::to_string(e));
              OnReply(id, r);
            });
}

void DeviceQueueClient::OnReply(uint64_t id, QueueReply& reply) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending p = std::move(it->second);
  pending_.erase(it);
  if (p.done) return p.done(reply);
  // The step was aborted before this answer came: elements handed out go back.
  if (p.kind == QueueOp::Kind::kDequeue && reply.status.ok() && !reply.components.empty()) {
    self_->send(p.queue, qrestore_atom::value, std::move(reply.components), p.many);
  }
  // So does an accumulator's average, if the accumulator can still take it back.
  if (p.kind == QueueOp::Kind::kTakeGradient && reply.status.ok() && reply.take_id != 0) {
    self_->send(p.queue, arestore_atom::value, reply.take_id);
  }
}

void DeviceQueueClient::AbortStep(int64_t step_id, const Status& status) {
  std::vector<ReplyFn> to_fail;
  for (auto& [id, p] : pending_) {
    if (p.step_id != step_id || !p.done) continue;
    to_fail.push_back(std::move(p.done));
    p.done = nullptr;
    self_->send(p.queue, qcancel_atom::value, id, status);
  }
  for (ReplyFn& done : to_fail) {
    QueueReply r;
    r.status = status;
    done(r);
  }
}

}  // namespace actorflow
