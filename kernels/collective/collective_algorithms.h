// The per-member algorithms of collective operations (all-reduce, broadcast,
// all-gather, reduce-scatter) over an abstract point-to-point transport: what one
// member of a group of `group_size` members sends, receives and computes during one
// execution of a collective. Each member calls the same Start* function with its own
// rank; the caller's runtime supplies a CollectiveTransport that reaches the others.
//
// Tensors: the algorithms work on a tensor's flattened, row-major elements, so any
// rank works (a scalar too, except for all-gather, which concatenates along dim 0).
// Reductions take float32, float64, int32 and int64; broadcast and all-gather any
// dtype. Integer sums wrap around on overflow; integer means truncate toward zero.
//
// Guarantees, for every Start* function:
//   - `done` runs exactly once: with the result, or with the first error. Transport
//     errors keep their code, prefixed with the collective, this member and the peer:
//     "all-reduce (ring) rank 1 of 3: receiving from rank 0: <transport's message>".
//     After an error the member stops sending, and callbacks that arrive late do
//     nothing. A failed member's peers wait for messages that never come: the
//     caller's transport must then fail their receives (abort the execution).
//   - Every member ends with bit-identical results (all-reduce, broadcast,
//     all-gather): each element's sum is computed by one member or identically by
//     several (the lower rank's partial first), and the mean divides after the sum.
//   - Members that disagree on dtype or shape never get a wrong result: a member that
//     receives a mismatched value fails with InvalidArgument naming the peer and both
//     descriptions. In all-reduce, reduce-scatter and all-gather no member succeeds
//     then, since each result depends on a chain of such checks spanning the group
//     (all-reduce and reduce-scatter members first send their dtype and shape, a
//     small int64 tensor, to the next rank around the ring, as ring chunks are 1-D).
//   - The input is only read, never written. What is sent may be a view of it (the
//     ring algorithms send the input's chunks without copying them) and may be read
//     by a peer until that peer lets go, after `done` too: like every shared tensor
//     (graph/tensor.h), the input is written in place only once RefCountIsOne() holds
//     (copy-on-write, as the runtime's in-place updates do). The result never shares
//     the input's buffer; a ring all-reduce's result was sent from (its owned chunk)
//     and is shared with a peer until the peer lets go, under the same rule.
//     Received tensors are never written (an in-process transport hands over the
//     sender's buffer), and a tensor passed to Send is never written afterwards.
//
// Thread safety: none needed. All calls into the transport and all of its callbacks
// happen on one thread. `done` may run inside Start* (a validation error, a group of
// one) or inside a transport callback; it must not destroy the transport.
#ifndef ACTORFLOW_KERNELS_COLLECTIVE_COLLECTIVE_ALGORITHMS_H_
#define ACTORFLOW_KERNELS_COLLECTIVE_COLLECTIVE_ALGORITHMS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"

