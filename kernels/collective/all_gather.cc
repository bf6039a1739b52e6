// Ring all-gather: one member's part.
//
// Block b is member b's input, with its own shape. Steps s = 0 .. N-2: member r sends
// block (r - s) mod N to r+1 and receives block (r - s - 1) mod N from r-1, keeping
// it as received (read-only) and forwarding it at the next step. After N-1 steps
// every member holds every block and concatenates them in rank order.
//
// The blocks are checked against block 0 only once all have arrived: every member
// then sees the same blocks and fails the same way, while a member that stopped
// forwarding at the first bad block would leave the members after it waiting.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/shape.h"
#include "graph/tensor.h"
#include "kernels/collective/collective_algorithms.h"
#include "kernels/collective/collective_run.h"
#include "kernels/collective/element_ops.h"

namespace actorflow {
namespace collective_internal {
namespace {

// True when `a` and `b` may be concatenated along dim 0: same dtype, rank >= 1 and
// the same dims after the first.
bool Concatenable(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.rank() != b.rank() || a.rank() < 1) return false;
  for (int i = 1; i < a.rank(); ++i) {
    if (a.dim(i) != b.dim(i)) return false;
  }
  return true;
}

class RingAllGather final : public CollectiveRun {
 public:
  RingAllGather(CollectiveTransport* transport, CollectiveMember member, const Tensor& input,
                CollectiveDone done)
      : CollectiveRun("all-gather", "all-gather", transport, member, std::move(done)),
        blocks_(static_cast<size_t>(member.group_size)) {
    // Never send the caller's buffer: the caller may write it once `done` has run,
    // while a peer still reads it.
    blocks_[static_cast<size_t>(rank())] = input.DeepCopy();
  }

  void Start() {
    if (!SendStep(0)) return;
    ReceiveStep(0);
  }

 private:
  int Block(int index) const { return (index % group_size() + group_size()) % group_size(); }
  std::string StepName(int step) const { return "ring/" + std::to_string(step); }

  bool SendStep(int step) {
    return SendTo(RingPeer(1), StepName(step), blocks_[Block(rank() - step)]);
  }

  void ReceiveStep(int step) {
    const int block = Block(rank() - step - 1);
    ReceiveFrom(RingPeer(-1), StepName(step), [this, step, block](const Tensor& value) {
      blocks_[block] = value;  // forwarded as is, never written
      if (step + 1 == group_size() - 1) return Complete();
      if (!SendStep(step + 1)) return;
      ReceiveStep(step + 1);
    });
  }

  void Complete() {
    const Tensor& first = blocks_[0];
    if (first.rank() < 1) {
      return Fail(InvalidArgument("rank 0 passed " + first.DebugString() +
                                  ": all-gather inputs have rank >= 1"));
    }
    int64_t rows = first.dim(0);
    for (int b = 1; b < group_size(); ++b) {
      const Tensor& block = blocks_[b];
      if (!Concatenable(first, block)) {
        return Fail(InvalidArgument(
            "rank " + std::to_string(b) + " passed " + block.DebugString() + " but rank 0 passed " +
            first.DebugString() +
            ": all-gather inputs have rank >= 1 and differ only in dim 0, not in dtype or the "
            "other dims"));
      }
      rows += block.dim(0);
    }
    std::vector<int64_t> dims = first.shape().dims();
    dims[0] = rows;
    Finish(ConcatenateBytes(blocks_, first.dtype(), Shape(std::move(dims))));
  }

  std::vector<Tensor> blocks_;  // block b: member b's input [rows_b, d1, d2, ...]
};

}  // namespace

void StartRingAllGather(CollectiveTransport* transport, CollectiveMember member,
                        const Tensor& input, CollectiveDone done) {
  auto run = std::make_shared<RingAllGather>(transport, member, input, std::move(done));
  run->Start();
}

}  // namespace collective_internal
}  // namespace actorflow
