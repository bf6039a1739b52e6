// AccumulatorState: the state machine of one ConditionalAccumulator (TensorFlow 1's
// tf.ConditionalAccumulator, dense gradients), with no threads and no actors, so that
// every rule is testable on its own. The queue actor (actors/runtime/queue_actor.h)
// hosts one when its spec's kind is kConditionalAccumulator and turns its callbacks
// into response promises; timeouts and cancellation come from outside as Cancel(id).
//
// State: dtype (float32 or float64) and shape from the spec, a sum of the gradients
// applied since the last take and their count, a global step (int64, starts at 0) and
// the count of stale gradients dropped since creation.
//   - ApplyGradient(local_step, g): InvalidArgument naming the accumulator when g's
//     dtype differs or its shape is incompatible with the accumulator's; the first
//     applied gradient fixes the unknown dims for the accumulator's lifetime. A
//     gradient with local_step < global_step is stale: dropped and counted, not an
//     error (checked after dtype and shape, which TensorFlow skips for stale ones).
//     Otherwise sum += g, count += 1. Never waits; it may serve waiting takes.
//   - TakeGradient(num_required): InvalidArgument when num_required < 1. Waits until
//     count >= num_required, then hands out sum / count (the accumulator's dtype and
//     shape), resets sum and count to 0 and adds 1 to the global step. Waiting takes
//     are served in arrival order: one that cannot be served holds up later ones.
//   - SetGlobalStep(s): sets the global step, even to a lower value (TensorFlow warns
//     and sets it too).
//   - Cancel(id, status) answers one waiting take with `status` (its timeout, its
//     step's abort) and leaves the sum, count and steps as they were.
//   - RestoreTake(take_id): an average handed out to a requester whose step ended
//     before it arrived goes back (sum, count and global step as before the take)
//     only while nothing else changed the accumulator since (no gradient applied or
//     dropped, no other take, no SetGlobalStep); otherwise it is lost and counted
//     in num_lost(): putting it back then would mix steps (a gradient dropped as
//     stale against the step the take made would have been accepted).
//
// Invariants: a waiting take exists only while count < the first waiting take's
// num_required; every request's callback runs exactly once.
// Thread safety: none; one thread (the owning actor) at a time. Callbacks run inside
// the call that completes them, after the state is consistent, and must not call
// back into the AccumulatorState.
#ifndef ACTORFLOW_KERNELS_ACCUMULATOR_STATE_H_
#define ACTORFLOW_KERNELS_ACCUMULATOR_STATE_H_

#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <string>
#include <vector>

#include "graph/shape.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/queue_service.h"

namespace actorflow {

class AccumulatorState {
 public:
  // Chosen by the caller, unique among the requests it has waiting.
  using RequestId = uint64_t;
  // average: the accumulator's dtype and shape. take_id names this take for
  // RestoreTake (0 when the take failed).
  using TakeDone = std::function<void(const Status& status, Tensor average, uint64_t take_id)>;

  // InvalidArgument naming what is wrong: an empty name, not exactly one dtype and
  // one shape, a dtype other than float32/float64, a kind other than
  // kConditionalAccumulator.
  static Status ValidateSpec(const QueueSpec& spec);
  // Precondition: ValidateSpec(spec) is OK.
  explicit AccumulatorState(QueueSpec spec);

  // OK when the gradient was added or dropped as stale (*dropped, when given, says
  // which); InvalidArgument for a gradient of the wrong dtype or shape.
  Status ApplyGradient(int64_t local_step, const Tensor& gradient, bool* dropped = nullptr);
  // Returns true when the take waits; `done` then runs from a later call.
  bool TakeGradient(RequestId id, int64_t num_required, TakeDone done);
  void SetGlobalStep(int64_t new_global_step);
  // Answers the waiting take `id` with `status`; false when it does not wait.
  bool Cancel(RequestId id, const Status& status);
  // Answers every waiting take with `status` (the accumulator is going away).
  void CancelAll(const Status& status);
  // Puts back what take `take_id` handed out (see the top of this file). True when
  // it went back; false when it was lost (counted) or is unknown.
  bool RestoreTake(uint64_t take_id);

  const QueueSpec& spec() const { return spec_; }
  // The spec's shape, with the dims the first applied gradient fixed.
  const Shape& shape() const { return shape_; }
  int64_t num_accumulated() const { return count_; }
  int64_t num_dropped() const { return dropped_; }
  int64_t global_step() const { return global_step_; }
  int64_t num_lost() const { return lost_; }
  int64_t waiting_takes() const { return static_cast<int64_t>(takes_.size()); }
  AccumulatorCounts counts() const {
    return AccumulatorCounts{count_, dropped_, global_step_, lost_};
  }
  // "accumulator 'container/name'", for messages.
  std::string Name() const;

 private:
  struct PendingTake {
    RequestId id;
    int64_t num_required;
    TakeDone done;
  };
  // What the last take handed out, for RestoreTake while nothing changed since.
  struct LastTake {
    uint64_t take_id = 0;
    uint64_t version = 0;  // version_ right after the take
    Tensor sum;
    int64_t count = 0;
    int64_t global_step = 0;  // before the take
  };

  // Something changed the accumulator: the last take can no longer go back.
  void Changed();
  // Serves waiting takes, in order, while the first one can be served.
  void Flush();
  void RunCompleted();

  QueueSpec spec_;
  DType dtype_;
  Shape shape_;
  Tensor sum_;  // uninitialized while count_ == 0
  int64_t count_ = 0;
  int64_t global_step_ = 0;
  int64_t dropped_ = 0;
  int64_t lost_ = 0;
  uint64_t version_ = 0;
  uint64_t next_take_id_ = 1;
  std::optional<LastTake> last_take_;
  std::list<PendingTake> takes_;
  std::vector<std::function<void()>> completed_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_ACCUMULATOR_STATE_H_
