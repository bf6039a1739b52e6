// QueueService: how queue kernels (kernels/cpu/queue_kernels.cc) reach the queues of
// their task, implemented by the runtime that hosts the executor (the device actor,
// which talks to queue actors) and absent (nullptr) in DirectSession.
//
// A queue is named by (container, name) within one task: every device of the task
// that runs a queue op with that name reaches the same queue. A queue private to a
// session (its node has no shared_name) lives in the session's container
// (SessionContainer) under QueueRef::PrivateQueueName, and is looked for there first
// (QueueRef::SessionKey); the device stops it when the session's last partition
// goes. A queue is created by
// running its FIFOQueue/RandomShuffleQueue node (EnsureQueue); the other ops find it
// or fail with NotFound naming it and the task.
//
// Every call is asynchronous: `done` runs exactly once, later or before the call
// returns, on the thread that runs the step's executor (never block that thread).
// An enqueue on a full queue and a dequeue on an empty one wait inside the queue,
// not in a thread; `timeout_ms` > 0 bounds that wait for this request alone
// (DeadlineExceeded, the queue stays usable), 0 = the session's
// operation_timeout_in_ms (none when that is 0 too). When the step is aborted
// (its deadline, another node's error) the waiting request is withdrawn from the
// queue and `done` gets the abort status; an element that the queue handed out in
// the meantime goes back into it, so no element is lost.
//
// A ConditionalAccumulator (kernels/accumulator_state.h has its rules) is named and
// found like a queue, in the same registry (so a queue and an accumulator cannot
// share a name in one container): its node creates it with EnsureQueue (a QueueSpec
// of kind kConditionalAccumulator) and the Accumulator* methods reach it. A take
// waits like a dequeue (timeout_ms, withdrawn when its step is aborted); an average
// handed out to a step that was aborted before the answer arrived is put back when
// nothing changed in the accumulator since, else it is lost and counted
// (AccumulatorCounts::num_lost).
//
// Thread safety: called only from the thread running the step's executor.
#ifndef ACTORFLOW_KERNELS_QUEUE_SERVICE_H_
#define ACTORFLOW_KERNELS_QUEUE_SERVICE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "graph/shape.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "graph/types.h"

namespace actorflow {

// What a queue is: its kind, name and element signature (TensorFlow's FIFOQueue and
// RandomShuffleQueue parameters). A ConditionalAccumulator is described the same way:
// kind kConditionalAccumulator, one dtype (float32 or float64) and one shape (that of
// its gradients, possibly with unknown dims or of unknown rank); capacity,
// min_after_dequeue and seed are unused.
struct QueueSpec {
  enum class Kind { kFifo, kRandomShuffle, kConditionalAccumulator };
  Kind kind = Kind::kFifo;
  std::string container;  // "" = the default container
  std::string name;       // the shared name, never empty
  // One entry per component of an element; at least one.
  std::vector<DType> dtypes;
  // Empty, or one per component: an element's component must be compatible with it
  // (unknown dims accept any size). Fully defined shapes let DequeueMany stack
  // elements of any origin; otherwise the dequeued elements must agree.
  std::vector<Shape> shapes;
  // The most elements the queue holds; -1 = unbounded.
  int64_t capacity = -1;
  // RandomShuffleQueue: a dequeue leaves at least this many elements behind (until
  // the queue is closed), so that what comes out is well mixed.
  int64_t min_after_dequeue = 0;
  // RandomShuffleQueue: seeds the choice of elements; 0 = nondeterministic.
  int64_t seed = 0;

  // "container/name": the key of the task's registry.
  std::string Key() const { return container + "/" + name; }
  // "FIFOQueue 'name' (float32 [4], int32 [], capacity 100)",
  // "ConditionalAccumulator 'name' (float32 [2,3])".
  std::string DebugString() const;
  // OK when `other` describes the same queue; otherwise InvalidArgument naming the
  // first parameter that differs (a shared name reused for another queue).
  Status CheckSame(const QueueSpec& other) const;
  bool is_accumulator() const { return kind == Kind::kConditionalAccumulator; }
};

// What an accumulator says about itself (ReadAccumulatorCounts).
struct AccumulatorCounts {
  int64_t num_accumulated = 0;  // gradients summed since the last take
  int64_t num_dropped = 0;      // stale gradients dropped since its creation
  int64_t global_step = 0;      // starts at 0; +1 per take; SetGlobalStep sets it
  int64_t num_lost = 0;         // averages taken by aborted steps that could not go back
};

// Names a queue of the task; the other ops need no more than this.
struct QueueRef {
  std::string container;
  std::string name;
  // The running session's container (SessionContainer), where a queue private to the
  // session (one made by a queue node without a shared_name) is looked for before
  // the shared one; "" = the shared one only.
  std::string session_container;
  std::string Key() const { return container + "/" + name; }
  // Where the session's own queue of this name would be: "" without a session.
  std::string SessionKey() const {
    return session_container.empty() ? std::string()
                                     : session_container + "/" + PrivateQueueName(container, name);
  }
  // A private queue's name within its session's container: the user's container
  // kept in it, so that "c"/"q" and ""/"q" stay apart.
  static std::string PrivateQueueName(const std::string& container, const std::string& name) {
    return container.empty() ? name : container + "/" + name;
  }
};

class QueueService {
 public:
  virtual ~QueueService() = default;

