// Ring all-reduce and ring reduce-scatter: one member's part.
//
// The flattened input [n] is split into N chunks of EvenSplitSizes(n, N) elements.
// Reduce-scatter phase, steps s = 0 .. N-2: member r sends chunk (r - s + shift) to
// r+1 and receives chunk (r - s - 1 + shift) from r-1, adding it to its own. After
// it, member r holds the full sum of chunk (r + 1 + shift), its owned chunk, computed
// there and nowhere else. All-reduce (shift 0) then runs an all-gather phase, steps
// s = 0 .. N-2: member r sends chunk (r + 1 + shift - s) to r+1 and receives chunk
// (r + shift - s) from r-1, keeping the received final value as is. Every member so
// ends with the same bits. Reduce-scatter (shift -1, so that member r owns chunk r)
// stops after the first phase.
//
// Chunks are immutable once made: the initial ones are views of the member's copy of
// its input, later ones are fresh sums or a peer's (read-only) final values. So a
// chunk passed to Send is never written afterwards.
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

// a mod n in [0, n), for a of either sign.
int Mod(int a, int n) { return (a % n + n) % n; }

class RingReduce final : public CollectiveRun {
 public:
  enum class Kind { kAllReduce, kReduceScatter };

  RingReduce(Kind kind, CollectiveTransport* transport, CollectiveMember member,
             const Tensor& input, ReduceOp op, CollectiveDone done)
      : CollectiveRun(kind == Kind::kAllReduce ? "all-reduce (ring)" : "reduce-scatter",
                      kind == Kind::kAllReduce ? "all-reduce" : "reduce-scatter", transport,
                      member, std::move(done)),
        kind_(kind),
        op_(op),
        dtype_(input.dtype()),
        shape_(input.shape()),
        shift_(kind == Kind::kAllReduce ? 0 : -1) {
    // Sent chunks are views of this copy, never of the caller's input, which the
    // caller may write once `done` has run while a peer still reads.
    Tensor own = Flattened(input).DeepCopy();
    StatusOr<std::vector<Tensor>> chunks =
        own.SplitSizes(EvenSplitSizes(own.NumElements(), group_size()));
    chunks_ = std::move(chunks).value();  // the sizes add up by construction
    const int phase_steps = group_size() - 1;
    total_steps_ = kind == Kind::kAllReduce ? 2 * phase_steps : phase_steps;
  }

  // The first step's chunk goes out before the predecessor's description arrives:
  // the check guards what this member receives, not what it sends.
  void Start(const Tensor& input) {
    if (!SendDescription(input)) return;
    if (!SendStep(0)) return;
    ReceiveDescription(input, [this] { ReceiveStep(0); });
  }

 private:
  int Chunk(int index) const { return Mod(index, group_size()); }
  bool InReducePhase(int step) const { return step < group_size() - 1; }
  // Steps of the all-gather phase count from 0 again.
  int GatherStep(int step) const { return step - (group_size() - 1); }

  int SentChunk(int step) const {
    return InReducePhase(step) ? Chunk(rank() - step + shift_)
                               : Chunk(rank() + 1 + shift_ - GatherStep(step));
  }
  int ReceivedChunk(int step) const {
    return InReducePhase(step) ? Chunk(rank() - step - 1 + shift_)
                               : Chunk(rank() + shift_ - GatherStep(step));
  }
  std::string StepName(int step) const {
    if (kind_ == Kind::kReduceScatter) return "ring/" + std::to_string(step);
    return InReducePhase(step) ? "ring/reduce-scatter/" + std::to_string(step)
                               : "ring/all-gather/" + std::to_string(GatherStep(step));
  }

  bool SendStep(int step) { return SendTo(RingPeer(1), StepName(step), chunks_[SentChunk(step)]); }

  void ReceiveStep(int step) {
    const int predecessor = RingPeer(-1);
    const int chunk = ReceivedChunk(step);
    ReceiveFrom(predecessor, StepName(step), [this, step, chunk, predecessor](const Tensor& value) {
      Tensor& mine = chunks_[chunk];
      Status s = CheckElements(predecessor, "chunk " + std::to_string(chunk), value, dtype_,
                               mine.NumElements());
      if (!s.ok()) return Fail(s);
      if (InReducePhase(step)) {
        mine = AddElements(value, mine, Shape{mine.NumElements()});
        // The owned chunk is complete: the mean divides here, once for everyone.
        if (step == group_size() - 2 && op_ == ReduceOp::kMean) {
          mine = DivideElements(mine, group_size());
        }
      } else {
        mine = value;  // the owner's final value, read-only
      }
      if (step + 1 == total_steps_) return Complete();
      if (!SendStep(step + 1)) return;
      ReceiveStep(step + 1);
    });
  }

  void Complete() {
    if (kind_ == Kind::kReduceScatter) {
      // A fresh sum or quotient made by this member and never sent: its own buffer.
      return Finish(std::move(chunks_[rank()]));
    }
    Finish(ConcatenateBytes(chunks_, dtype_, shape_));
  }

  const Kind kind_;
  const ReduceOp op_;
  const DType dtype_;
  const Shape shape_;  // the input's, the all-reduce result's
  const int shift_;
  int total_steps_ = 0;
  std::vector<Tensor> chunks_;  // chunk c: [EvenSplitSizes(n, N)[c]]
};

void StartRingReduce(RingReduce::Kind kind, CollectiveTransport* transport,
                     CollectiveMember member, const Tensor& input, ReduceOp op,
                     CollectiveDone done) {
  auto run = std::make_shared<RingReduce>(kind, transport, member, input, op, std::move(done));
  run->Start(input);
}

}  // namespace

void StartRingAllReduce(CollectiveTransport* transport, CollectiveMember member,
                        const Tensor& input, ReduceOp op, CollectiveDone done) {
  StartRingReduce(RingReduce::Kind::kAllReduce, transport, member, input, op, std::move(done));
}

void StartRingReduceScatter(CollectiveTransport* transport, CollectiveMember member,
                            const Tensor& input, ReduceOp op, CollectiveDone done) {
  StartRingReduce(RingReduce::Kind::kReduceScatter, transport, member, input, op,
                  std::move(done));
}

}  // namespace collective_internal
}  // namespace actorflow
