// Recursive-doubling all-reduce: one member's part.
//
// With P the largest power of two <= N, members 0 .. P-1 form the core and members
// P .. N-1 are extras (N - P of them, fewer than P):
//   1. Fold: extra e sends its input to core member e - P, which adds it to its own
//      (its own values first: the lower rank's).
//   2. Rounds k = 0 .. log2(P)-1: core member r exchanges its whole partial sum with
//      r ^ 2^k and both compute lower rank's partial + higher rank's partial, the same
//      operation on the same operands. After round k the 2^(k+1) members that agree
//      on all rank bits above bit k hold the same bits, so the core ends with one set
//      of bits; the mean then divides identically everywhere.
//   3. Unfold: core member r < N - P sends the result to extra r + P.
//
// Partials are fresh tensors made by this member, never written after they are made,
// so one passed to Send stays as sent. Each exchange checks the received tensor's
// dtype and shape against this member's input; a ring-neighbour description
// exchange (collective_run.h) first guards against members that ran another
// algorithm because their input's size differed.
#include <memory>
#include <string>
#include <utility>

#include "graph/shape.h"
#include "graph/tensor.h"
#include "kernels/collective/collective_algorithms.h"
#include "kernels/collective/collective_run.h"
#include "kernels/collective/element_ops.h"

namespace actorflow {
namespace collective_internal {
namespace {

class RecursiveDoubling final : public CollectiveRun {
 public:
  RecursiveDoubling(CollectiveTransport* transport, CollectiveMember member, const Tensor& input,
                    ReduceOp op, CollectiveDone done)
      : CollectiveRun("all-reduce (recursive doubling)", "all-reduce", transport, member,
                      std::move(done)),
        op_(op),
        dtype_(input.dtype()),
        shape_(input.shape()),
        partial_(input.DeepCopy()) {  // never send the caller's buffer
    while (core_size_ * 2 <= group_size()) core_size_ *= 2;
    for (int span = 1; span < core_size_; span *= 2) ++rounds_;
  }

  // Whatever does not depend on a received value goes out before the description
  // check: the check guards what this member receives, not what it sends.
  void Start(const Tensor& input) {
    if (!SendDescription(input)) return;
    if (IsExtra()) {
      if (!SendTo(rank() - core_size_, "recursive-doubling/fold", partial_)) return;
      return ReceiveDescription(input, [this] { ReceiveResultFromCore(); });
    }
    if (HasExtra()) return ReceiveDescription(input, [this] { ReceiveFold(); });
    if (!SendRound(0)) return;
    ReceiveDescription(input, [this] { ReceiveRound(0); });
  }

 private:
  bool IsExtra() const { return rank() >= core_size_; }
  bool HasExtra() const { return rank() + core_size_ < group_size(); }
  Status CheckShape(int from_rank, const std::string& what, const Tensor& value) const {
    return CheckSameShape(from_rank, what, value, dtype_, shape_);
  }

  void ReceiveFold() {
    const int extra = rank() + core_size_;
    ReceiveFrom(extra, "recursive-doubling/fold", [this, extra](const Tensor& value) {
      Status s = CheckShape(extra, "its input", value);
      if (!s.ok()) return Fail(s);
      partial_ = AddElements(partial_, value, shape_);  // this member's rank is lower
      if (!SendRound(0)) return;
      ReceiveRound(0);
    });
  }

  std::string RoundStep(int round) const {
    return "recursive-doubling/round/" + std::to_string(round);
  }
  int Partner(int round) const { return rank() ^ (1 << round); }

  // Round `rounds_` does not exist: nothing to send.
  bool SendRound(int round) {
    if (round == rounds_) return true;
    return SendTo(Partner(round), RoundStep(round), partial_);
  }

  void ReceiveRound(int round) {
    if (round == rounds_) return CompleteCore();
    const int partner = Partner(round);
    ReceiveFrom(partner, RoundStep(round), [this, round, partner](const Tensor& value) {
      Status s = CheckShape(partner, "its partial sum", value);
      if (!s.ok()) return Fail(s);
      partial_ = rank() < partner ? AddElements(partial_, value, shape_)
                                  : AddElements(value, partial_, shape_);
      if (!SendRound(round + 1)) return;
      ReceiveRound(round + 1);
    });
  }

  void CompleteCore() {
    // partial_ is this member's own fresh sum, not yet sent after its last round.
    Tensor result = op_ == ReduceOp::kMean ? DivideElements(partial_, group_size())
                                           : std::move(partial_);
    if (!HasExtra()) return Finish(std::move(result));
    if (!SendTo(rank() + core_size_, "recursive-doubling/unfold", result)) return;
    Finish(result.DeepCopy());  // the sent tensor stays the extra's to read
  }

  void ReceiveResultFromCore() {
    const int core = rank() - core_size_;
    ReceiveFrom(core, "recursive-doubling/unfold", [this, core](const Tensor& value) {
      Status s = CheckShape(core, "the result", value);
      if (!s.ok()) return Fail(s);
      Finish(value.DeepCopy());  // the result gets a buffer of its own
    });
  }

  const ReduceOp op_;
  const DType dtype_;
  const Shape shape_;  // the input's; every partial has it
  int core_size_ = 1;  // the largest power of two <= group size
  int rounds_ = 0;     // log2(core_size_)
  Tensor partial_;
};

}  // namespace

void StartRecursiveDoublingAllReduce(CollectiveTransport* transport, CollectiveMember member,
                                     const Tensor& input, ReduceOp op, CollectiveDone done) {
  auto run = std::make_shared<RecursiveDoubling>(transport, member, input, op, std::move(done));
  run->Start(input);
}

}  // namespace collective_internal
}  // namespace actorflow
