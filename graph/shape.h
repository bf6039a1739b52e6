// Shape: the dimensions of a tensor. A dimension of -1 is unknown (placeholders
// such as [-1, 2]); a shape may also have unknown rank (a placeholder with no shape).
// A tensor's own shape is always fully defined.
#ifndef ACTORFLOW_GRAPH_SHAPE_H_
#define ACTORFLOW_GRAPH_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "graph/status.h"

namespace actorflow {

class Shape {
 public:
  static constexpr int64_t kUnknownDim = -1;
  // The most dimensions a shape from outside may have (TensorFlow's limit too): more
  // is refused by CheckedNumElements and CheckRepresentableShape, never allocated.
  static constexpr int kMaxRank = 254;

  Shape() = default;  // a scalar: rank 0, known
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  static Shape UnknownRank() { Shape s; s.unknown_rank_ = true; return s; }

  bool unknown_rank() const { return unknown_rank_; }
  // Precondition for rank()/dim(): !unknown_rank().
  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t dim(int i) const { return dims_[i]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  void set_dim(int i, int64_t value) { dims_[i] = value; }

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
    return unknown_rank_ == o.unknown_rank_ && dims_ == o.dims_;
  }
  bool operator!=(const Shape& o) const { return !(*this == o); }

 private:
  std::vector<int64_t> dims_;
  bool unknown_rank_ = false;
};

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_SHAPE_H_
