// The run-time shape checks of the ops of graph/math_ops.h (BatchMatMul, LayerNorm,
// LayerNormGrad, GeluGrad), shared by the CPU kernels (math_kernels.cc,
// layer_norm_kernels.cc) and the GPU kernels (kernels/cuda/sequence_kernels.cc; plain
// host C++), so that both refuse the same inputs with the same messages. They repeat
// what shape inference checks for the shapes that were unknown when the graph was
// built. Errors are InvalidArgument without the node's name (the caller adds it).
//
// Thread safety: pure functions.
#ifndef ACTORFLOW_KERNELS_CPU_MATH_OP_SHAPES_H_
#define ACTORFLOW_KERNELS_CPU_MATH_OP_SHAPES_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/shape.h"
#include "graph/status.h"

namespace actorflow {
namespace cpu {

// --- BatchMatMul -----------------------------------------------------------------------

// x [..., M, K] ([..., K, M] with adj_x) times y [..., K, N] ([..., N, K] with adj_y),
// the batch dims (all but the last two) broadcasting as NumPy's.
struct BatchMatMulPlan {
  bool adj_x = false, adj_y = false;
  int64_t m = 0, n = 0, k = 0;
  // The stored row lengths of x's and y's matrices (their last dims).
  int64_t x_row_length = 0, y_row_length = 0;
  Shape out;  // [broadcast batch dims..., M, N]
  // For each output matrix b in row-major order, the matrices of x and y it multiplies
  // (flat indices into their batch dims).
  std::vector<int64_t> x_matrix, y_matrix;
  int64_t x_count = 1, y_count = 1;  // matrices in x and in y
  // "x [2,3,4] (adjoint) and y [4,5]", for messages.
  std::string shapes;

  int64_t batch() const { return static_cast<int64_t>(x_matrix.size()); }
  // Whether the whole product is one gemm of the stacked rows of x, [batch * M, K],
  // with y's single matrix: x not transposed and y the same matrix for every batch.
  bool StacksX() const { return !adj_x && y_count == 1 && x_count == batch(); }
};

// The plan, after checking that both ranks are >= 2, that the inner dims agree and
// that the batch dims broadcast.
StatusOr<BatchMatMulPlan> PlanBatchMatMul(const Shape& x, const Shape& y, bool adj_x,
                                          bool adj_y);

// The 32-bit dimension limit of the BLAS interface, checked once a product is known to
// be non-empty with K > 0: the rows of one gemm (batch * M when StacksX(), else M), N,
// K and the row lengths must each be at most INT_MAX.
Status CheckBatchMatMulBlasLimits(const BatchMatMulPlan& plan);

// --- LayerNorm, LayerNormGrad ----------------------------------------------------------

// x [..., D] as the row-major matrix [rows, D].
struct LayerNormDims {
  int64_t rows = 0;
  int64_t features = 0;  // D
};

// The dims of x after checking that D >= 1 and that each of `vectors` (name, shape) is
// [D]; `op` starts the messages ("LayerNorm", "LayerNormGrad").
StatusOr<LayerNormDims> CheckLayerNormFeatures(
    const std::string& op, const Shape& x,
    const std::vector<std::pair<const char*, const Shape*>>& vectors);

// x's shape without its last dim: the shape of the per-row statistics mean and inv_std.
Shape LayerNormRowsShape(const Shape& x);

// LayerNormGrad's other inputs, after CheckLayerNormFeatures accepted x and gamma: dy
// must have x's shape, mean and inv_std LayerNormRowsShape(x).
Status CheckLayerNormGradInputs(const Shape& dy, const Shape& x, const Shape& mean,
                                const Shape& inv_std);

// --- GeluGrad --------------------------------------------------------------------------

// dy and x must have one shape.
Status CheckGeluGradShapes(const Shape& dy, const Shape& x);

}  // namespace cpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CPU_MATH_OP_SHAPES_H_
