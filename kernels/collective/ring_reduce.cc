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
// Chunks are immutable once made: the initial ones are views of the caller's input
// (which, shared, its owner must not write in place: graph/tensor.h), later ones are
// fresh partial sums, the owned chunk's final value or a peer's (read-only) final
// values. So a chunk passed to Send is never written afterwards.
//
// Memory: an all-reduce writes its result's buffer once. The owned chunk's final sum
// is computed straight into the result (and sent from there: the result is then
// shared with the successor until it lets go), each received final value is copied
// into it, and nothing else of the input is copied. For 2 members and n floats a
// member reads and writes 4.5 n floats where a copy of the input, fresh sums and a
// concatenation took 7.5 n.
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
    // Sent chunks are views of the caller's input: they share its buffer, so neither
    // the caller nor anyone else writes it in place while a peer may still read them.
    const std::vector<int64_t> sizes = EvenSplitSizes(input.NumElements(), group_size());
    chunks_ = Flattened(input).SplitSizes(sizes).value();  // sizes add up by construction
    if (kind == Kind::kAllReduce) {
      result_ = Tensor::Uninitialized(dtype_, Shape{input.NumElements()});
      result_chunks_ = result_.SplitSizes(sizes).value();
    }
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
        // The owned chunk is complete: the mean divides here, once for everyone, and
        // an all-reduce's final value goes straight into the result, sent from there.
        const bool owned_complete = step == group_size() - 2;
        Tensor sum = owned_complete && kind_ == Kind::kAllReduce
                         ? result_chunks_[chunk]
                         : Tensor::Uninitialized(dtype_, Shape{mine.NumElements()});
        const int divisor = owned_complete && op_ == ReduceOp::kMean ? group_size() : 1;
        AddElementsInto(value, mine, &sum, divisor);
        mine = std::move(sum);
      } else {
        CopyElementsInto(value, &result_chunks_[chunk]);
        mine = value;  // the owner's final value, read-only, forwarded as it came
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
    // The run keeps no reference: the caller's copy-on-write sees only the peers'.
    Tensor result = result_.Reshaped(shape_).value();  // same element count by construction
    chunks_.clear();
    result_chunks_.clear();
    result_ = Tensor();
    Finish(std::move(result));
  }

  const Kind kind_;
  const ReduceOp op_;
  const DType dtype_;
  const Shape shape_;  // the input's, the all-reduce result's
  const int shift_;
  int total_steps_ = 0;
  std::vector<Tensor> chunks_;  // chunk c: [EvenSplitSizes(n, N)[c]]
  // All-reduce only: the result [n], and chunk c of it as a view.
  Tensor result_;
  std::vector<Tensor> result_chunks_;
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
