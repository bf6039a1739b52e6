#include "kernels/collective/collective_run.h"

#include <cassert>
#include <cstdint>
#include <utility>
#include <vector>

namespace actorflow {
namespace collective_internal {
namespace {

constexpr int64_t kDTypeCount = static_cast<int64_t>(DType::kBool) + 1;

// A description of `t` a peer can compare with its own: int64 [2 + rank] holding
// the dtype's enum value, the rank and the dims.
Tensor EncodeDescription(const Tensor& t) {
  std::vector<int64_t> words = {static_cast<int64_t>(t.dtype()), t.rank()};
  for (int64_t dim : t.shape().dims()) words.push_back(dim);
  return Tensor::FromVector(words);
}

// "float32[2,3]" for an encoded description (as Tensor::DebugString names tensors).
std::string DescriptionString(const Tensor& encoded) {
  const std::string malformed = "a malformed description " + encoded.DebugString();
  if (encoded.dtype() != DType::kInt64 || encoded.rank() != 1 || encoded.NumElements() < 2) {
    return malformed;
  }
  const int64_t* words = encoded.data<int64_t>();
  if (words[0] < 0 || words[0] >= kDTypeCount || words[1] != encoded.NumElements() - 2) {
    return malformed;
  }
  return std::string(DTypeName(static_cast<DType>(words[0]))) +
         Shape(std::vector<int64_t>(words + 2, words + encoded.NumElements())).ToString();
}

bool SameWords(const Tensor& a, const Tensor& b) {
  if (a.dtype() != DType::kInt64 || b.dtype() != DType::kInt64) return false;
  if (a.NumElements() != b.NumElements()) return false;
  for (int64_t i = 0; i < a.NumElements(); ++i) {
    if (a.data<int64_t>()[i] != b.data<int64_t>()[i]) return false;
  }
  return true;
}

Status Mismatch(int from_rank, const std::string& what, const std::string& theirs,
                const std::string& ours) {
  return InvalidArgument("rank " + std::to_string(from_rank) + " sent " + what + " " + theirs +
                         " where this member has " + ours +
                         ": every member must pass the same dtype and shape");
}

}  // namespace

CollectiveRun::CollectiveRun(std::string name, std::string tag_prefix,
                             CollectiveTransport* transport, CollectiveMember member,
                             CollectiveDone done)
    : name_(std::move(name)),
      tag_prefix_(std::move(tag_prefix)),
      transport_(transport),
      member_(member),
      done_(std::move(done)) {}

int CollectiveRun::RingPeer(int offset) const {
  const int n = group_size();
  return ((rank() + offset) % n + n) % n;
}

std::string CollectiveRun::Who() const {
  return name_ + " rank " + std::to_string(rank()) + " of " + std::to_string(group_size());
}

std::string CollectiveRun::Tag(const std::string& step, int from_rank, int to_rank) const {
  // The ranks make a tag unique within the execution even for a transport that
  // matches messages by receiver and tag only.
  return tag_prefix_ + "/" + step + "/" + std::to_string(from_rank) + "->" +
         std::to_string(to_rank);
}

bool CollectiveRun::SendTo(int to_rank, const std::string& step, const Tensor& value) {
  if (finished_) return false;
  Status s = transport_->Send(to_rank, Tag(step, rank(), to_rank), value);
  if (s.ok()) return true;
  Fail(s.WithContext("sending to rank " + std::to_string(to_rank)));
  return false;
}

void CollectiveRun::ReceiveFrom(int from_rank, const std::string& step,
                                std::function<void(const Tensor& value)> on_value) {
  if (finished_) return;
  std::shared_ptr<CollectiveRun> self = shared_from_this();
  transport_->RecvAsync(
      from_rank, Tag(step, from_rank, rank()),
      [self, from_rank, on_value = std::move(on_value)](const Status& status,
                                                        const Tensor& value) {
        if (self->finished_) return;  // a late callback after an error
        const std::string receiving = "receiving from rank " + std::to_string(from_rank);
        if (!status.ok()) return self->Fail(status.WithContext(receiving));
        if (!value.IsInitialized() || value.IsOnDevice()) {
          return self->Fail(Internal(receiving + ": the transport delivered " +
                                     value.DebugString() + ", not a tensor in host memory"));
        }
        on_value(value);
      });
}

bool CollectiveRun::SendDescription(const Tensor& input) {
  return SendTo(RingPeer(1), "description", EncodeDescription(input));
}

void CollectiveRun::ReceiveDescription(const Tensor& input, std::function<void()> then) {
  const int predecessor = RingPeer(-1);
  // Only the description is kept, not the input: the run may outlive `done`.
  ReceiveFrom(predecessor, "description",
              [this, predecessor, ours = EncodeDescription(input), ours_text = input.DebugString(),
               then = std::move(then)](const Tensor& theirs) {
                if (!SameWords(theirs, ours)) {
                  return Fail(
                      Mismatch(predecessor, "its input", DescriptionString(theirs), ours_text));
                }
                then();
              });
}

Status CollectiveRun::CheckElements(int from_rank, const std::string& what,
                                    const Tensor& received, DType dtype, int64_t elements) {
  if (received.dtype() == dtype && received.NumElements() == elements) return Status::OK();
  return Mismatch(from_rank, what, received.DebugString(),
                  std::string(DTypeName(dtype)) + "[" + std::to_string(elements) + "]");
}

Status CollectiveRun::CheckSameShape(int from_rank, const std::string& what,
                                     const Tensor& received, DType dtype, const Shape& shape) {
  if (received.dtype() == dtype && received.shape() == shape) return Status::OK();
  return Mismatch(from_rank, what, received.DebugString(), DTypeName(dtype) + shape.ToString());
}

void CollectiveRun::Fail(const Status& status) {
  assert(!status.ok());
  if (finished_) return;
  finished_ = true;
  CollectiveDone done = std::move(done_);
  done_ = nullptr;
  done(status.WithContext(Who()), Tensor());
}

void CollectiveRun::Finish(Tensor result) {
  if (finished_) return;
  finished_ = true;
  CollectiveDone done = std::move(done_);
  done_ = nullptr;
  done(Status::OK(), std::move(result));
}

}  // namespace collective_internal
}  // namespace actorflow
