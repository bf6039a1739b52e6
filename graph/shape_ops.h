// The shape ops that sequence models need, in TensorFlow 1.x's semantics but with
// axes, shapes and slice bounds as attrs (as Slice takes begin/size), so inference
// knows every output shape that its inputs' shapes allow:
//
//   auto tokens = Placeholder(root, DType::kInt32, Shape{-1, 20});   // [batch, time]
//   auto x = OneHot(root, tokens, 1000);                             // [batch, 20, 1000]
//   auto steps = Unpack(root, x, 20, /*axis=*/1);                    // 20 x [batch, 1000]
//   auto logits = ...;                                               // [20, 20] scores
//   auto masked = Add(root, logits, CausalMask(root, 20));           // no look-ahead
//
// Contract shared by every builder (as graph/ops.h): arguments are Inputs; on an error
// (also one recorded earlier in the scope) a builder returns invalid Outputs (an empty
// vector for the multi-output ones) and scope.status() names the node and the values
// that are wrong. Axes may be negative (counted from the end). Bad attrs, ranks,
// dtypes and known dims are rejected when the node is built; the kernels check again
// at run time what only run time shows (unknown shapes), with InvalidArgument naming
// the node.
//
// Gradients (graph/gradient_rules_shape.cc): ExpandDims and Squeeze reshape back,
// Pack and Unpack undo each other, Split concatenates its outputs' gradients (zeros
// for outputs that get none), Tile sums over the tiles, Select routes to t where cond
// holds and to e elsewhere (cond gets none), StridedSlice scatters into zeros
// (StridedSliceGrad), MatrixBandPart keeps the band of the gradient; OneHot has none.
//
// Thread safety: as Scope (one building thread per graph); ResolveStridedSlice is a
// pure function.
#ifndef ACTORFLOW_GRAPH_SHAPE_OPS_H_
#define ACTORFLOW_GRAPH_SHAPE_OPS_H_

#include <cstdint>
#include <vector>

#include "graph/scope.h"
#include "graph/shape.h"
#include "graph/status.h"
#include "graph/types.h"

namespace actorflow {

// x [d...] (any dtype) -> x with a dimension of 1 inserted at `axis`, in
// [-rank-1, rank] (-1 appends it).
Output ExpandDims(const Scope& scope, const Input& x, int64_t axis);

// x without the dimensions `squeeze_dims` (each in [-rank, rank)), which must be 1
// (the error names the dimension and its size); empty = every dimension of size 1.
Output Squeeze(const Scope& scope, const Input& x, const std::vector<int64_t>& squeeze_dims = {});

// values (N >= 1 tensors of one dtype and one shape [d...]) -> [d...] with a new
// dimension of N at `axis`, in [-rank-1, rank]: out[..., i, ...] = values[i].
Output Pack(const Scope& scope, const std::vector<Output>& values, int64_t axis = 0);

// value [..., num, ...] (num at `axis`, in [-rank, rank)) -> num tensors, the slices
// along axis with that dimension removed. Undoes Pack.
std::vector<Output> Unpack(const Scope& scope, const Input& value, int64_t num, int64_t axis = 0);

// value -> num_split equal parts along `axis`; its dimension there must be divisible
// by num_split (>= 1).
std::vector<Output> Split(const Scope& scope, const Input& value, int64_t num_split, int64_t axis);

// x [d...] -> [d_i * multiples_i ...]: x repeated multiples_i (>= 0) times along each
// axis; one multiple per axis.
Output Tile(const Scope& scope, const Input& x, const std::vector<int64_t>& multiples);

// indices (int32/int64, any shape [i...]) -> dtype (float32/float64) [i..., depth]
// (the new axis at `axis`, -1 = last, else in [0, rank]): on_value where the new
// axis's position equals the index, else off_value. An index outside [0, depth)
// gives a row of off_value, as TensorFlow. No gradient.
Output OneHot(const Scope& scope, const Input& indices, int64_t depth, double on_value = 1.0,
              double off_value = 0.0, int64_t axis = -1, DType dtype = DType::kFloat32);

// cond (bool), t and e (one dtype and shape) -> t where cond, else e. cond has t's
// shape, or is a vector [t.dim(0)] choosing whole rows (t of rank >= 1), as
// TensorFlow 1.x's Select.
Output Select(const Scope& scope, const Input& cond, const Input& t, const Input& e);

// TensorFlow's strided slice without ellipsis and new axes: for the first
// begin.size() axes (begin, end and strides of equal length, at most the rank; later
// axes are taken whole), elements begin, begin + stride, ... up to but excluding
// end. Negative begin/end count from the end, out-of-range ones are clamped, a
// negative stride walks backwards; stride 0 is an error. Bit i of begin_mask /
// end_mask ignores begin[i] / end[i] (the whole extent in the stride's direction);
// bit i of shrink_axis_mask takes the single element begin[i] (which must exist) and
// drops the axis. x[1:-1, ::-2, 3] is StridedSlice(x, {1, 0, 3}, {-1, 0, 4},
// {1, -2, 1}, 0b010, 0b010, 0b100).
Output StridedSlice(const Scope& scope, const Input& x, const std::vector<int64_t>& begin,
                    const std::vector<int64_t>& end, const std::vector<int64_t>& strides,
                    int64_t begin_mask = 0, int64_t end_mask = 0, int64_t shrink_axis_mask = 0);

// The gradient of StridedSlice(like, ...): zeros of like's shape and dtype with dy
// (StridedSlice's output shape) scattered to the positions the slice read. Only
// like's shape is read.
Output StridedSliceGrad(const Scope& scope, const Input& like, const Input& dy,
                        const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                        const std::vector<int64_t>& strides, int64_t begin_mask = 0,
                        int64_t end_mask = 0, int64_t shrink_axis_mask = 0);

// x [..., M, N] (rank >= 2, numeric or bool) with every element (m, n) outside the
// band zeroed: kept where (num_lower < 0 || m - n <= num_lower) and (num_upper < 0 ||
// n - m <= num_upper). (-1, 0) keeps the lower triangle, (0, 0) the diagonal.
Output MatrixBandPart(const Scope& scope, const Input& x, int64_t num_lower, int64_t num_upper);

// float32 [length, length]: 0 on and below the diagonal, -1e9 above; added to
// attention logits [..., length, length] it hides later positions from earlier ones.
// Built from Fill and MatrixBandPart (a few nodes, whatever the length); length >= 0.
Output CausalMask(const Scope& scope, int64_t length);

// --- Shared by StridedSlice's inference and CPU kernels ----------------------------

// What StridedSlice takes along one axis: `size` elements begin, begin + stride, ...
// (size -1 when the axis's dimension is unknown); `shrink` drops the axis.
struct StridedSliceDim {
  int64_t begin = 0;
  int64_t stride = 1;
  int64_t size = 0;
  bool shrink = false;
};

// The per-axis slice of `dims` (-1 = unknown) that the attrs describe (see
// StridedSlice), one entry per axis. InvalidArgument (without node context) for
// lists of unequal length or longer than the rank, a zero stride, or a shrunk index
// outside a known dimension.
StatusOr<std::vector<StridedSliceDim>> ResolveStridedSlice(const std::vector<int64_t>& dims,
                                                           const std::vector<int64_t>& begin,
                                                           const std::vector<int64_t>& end,
                                                           const std::vector<int64_t>& strides,
                                                           int64_t begin_mask, int64_t end_mask,
                                                           int64_t shrink_axis_mask);

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_SHAPE_OPS_H_
