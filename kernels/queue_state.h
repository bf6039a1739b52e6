// QueueState: the state machine of one queue (TensorFlow's FIFOQueue and
// RandomShuffleQueue), with no threads and no actors, so that every rule is
// testable on its own. The queue actor (actors/runtime/queue_actor.h) owns one and turns
// its callbacks into response promises; timeouts and cancellation come from
// outside as Cancel(id).
//
// Elements: one tensor per component, checked against the spec's dtypes and shapes.
// A request that cannot be served now waits (it is parked with its callback) and
// is served in arrival order as the queue changes:
//   - Enqueue waits while the queue is full; EnqueueMany inserts its elements as
//     space frees up and completes when all are in.
//   - Dequeue (n < 0) waits for one element, DequeueMany(n) for n at once. A
//     RandomShuffleQueue also keeps min_after_dequeue elements behind until it is
//     closed, and hands out uniformly chosen elements; a FIFOQueue the oldest.
//   - Close: later enqueues get Cancelled; waiting enqueues too with
//     cancel_pending_enqueues (otherwise they still complete as space frees up);
//     dequeues are served while enough elements remain, then get OutOfRange.
//   - Cancel(id, status) answers one waiting request with `status` (its timeout, its
//     step's abort) and leaves everything else as it was.
//
// Invariants: size() <= capacity except transiently after Restore; a parked
// dequeue exists only while no element can be handed to the first one in line;
// every request's callback runs exactly once.
// Thread safety: none; one thread (the owning actor) at a time. Callbacks run
// inside the call that completes them, after the state is consistent, and must not
// call back into the QueueState.
#ifndef ACTORFLOW_KERNELS_QUEUE_STATE_H_
#define ACTORFLOW_KERNELS_QUEUE_STATE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <random>
#include <string>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/queue_service.h"

namespace actorflow {

class QueueState {
 public:
  // Chosen by the caller, unique among the requests it has waiting.
  using RequestId = uint64_t;
  using EnqueueDone = std::function<void(const Status& status)>;
  // components: one per component (Dequeue) or stacked [n, ...] (DequeueMany).
  using DequeueDone = std::function<void(const Status& status, std::vector<Tensor> components)>;

  // InvalidArgument naming the parameter: no components, a shapes list of another
  // length, capacity 0 or below -1, min_after_dequeue < 0 or >= a finite capacity.
  static Status ValidateSpec(const QueueSpec& spec);
  // Precondition: ValidateSpec(spec) is OK.
  explicit QueueState(QueueSpec spec);

  // Returns true when the request waits; `done` then runs from a later call.
  // many: each component is [n, ...] and holds n elements.
  bool Enqueue(RequestId id, std::vector<Tensor> components, bool many, EnqueueDone done);
  // n < 0: one element; n >= 0: DequeueMany(n). Returns true when it waits.
  bool Dequeue(RequestId id, int64_t n, DequeueDone done);
  void Close(bool cancel_pending_enqueues);
  // Answers the waiting request `id` with `status`; false when it does not wait.
  bool Cancel(RequestId id, const Status& status);
  // Answers every waiting request with `status` (the queue is going away).
  void CancelAll(const Status& status);
  // Puts back what a Dequeue handed out but its requester could not take (its step
  // ended first): they become the next elements out of a FIFOQueue.
  void Restore(std::vector<Tensor> components, bool many);

  const QueueSpec& spec() const { return spec_; }
  int64_t size() const { return static_cast<int64_t>(buffer_.size()); }
  bool closed() const { return closed_; }
  int64_t waiting_enqueues() const { return static_cast<int64_t>(enqueues_.size()); }
  int64_t waiting_dequeues() const { return static_cast<int64_t>(dequeues_.size()); }

 private:
  using Element = std::vector<Tensor>;
  struct PendingEnqueue {
    RequestId id;
    std::deque<Element> elements;  // not inserted yet
    EnqueueDone done;
  };
  struct PendingDequeue {
    RequestId id;
    int64_t n;
    DequeueDone done;
  };

  std::string Name() const;
  // Checks and splits `components` into elements.
  StatusOr<std::deque<Element>> MakeElements(std::vector<Tensor> components, bool many) const;
  bool HasSpace() const;
  // Whether a dequeue of `need` elements can be served now.
  bool CanTake(int64_t need) const;
  Element TakeOne();
  // Serves what can be served, in order, until nothing changes.
  void Flush();
  // Runs the callbacks collected while the state changed.
  void RunCompleted();

  QueueSpec spec_;
  bool closed_ = false;
  std::deque<Element> buffer_;
  std::list<PendingEnqueue> enqueues_;
  std::list<PendingDequeue> dequeues_;
  std::mt19937_64 rng_;
  std::vector<std::function<void()>> completed_;
};

// Stacks elements (each a list of components) into one tensor per component with a
// new leading dimension: n elements of float32 [4] -> float32 [n,4]. InvalidArgument
// naming the component when two elements' shapes differ. `element_shapes` gives the
// shape of each component when `elements` is empty (must be fully defined then).
StatusOr<std::vector<Tensor>> StackElements(const std::vector<std::vector<Tensor>>& elements,
                                            const std::vector<DType>& dtypes,
                                            const std::vector<Shape>& element_shapes,
                                            const std::string& queue_name);

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_QUEUE_STATE_H_
