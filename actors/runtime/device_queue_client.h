// DeviceQueueClient: the QueueService (kernels/queue_service.h) of one device
// actor. It finds or creates queue actors in the task's TaskServices::queues and
// sends them requests whose answers come back as messages to the device actor, so
// queue kernels complete on the device actor's thread and never block it.
//
// Every request is remembered with its step until answered. Aborting a step
// (AbortStep) answers its waiting requests at once with the abort status and
// withdraws them from their queues (qcancel); if a queue handed out elements to a
// withdrawn dequeue before the withdrawal reached it, they are put back (qrestore),
// so an aborted step loses no element and leaves the queue usable.
//
// Accumulators (the Accumulator* methods; device_queue_client_accumulators.cc) are
// reached the same way. A withdrawn take that the accumulator answered before the
// withdrawal reached it sends its average back (arestore): the accumulator takes it
// back if nothing changed it since, else counts it lost (kernels/accumulator_state.h).
//
// Thread safety: used only from its device actor's thread.
#ifndef ACTORFLOW_ACTORS_RUNTIME_DEVICE_QUEUE_CLIENT_H_
#define ACTORFLOW_ACTORS_RUNTIME_DEVICE_QUEUE_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "actors/protocol/device_protocol.h"
#include "actors/runtime/queue_actor.h"
#include "actors/runtime/task_services.h"
#include "kernels/queue_service.h"

namespace actorflow {

class DeviceQueueClient : public QueueService {
 public:
  // `self` is the device actor (outlives the client). default_timeout_ms is the
  // device's operation_timeout_in_ms, used for requests whose op sets none.
  DeviceQueueClient(DeviceActor::pointer self, std::shared_ptr<TaskServices> services,
                    std::string device, int64_t default_timeout_ms);

  void EnsureQueue(int64_t step_id, const QueueSpec& spec, StatusCallback done) override;
  void Enqueue(int64_t step_id, const QueueRef& queue, std::vector<Tensor> components, bool many,
               int64_t timeout_ms, StatusCallback done) override;
  void Dequeue(int64_t step_id, const QueueRef& queue, int64_t n, int64_t timeout_ms,
               DequeueCallback done) override;
  void Close(int64_t step_id, const QueueRef& queue, bool cancel_pending_enqueues,
             StatusCallback done) override;
  void Size(int64_t step_id, const QueueRef& queue, SizeCallback done) override;

  void AccumulatorApplyGradient(int64_t step_id, const QueueRef& accumulator, int64_t local_step,
                                Tensor gradient, StatusCallback done) override;
  void AccumulatorTakeGradient(int64_t step_id, const QueueRef& accumulator,
                               int64_t num_required, int64_t timeout_ms,
                               GradientCallback done) override;
  void AccumulatorSetGlobalStep(int64_t step_id, const QueueRef& accumulator,
                                int64_t new_global_step, StatusCallback done) override;
  void ReadAccumulatorCounts(int64_t step_id, const QueueRef& accumulator,
                             CountsCallback done) override;

  // Answers the step's outstanding requests with `status` and withdraws them.
  void AbortStep(int64_t step_id, const Status& status);
  // Requests sent and not answered yet (withdrawn ones included until their queue
  // confirms).
  int64_t outstanding() const { return static_cast<int64_t>(pending_.size()); }

 private:
  using ReplyFn = std::function<void(QueueReply& reply)>;
  struct Pending {
    int64_t step_id = 0;
    QueueActor queue;
    QueueOp::Kind kind = QueueOp::Kind::kSize;
    bool many = false;
    ReplyFn done;  // empty once the step was aborted
  };

  // The queue actor named `queue`; NotFound naming it and the task when absent
  // (`accumulator`: the name is an accumulator's, for the message).
  StatusOr<QueueActor> Find(const QueueRef& queue, bool accumulator = false) const;
  void Send(int64_t step_id, QueueActor queue, QueueOp op, ReplyFn done);
  void OnReply(uint64_t id, QueueReply& reply);
  int64_t Timeout(int64_t op_timeout_ms) const {
    return op_timeout_ms > 0 ? op_timeout_ms : default_timeout_ms_;
  }

  DeviceActor::pointer self_;
  std::shared_ptr<TaskServices> services_;
  std::string device_;
  int64_t default_timeout_ms_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, Pending> pending_;
  // Queue actors (by address) whose spec this device has checked against a node's:
  // the spec's DebugString. Saves a round trip per step for the queue node.
  std::unordered_map<std::string, caf::actor_addr> checked_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_RUNTIME_DEVICE_QUEUE_CLIENT_H_
