// Binomial-tree broadcast: one member's part.
//
// Members are numbered relative to the root, v = (rank - root) mod N. Member v > 0
// receives from v - lowbit(v) (lowbit: its lowest set bit); then every member sends
// to v + m for m = lowbit(v)/2, lowbit(v)/4, .. 1 where v + m < N (the root, v = 0,
// starts from the smallest power of two >= N). The value reaches everyone in
// ceil(log2(N)) steps, larger subtrees first.
//
// The root sends a copy of its input, never the caller's buffer (the root finishes
// at once, and its caller may then write the input while a peer still reads it);
// other members forward the received tensor unchanged. Each member checks what it
// receives against its own input's dtype and shape.
#include <memory>
#include <string>
#include <utility>

#include "graph/shape.h"
#include "graph/tensor.h"
#include "kernels/collective/collective_algorithms.h"
#include "kernels/collective/collective_run.h"

namespace actorflow {
namespace collective_internal {
namespace {

class BinomialBroadcast final : public CollectiveRun {
 public:
  BinomialBroadcast(CollectiveTransport* transport, CollectiveMember member, int root_rank,
                    const Tensor& input, CollectiveDone done)
      : CollectiveRun("broadcast (root " + std::to_string(root_rank) + ")", "broadcast", transport,
                      member, std::move(done)),
        root_rank_(root_rank),
        dtype_(input.dtype()),
        shape_(input.shape()) {}

  void Start(const Tensor& input) {
    if (Relative(rank()) == 0) {
      const Tensor sent = input.DeepCopy();
      if (!SendToChildren(sent)) return;
      return Finish(input.DeepCopy());
    }
    const int parent = Parent();
    ReceiveFrom(parent, "binomial", [this, parent](const Tensor& value) {
      Status s = CheckSameShape(parent, "root's value", value, dtype_, shape_);
      if (!s.ok()) return Fail(s);
      if (!SendToChildren(value)) return;
      Finish(value.DeepCopy());  // the result gets a buffer of its own
    });
  }

 private:
  int Relative(int r) const { return (r - root_rank_ + group_size()) % group_size(); }
  int Absolute(int v) const { return (v + root_rank_) % group_size(); }

  // The lowest set bit of this member's relative rank; for the root, the smallest
  // power of two >= N.
  int LowBit() const {
    const int v = Relative(rank());
    int bit = 1;
    while (bit < group_size() && (v & bit) == 0) bit *= 2;
    return bit;
  }
  int Parent() const { return Absolute(Relative(rank()) - LowBit()); }

  bool SendToChildren(const Tensor& value) {
    const int v = Relative(rank());
    for (int m = LowBit() / 2; m >= 1; m /= 2) {
      if (v + m >= group_size()) continue;
      if (!SendTo(Absolute(v + m), "binomial", value)) return false;
    }
    return true;
  }

  const int root_rank_;
  const DType dtype_;
  const Shape shape_;
};

}  // namespace

void StartBinomialBroadcast(CollectiveTransport* transport, CollectiveMember member,
                            int root_rank, const Tensor& input, CollectiveDone done) {
  auto run =
      std::make_shared<BinomialBroadcast>(transport, member, root_rank, input, std::move(done));
  run->Start(input);
}

}  // namespace collective_internal
}  // namespace actorflow
