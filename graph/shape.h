// Shape: the dimensions of a tensor. A dimension of -1 is unknown (placeholders
// such as [-1, 2]); a shape may also have unknown rank (a placeholder with no shape).
// A tensor's own shape is always fully defined.
#ifndef ACTORFLOW_GRAPH_SHAPE_H_
#define ACTORFLOW_GRAPH_SHAPE_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "graph/status.h"

namespace actorflow {

// A read-only view of a shape's dimensions, valid while the shape lives and keeps
// its rank. It converts to std::vector<int64_t> where a caller needs one of its own.
class DimSpan {
 public:
  using value_type = int64_t;
  using const_iterator = const int64_t*;
  using iterator = const_iterator;

  DimSpan(const int64_t* begin, size_t size) : begin_(begin), size_(size) {}
  const int64_t* begin() const { return begin_; }
  const int64_t* end() const { return begin_ + size_; }
  const int64_t* data() const { return begin_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t operator[](size_t i) const { return begin_[i]; }
  int64_t front() const { return begin_[0]; }
  int64_t back() const { return begin_[size_ - 1]; }
  std::vector<int64_t> ToVector() const { return std::vector<int64_t>(begin(), end()); }
  operator std::vector<int64_t>() const { return ToVector(); }  // NOLINT: a copy on request

 private:
  const int64_t* begin_;
  size_t size_;
};

inline bool operator==(DimSpan a, DimSpan b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}
inline bool operator!=(DimSpan a, DimSpan b) { return !(a == b); }
inline bool operator==(DimSpan a, const std::vector<int64_t>& b) {
  return a == DimSpan(b.data(), b.size());
}
inline bool operator==(const std::vector<int64_t>& a, DimSpan b) { return b == a; }
inline bool operator!=(DimSpan a, const std::vector<int64_t>& b) { return !(a == b); }
inline bool operator!=(const std::vector<int64_t>& a, DimSpan b) { return !(b == a); }

// Shapes of up to kInlineRank dimensions (every dense layer's and convolution's) keep
// them inline: a tensor's copy, which every step makes for each input it gathers,
// then allocates nothing. Longer ones keep them on the heap.
class Shape {
 public:
  static constexpr int64_t kUnknownDim = -1;
  // The most dimensions a shape from outside may have (TensorFlow's limit too): more
  // is refused by CheckedNumElements and CheckRepresentableShape, never allocated.
  static constexpr int kMaxRank = 254;
  static constexpr int kInlineRank = 4;

  Shape() = default;  // a scalar: rank 0, known
  // A copy of an inline shape copies the inline array only (no call into heap_).
  Shape(const Shape& other) { *this = other; }
  Shape& operator=(const Shape& other);
  // A moved-from shape is a scalar, as when the dimensions were a std::vector (never
  // a rank whose heap dimensions went with the move).
  Shape(Shape&& other) noexcept { *this = std::move(other); }
  Shape& operator=(Shape&& other) noexcept;

  Shape(std::initializer_list<int64_t> dims) { Assign(dims.begin(), dims.size()); }
  explicit Shape(const std::vector<int64_t>& dims) { Assign(dims.data(), dims.size()); }
  explicit Shape(DimSpan dims) { Assign(dims.data(), dims.size()); }

  static Shape UnknownRank() { Shape s; s.unknown_rank_ = true; return s; }

  bool unknown_rank() const { return unknown_rank_; }
  // Precondition for rank()/dim(): !unknown_rank().
  int rank() const { return rank_; }
  int64_t dim(int i) const { return data()[i]; }
  DimSpan dims() const { return DimSpan(data(), static_cast<size_t>(rank_)); }
  void set_dim(int i, int64_t value) { mutable_data()[i] = value; }

  bool IsFullyDefined() const;
  // Product of the dimensions (1 for a scalar); -1 if not fully defined. Unchecked:
  // only for shapes known to be representable (a Tensor's, or one that passed
  // CheckedNumElements); a shape from outside goes through CheckedNumElements first.
  int64_t num_elements() const;
  // Product of the dimensions, refusing shapes no tensor can have: InvalidArgument
  // when the rank is unknown or above kMaxRank, a dim is unknown or negative, or the
  // product does not fit in int64 (graph/checked_size.h has the byte count).
  StatusOr<int64_t> CheckedNumElements() const;
  // InvalidArgument giving the rank when it is above kMaxRank; OK otherwise.
  Status CheckRankLimit() const;
  // True when some fully defined shape could match both (unknowns match anything).
  bool IsCompatibleWith(const Shape& other) const;
  // The more specific of two compatible shapes (unknowns filled from the other).
  Shape MergeWith(const Shape& other) const;

  // "[2,3]", "[?,2]", "<unknown>".
  std::string ToString() const;

  bool operator==(const Shape& o) const {
    return unknown_rank_ == o.unknown_rank_ && dims() == o.dims();
  }
  bool operator!=(const Shape& o) const { return !(*this == o); }

 private:
  void Assign(const int64_t* dims, size_t rank);
  bool is_inline() const { return rank_ <= kInlineRank; }
  const int64_t* data() const { return is_inline() ? inline_.data() : heap_.data(); }
  int64_t* mutable_data() { return is_inline() ? inline_.data() : heap_.data(); }

  // The dimensions: inline_[0, rank_) when rank_ <= kInlineRank, else heap_.
  std::array<int64_t, kInlineRank> inline_{};
  std::vector<int64_t> heap_;
  int rank_ = 0;
  bool unknown_rank_ = false;
};

// Inline: a step copies or moves shapes with every tensor it passes on (a few hundred
// times an Iris step), and an inline shape's copy is a few stores.
inline Shape& Shape::operator=(const Shape& other) {
  inline_ = other.inline_;
  if (!other.is_inline()) {
    heap_ = other.heap_;
  } else if (!heap_.empty()) {
    heap_.clear();
  }
  rank_ = other.rank_;
  unknown_rank_ = other.unknown_rank_;
  return *this;
}

inline Shape& Shape::operator=(Shape&& other) noexcept {
  if (this == &other) return *this;
  inline_ = other.inline_;
  if (!other.is_inline()) {
    heap_ = std::move(other.heap_);
    other.heap_.clear();  // whatever the library leaves in a moved-from vector
  } else if (!heap_.empty()) {
    heap_.clear();
  }
  rank_ = other.rank_;
  unknown_rank_ = other.unknown_rank_;
  other.rank_ = 0;
  other.unknown_rank_ = false;
  return *this;
}

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_SHAPE_H_