  using StatusCallback = std::function<void(const Status& status)>;
  // `components`: one tensor per component of the element (Dequeue), or stacked
  // along a new leading dimension [n, ...] (DequeueMany).
  using DequeueCallback =
      std::function<void(const Status& status, std::vector<Tensor> components)>;
  using SizeCallback = std::function<void(const Status& status, int64_t size)>;

  // Creates the queue in this task, or checks that the queue of that name has the
  // same spec (InvalidArgument otherwise).
  virtual void EnsureQueue(int64_t step_id, const QueueSpec& spec, StatusCallback done) = 0;
  // One element (many = false: one tensor per component) or several (many = true:
  // each component [n, ...], the same n for all). Errors: NotFound for an unknown
  // queue; InvalidArgument naming the component of the wrong dtype or shape;
  // Cancelled when the queue is closed (or closed with cancel_pending_enqueues while
  // this request waited); DeadlineExceeded past the timeout.
  virtual void Enqueue(int64_t step_id, const QueueRef& queue, std::vector<Tensor> components,
                       bool many, int64_t timeout_ms, StatusCallback done) = 0;
  // n < 0: one element; n >= 0: n elements stacked. Errors: NotFound; OutOfRange
  // when the queue is closed and too few elements are left; DeadlineExceeded.
  virtual void Dequeue(int64_t step_id, const QueueRef& queue, int64_t n, int64_t timeout_ms,
                       DequeueCallback done) = 0;
  // Later enqueues fail; waiting dequeues that can no longer be served get
  // OutOfRange; with cancel_pending_enqueues waiting enqueues get Cancelled.
  virtual void Close(int64_t step_id, const QueueRef& queue, bool cancel_pending_enqueues,
                     StatusCallback done) = 0;
  virtual void Size(int64_t step_id, const QueueRef& queue, SizeCallback done) = 0;

  // --- ConditionalAccumulators ------------------------------------------------------
  // Created by EnsureQueue with a spec of kind kConditionalAccumulator. Each method
  // answers NotFound for an unknown accumulator and InvalidArgument when the name is a
  // queue's. The defaults answer Unimplemented (a runtime without accumulators).
  //
  // `average`: the accumulator's dtype and shape.
  using GradientCallback = std::function<void(const Status& status, Tensor average)>;
  using CountsCallback =
      std::function<void(const Status& status, const AccumulatorCounts& counts)>;
  // Adds `gradient` (or drops it as stale when local_step < the global step: OK, and
  // counted). Never waits. InvalidArgument naming the accumulator for a gradient of
  // another dtype or of a shape incompatible with the accumulator's.
  virtual void AccumulatorApplyGradient(int64_t step_id, const QueueRef& accumulator,
                                        int64_t local_step, Tensor gradient,
                                        StatusCallback done);
  // Waits until num_required (>= 1, else InvalidArgument) gradients are summed, then
  // answers their average, resets the sum and adds 1 to the global step. Waiting takes
  // are served in arrival order; timeout_ms as for Dequeue (DeadlineExceeded, the
  // accumulator unchanged).
  virtual void AccumulatorTakeGradient(int64_t step_id, const QueueRef& accumulator,
                                       int64_t num_required, int64_t timeout_ms,
                                       GradientCallback done);
  // Sets the global step, even to a lower value (TensorFlow does too, with a logged
  // warning; this runtime has no log, the rule is documented instead).
  virtual void AccumulatorSetGlobalStep(int64_t step_id, const QueueRef& accumulator,
                                        int64_t new_global_step, StatusCallback done);
  virtual void ReadAccumulatorCounts(int64_t step_id, const QueueRef& accumulator,
                                     CountsCallback done);
};

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_QUEUE_SERVICE_H_
