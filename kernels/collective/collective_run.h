// CollectiveRun: what every collective algorithm in this folder keeps for one member
// during one execution (internal to kernels/collective), and the algorithms' entry
// points, which the public Start* functions call after validating their arguments.
//
// A run lives on the heap, owned by shared_ptrs that its pending receive callbacks
// hold: it lives as long as the transport may still call back, and no longer.
//
// Invariants: `done` runs exactly once (Fail or Finish, whichever comes first); once
// it has, the run sends nothing and ReceiveFrom's continuations no longer run. A
// continuation is always the last thing a step does, because the transport may run
// it synchronously inside RecvAsync.
// Thread safety: none; one thread (the transport's).
#ifndef ACTORFLOW_KERNELS_COLLECTIVE_COLLECTIVE_RUN_H_
#define ACTORFLOW_KERNELS_COLLECTIVE_COLLECTIVE_RUN_H_

#include <functional>
#include <memory>
#include <string>

#include "graph/shape.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "graph/types.h"
#include "kernels/collective/collective_algorithms.h"

namespace actorflow {
namespace collective_internal {

class CollectiveRun : public std::enable_shared_from_this<CollectiveRun> {
 public:
  // `name` says which collective runs, for messages ("all-reduce (ring)");
  // `tag_prefix` starts every tag ("all-reduce"): the same for all algorithms of one
  // collective, so that members that picked different algorithms still meet at the
  // description exchange.
  CollectiveRun(std::string name, std::string tag_prefix, CollectiveTransport* transport,
                CollectiveMember member, CollectiveDone done);
  virtual ~CollectiveRun() = default;
  CollectiveRun(const CollectiveRun&) = delete;
  CollectiveRun& operator=(const CollectiveRun&) = delete;

 protected:
  int rank() const { return member_.rank; }
  int group_size() const { return member_.group_size; }
  // The rank `offset` places after this one around the ring (offset may be negative).
  int RingPeer(int offset) const;
  bool finished() const { return finished_; }
  // "all-reduce (ring) rank 1 of 3": how messages name this member.
  std::string Who() const;

  // Sends `value` under the tag of `step`; on failure, fails the run and returns
  // false (the caller stops there).
  bool SendTo(int to_rank, const std::string& step, const Tensor& value);
  // Receives what `from_rank` sent under `step`, then runs `on_value` with it unless
  // the run has finished. A transport error or a value that is not a host tensor
  // fails the run instead. `on_value` must not write the value.
  void ReceiveFrom(int from_rank, const std::string& step,
                   std::function<void(const Tensor& value)> on_value);

  // The description exchange that makes members detect a dtype or shape that differs
  // from their ring predecessor's before they use its data (ring chunks are 1-D and
  // do not carry the input's shape). SendDescription sends `input`'s dtype and shape
  // to the ring successor; ReceiveDescription receives the predecessor's and runs
  // `then` when it matches `input`'s, else fails with InvalidArgument naming both.
  bool SendDescription(const Tensor& input);
  void ReceiveDescription(const Tensor& input, std::function<void()> then);

  // OK when `received` has `dtype` and `elements` elements; otherwise InvalidArgument
  // naming `from_rank`, `what` ("chunk 2") and both descriptions.
  static Status CheckElements(int from_rank, const std::string& what, const Tensor& received,
                              DType dtype, int64_t elements);
  // OK when `received` has `dtype` and `shape`; otherwise InvalidArgument naming
  // `from_rank`, `what` and both descriptions.
  static Status CheckSameShape(int from_rank, const std::string& what, const Tensor& received,
                               DType dtype, const Shape& shape);

  // Runs `done` with `status` (an error) prefixed by Who(), unless it ran already.
  void Fail(const Status& status);
  // Runs `done` with `result`, unless it ran already.
  void Finish(Tensor result);

 private:
  std::string Tag(const std::string& step, int from_rank, int to_rank) const;

  const std::string name_;
  const std::string tag_prefix_;
  CollectiveTransport* const transport_;
  const CollectiveMember member_;
  CollectiveDone done_;  // empty once it ran
  bool finished_ = false;
};

// The algorithms. Preconditions: the member and input are valid for the collective
// (checked by the public functions) and group_size >= 2.
void StartRingAllReduce(CollectiveTransport* transport, CollectiveMember member,
                        const Tensor& input, ReduceOp op, CollectiveDone done);
void StartRingReduceScatter(CollectiveTransport* transport, CollectiveMember member,
                            const Tensor& input, ReduceOp op, CollectiveDone done);
void StartRecursiveDoublingAllReduce(CollectiveTransport* transport, CollectiveMember member,
                                     const Tensor& input, ReduceOp op, CollectiveDone done);
void StartBinomialBroadcast(CollectiveTransport* transport, CollectiveMember member,
                            int root_rank, const Tensor& input, CollectiveDone done);
void StartRingAllGather(CollectiveTransport* transport, CollectiveMember member,
                        const Tensor& input, CollectiveDone done);

}  // namespace collective_internal
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_COLLECTIVE_COLLECTIVE_RUN_H_
