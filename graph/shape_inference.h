// Shape arithmetic shared by the op set's inference functions (graph/ops_*.cc) and
// by kernels that compute their output shapes from the same rules.
//
// Every function works on partially known shapes: a dimension of -1 is unknown and a
// shape may have unknown rank. Unknowns propagate; an error is returned only when
// known dimensions conflict. Errors are InvalidArgument without node context (the
// caller, Graph::AddNode or a kernel, prefixes the node).
//
// Thread safety: pure functions.
#ifndef ACTORFLOW_GRAPH_SHAPE_INFERENCE_H_
#define ACTORFLOW_GRAPH_SHAPE_INFERENCE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/shape.h"
#include "graph/status.h"

namespace actorflow {

// NumPy broadcasting: trailing dims aligned, a dim of 1 stretches.
// [2,1,3] x [4,1] -> [2,4,3]; [?,3] x [3] -> [?,3]; unknown rank -> unknown rank.
StatusOr<Shape> BroadcastShapes(const Shape& x, const Shape& y);

// Maps axis in [-rank, rank) to [0, rank); InvalidArgument naming the range otherwise.
StatusOr<int> NormalizeAxis(int64_t axis, int rank);

// The shape of a reduction over `axes` (nullopt = every axis; an empty list reduces
// nothing). Reduced dims are dropped, or kept as 1 when keep_dims. Duplicate axes are
// an error. With unknown rank the result has unknown rank, except the full reduction
// without keep_dims, which is a scalar.
StatusOr<Shape> ReducedShape(const Shape& input,
                             const std::optional<std::vector<int64_t>>& axes, bool keep_dims);

// a [M,K] (or [K,M] when transpose_a) x b [K,N] (or [N,K] when transpose_b) -> [M,N].
// Known inner dims must match: the error says "MatMul shape mismatch" with both shapes.
StatusOr<Shape> MatMulShape(const Shape& a, const Shape& b, bool transpose_a,
                            bool transpose_b);

// Reshape of `input` to `requested` (each dim >= 0, or a single -1 that is resolved
// when input's element count is known). Element-count mismatch is an error.
StatusOr<Shape> ReshapedShape(const Shape& input, const std::vector<int64_t>& requested);

// Permutes dims: out[i] = in[perm[i]]. nullopt perm = reversed axes. perm must be a
// permutation of 0..rank-1.
StatusOr<Shape> TransposedShape(const Shape& input,
                                const std::optional<std::vector<int64_t>>& perm);

// Concatenation along `axis` (negative counts from the end): all ranks equal, dims
// other than `axis` equal, the axis dim is the sum.
StatusOr<Shape> ConcatShape(const std::vector<Shape>& inputs, int64_t axis);

// input[begin[i] : begin[i] + size[i]] per dim; size -1 = to the end of the dim.
StatusOr<Shape> SlicedShape(const Shape& input, const std::vector<int64_t>& begin,
                            const std::vector<int64_t>& size);

// "[1,2,3]": for messages about int lists (perm, begin, axes).
std::string IntListToString(const std::vector<int64_t>& values);

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_SHAPE_INFERENCE_H_
