#include "graph/shape.h"

#include <limits>

#include "graph/checked_size.h"

namespace actorflow {

void Shape::Assign(const int64_t* dims, size_t rank) {
  rank_ = static_cast<int>(rank);
  if (is_inline()) {
    for (size_t i = 0; i < rank; ++i) inline_[i] = dims[i];
  } else {
    heap_.assign(dims, dims + rank);
  }
}

bool Shape::IsFullyDefined() const {
  if (unknown_rank_) return false;
  for (int64_t d : dims()) {
    if (d < 0) return false;
  }
  return true;
}

int64_t Shape::num_elements() const {
  if (!IsFullyDefined()) return -1;
  uint64_t n = 1;  // unsigned: an unchecked overflow wraps instead of being undefined
  for (int64_t d : dims()) n *= static_cast<uint64_t>(d);
  return static_cast<int64_t>(n);
}

Status Shape::CheckRankLimit() const {
  if (unknown_rank_ || rank() <= kMaxRank) return Status::OK();
  // Not the whole shape: its text would be as long as the input that made it.
  return InvalidArgument("a shape of rank " + std::to_string(rank()) +
                         " has more dimensions than a tensor may have (at most " +
                         std::to_string(kMaxRank) + ")");
}

StatusOr<int64_t> Shape::CheckedNumElements() const {
  if (unknown_rank_) return InvalidArgument("shape " + ToString() + " has an unknown rank");
  AF_RETURN_IF_ERROR(CheckRankLimit());
  int64_t n = 1;
  bool overflowed = false;
  for (int64_t d : dims()) {
    if (d < 0) {
      return InvalidArgument("shape " + ToString() + " has " +
                             (d == kUnknownDim ? std::string("an unknown dimension")
                                               : "a negative dimension " + std::to_string(d)) +
                             "; a tensor's dimensions are integers >= 0");
    }
    if (!overflowed && !CheckedMul(n, d, &n)) overflowed = true;
  }
  // A 0 dim anywhere makes the product 0, whatever overflowed before it.
  for (int64_t d : dims()) {
    if (d == 0) return int64_t{0};
  }
  if (overflowed) {
    return InvalidArgument("shape " + ToString() +
                           " has more elements than an int64 can count (at most " +
                           std::to_string(std::numeric_limits<int64_t>::max()) + ")");
  }
  return n;
}

bool Shape::IsCompatibleWith(const Shape& other) const {
  if (unknown_rank_ || other.unknown_rank_) return true;
  if (rank_ != other.rank_) return false;
  for (int i = 0; i < rank_; ++i) {
    if (dim(i) >= 0 && other.dim(i) >= 0 && dim(i) != other.dim(i)) return false;
  }
  return true;
}

Shape Shape::MergeWith(const Shape& other) const {
  if (unknown_rank_) return other;
  if (other.unknown_rank_) return *this;
  Shape merged = *this;
  for (int i = 0; i < rank_ && i < other.rank_; ++i) {
    if (merged.dim(i) < 0) merged.set_dim(i, other.dim(i));
  }
  return merged;
}

std::string Shape::ToString() const {
  if (unknown_rank_) return "<unknown>";
  std::string out = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i > 0) out += ",";
    out += dim(i) < 0 ? "?" : std::to_string(dim(i));
  }
  return out + "]";
}

}  // namespace actorflow