namespace actorflow {

// How one member of a group reaches the others during one collective execution.
// Tags are unique within one execution; the caller's transport adds the execution's
// identity, so two executions never see each other's messages. A message is matched
// by (sender, receiver, tag) and may be sent before or after its receive is posted.
// Callbacks may run synchronously inside RecvAsync (a value that already arrived) or
// later; all calls and callbacks happen on one thread.
class CollectiveTransport {
 public:
  virtual ~CollectiveTransport() = default;
  // Hands `value` to member `to_rank` (by reference in-process: the sender never
  // writes it afterwards). An error means the message will not arrive.
  virtual Status Send(int to_rank, const std::string& tag, const Tensor& value) = 0;
  using RecvCallback = std::function<void(const Status& status, const Tensor& value)>;
  // Calls `done` at most once: with the value sent under `tag` by `from_rank`, or
  // with an error (the execution was aborted, the peer is gone). The receiver must
  // not write `value`.
  virtual void RecvAsync(int from_rank, const std::string& tag, RecvCallback done) = 0;
};

enum class ReduceOp {
  kSum,
  kMean,  // sum / group_size, after the sum (integers: truncating division)
};

enum class CollectiveAlgorithm {
  kAuto,               // see ChooseAllReduceAlgorithm
  kRing,               // bandwidth-optimal: 2 (N-1) steps, each moving 1/N of the tensor
  kRecursiveDoubling,  // latency-optimal: log2(N) rounds (+2 when N is not a power of
                       // two), each moving the whole tensor
};

// "sum", "mean"; InvalidArgument naming any other name.
StatusOr<ReduceOp> ReduceOpFromName(const std::string& name);
const char* ReduceOpName(ReduceOp op);
// "auto", "ring", "recursive_doubling"; InvalidArgument naming any other name.
StatusOr<CollectiveAlgorithm> CollectiveAlgorithmFromName(const std::string& name);
const char* CollectiveAlgorithmName(CollectiveAlgorithm algorithm);

// Below this many input bytes an all-reduce is latency-bound: kAuto picks recursive
// doubling.
inline constexpr int64_t kSmallCollectiveBytes = 64 * 1024;

// What kAuto runs for `input` in a group of `group_size`: recursive doubling when the
// input has fewer than kSmallCollectiveBytes bytes or fewer elements than members
// (ring chunks would be empty), else ring. Any other algorithm is returned as is.
// Members that disagree on the input's size may pick different algorithms: they then
// fail (InvalidArgument from the member that sees the mismatch) instead of summing.
CollectiveAlgorithm ChooseAllReduceAlgorithm(CollectiveAlgorithm requested, const Tensor& input,
                                             int group_size);

// The sizes of `parts` contiguous blocks that `elements` elements are split into:
// near-equal, the first (elements % parts) blocks one element larger. The ring's
// chunks and reduce-scatter's blocks. Precondition: elements >= 0, parts >= 1.
std::vector<int64_t> EvenSplitSizes(int64_t elements, int parts);

// Where a member stands in its group. Valid when 0 <= rank < group_size.
struct CollectiveMember {
  int rank = 0;
  int group_size = 1;
};

// The result (or the first error) of one member's part in a collective.
using CollectiveDone = std::function<void(const Status& status, Tensor result)>;

// `transport` must stay valid until `done` has run and every RecvAsync callback has
// run or been dropped. InvalidArgument (before anything is sent) naming the value for
// group_size < 1, a rank or root outside [0, group_size), an uninitialized or device
// input, and a dtype a function does not take.

// Every member passes a tensor of the same dtype and shape (any shape: the flattened
// elements are reduced); each gets the element-wise `op` of all of them, in its
// input's shape.
void StartAllReduce(CollectiveTransport* transport, CollectiveMember member, const Tensor& input,
                    ReduceOp op, CollectiveAlgorithm algorithm, CollectiveDone done);

// Every member passes a tensor of the same dtype and shape (non-root members' values
// are ignored, their dtype and shape checked); each gets root's value. A binomial
// tree: ceil(log2(N)) steps.
void StartBroadcast(CollectiveTransport* transport, CollectiveMember member, int root_rank,
                    const Tensor& input, CollectiveDone done);

// The concatenation along dim 0 of every member's input, in rank order. Inputs have
// rank >= 1 and may differ in dim 0, not in dtype or the other dims: a member whose
// input differs from rank 0's makes every member fail with InvalidArgument naming
// that rank and both shapes. A ring: N-1 steps.
void StartAllGather(CollectiveTransport* transport, CollectiveMember member, const Tensor& input,
                    CollectiveDone done);

// Every member passes a tensor of the same dtype and shape, whose flattened elements
// are split into EvenSplitSizes(elements, group_size) blocks; member r gets the
// element-wise `op` of block r over all members, as a 1-D tensor [block size]. A
// ring: N-1 steps.
void StartReduceScatter(CollectiveTransport* transport, CollectiveMember member,
                        const Tensor& input, ReduceOp op, CollectiveDone done);

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_COLLECTIVE_COLLECTIVE_ALGORITHMS_H_
