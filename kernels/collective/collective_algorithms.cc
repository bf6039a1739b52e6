// The public entry points: names, the kAuto choice, argument checks and the group of
// one; the algorithms themselves live in the other files of this folder.
#include "kernels/collective/collective_algorithms.h"

#include <string>
#include <utility>

#include "graph/types.h"
#include "kernels/collective/collective_run.h"
#include "kernels/collective/element_ops.h"

namespace actorflow {
namespace {

using collective_internal::Flattened;
using collective_internal::IsReducibleDType;

std::string Member(const std::string& collective, CollectiveMember member) {
  return collective + " rank " + std::to_string(member.rank) + " of " +
         std::to_string(member.group_size);
}

Status CheckMember(const std::string& collective, CollectiveMember member) {
  if (member.group_size < 1) {
    return InvalidArgument(collective + ": group_size " + std::to_string(member.group_size) +
                           " is not a group size (at least 1)");
  }
  if (member.rank < 0 || member.rank >= member.group_size) {
    return InvalidArgument(collective + ": rank " + std::to_string(member.rank) +
                           " is outside the group of " + std::to_string(member.group_size) +
                           " (0 <= rank < group_size)");
  }
  return Status::OK();
}

Status CheckInput(const std::string& who, const Tensor& input, bool reduction) {
  if (!input.IsInitialized() || input.IsOnDevice()) {
    return InvalidArgument(who + ": the input " + input.DebugString() +
                           " is not a tensor in host memory (copy device tensors to the host)");
  }
  if (reduction && !IsReducibleDType(input.dtype())) {
    return InvalidArgument(who + ": cannot reduce " + DTypeName(input.dtype()) + " tensors (" +
                           input.DebugString() + "); reductions take float32, float64, int32 "
                           "or int64");
  }
  return Status::OK();
}

}  // namespace

StatusOr<ReduceOp> ReduceOpFromName(const std::string& name) {
  if (name == "sum") return ReduceOp::kSum;
  if (name == "mean") return ReduceOp::kMean;
  return InvalidArgument("unknown reduce op '" + name + "': expected \"sum\" or \"mean\"");
}

const char* ReduceOpName(ReduceOp op) { return op == ReduceOp::kSum ? "sum" : "mean"; }

StatusOr<CollectiveAlgorithm> CollectiveAlgorithmFromName(const std::string& name) {
  if (name == "auto") return CollectiveAlgorithm::kAuto;
  if (name == "ring") return CollectiveAlgorithm::kRing;
  if (name == "recursive_doubling") return CollectiveAlgorithm::kRecursiveDoubling;
  return InvalidArgument("unknown collective algorithm '" + name +
                         "': expected \"auto\", \"ring\" or \"recursive_doubling\"");
}

const char* CollectiveAlgorithmName(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
    case CollectiveAlgorithm::kAuto: return "auto";
    case CollectiveAlgorithm::kRing: return "ring";
    case CollectiveAlgorithm::kRecursiveDoubling: return "recursive_doubling";
  }
  return "auto";
}

CollectiveAlgorithm ChooseAllReduceAlgorithm(CollectiveAlgorithm requested, const Tensor& input,
                                             int group_size) {
  if (requested != CollectiveAlgorithm::kAuto) return requested;
  const bool small = static_cast<int64_t>(input.TotalBytes()) < kSmallCollectiveBytes;
  return small || input.NumElements() < group_size ? CollectiveAlgorithm::kRecursiveDoubling
                                                   : CollectiveAlgorithm::kRing;
}

std::vector<int64_t> EvenSplitSizes(int64_t elements, int parts) {
  std::vector<int64_t> sizes(static_cast<size_t>(parts), elements / parts);
  for (int64_t i = 0; i < elements % parts; ++i) ++sizes[static_cast<size_t>(i)];
  return sizes;
}

void StartAllReduce(CollectiveTransport* transport, CollectiveMember member, const Tensor& input,
                    ReduceOp op, CollectiveAlgorithm algorithm, CollectiveDone done) {
  const CollectiveAlgorithm chosen =
      ChooseAllReduceAlgorithm(algorithm, input, member.group_size);
  const std::string collective = chosen == CollectiveAlgorithm::kRing
                                     ? "all-reduce (ring)"
                                     : "all-reduce (recursive doubling)";
  Status s = CheckMember(collective, member);
  if (s.ok()) s = CheckInput(Member(collective, member), input, /*reduction=*/true);
  if (!s.ok()) return done(s, Tensor());
  // A sum over one member is the input; so is its mean (x / 1 == x exactly).
  if (member.group_size == 1) return done(Status::OK(), input.DeepCopy());
  if (chosen == CollectiveAlgorithm::kRing) {
    return collective_internal::StartRingAllReduce(transport, member, input, op, std::move(done));
  }
  collective_internal::StartRecursiveDoublingAllReduce(transport, member, input, op,
                                                       std::move(done));
}

void StartBroadcast(CollectiveTransport* transport, CollectiveMember member, int root_rank,
                    const Tensor& input, CollectiveDone done) {
  const std::string collective = "broadcast (root " + std::to_string(root_rank) + ")";
  Status s = CheckMember(collective, member);
  if (s.ok() && (root_rank < 0 || root_rank >= member.group_size)) {
    s = InvalidArgument(collective + ": root_rank " + std::to_string(root_rank) +
                        " is outside the group of " + std::to_string(member.group_size) +
                        " (0 <= root_rank < group_size)");
  }
  if (s.ok()) s = CheckInput(Member(collective, member), input, /*reduction=*/false);
  if (!s.ok()) return done(s, Tensor());
  if (member.group_size == 1) return done(Status::OK(), input.DeepCopy());
  collective_internal::StartBinomialBroadcast(transport, member, root_rank, input,
                                              std::move(done));
}

void StartAllGather(CollectiveTransport* transport, CollectiveMember member, const Tensor& input,
                    CollectiveDone done) {
  const std::string collective = "all-gather";
  Status s = CheckMember(collective, member);
  if (s.ok()) s = CheckInput(Member(collective, member), input, /*reduction=*/false);
  if (s.ok() && input.rank() < 1) {
    s = InvalidArgument(Member(collective, member) + ": the input " + input.DebugString() +
                        " is a scalar; all-gather concatenates along dim 0 (reshape it to [1])");
  }
  if (!s.ok()) return done(s, Tensor());
  if (member.group_size == 1) return done(Status::OK(), input.DeepCopy());
  collective_internal::StartRingAllGather(transport, member, input, std::move(done));
}

void StartReduceScatter(CollectiveTransport* transport, CollectiveMember member,
                        const Tensor& input, ReduceOp op, CollectiveDone done) {
  const std::string collective = "reduce-scatter";
  Status s = CheckMember(collective, member);
  if (s.ok()) s = CheckInput(Member(collective, member), input, /*reduction=*/true);
  if (!s.ok()) return done(s, Tensor());
  // One block: all the elements, as a 1-D tensor like every other group size gives.
  if (member.group_size == 1) return done(Status::OK(), Flattened(input).DeepCopy());
  collective_internal::StartRingReduceScatter(transport, member, input, op, std::move(done));
}

}  // namespace actorflow
