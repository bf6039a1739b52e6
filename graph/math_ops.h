// The math ops of sequence models (LSTMs, Transformers): batched matrix products,
// layer normalization and GELU, with the backward ops their gradients use; and the
// products of a packed right operand that pipelined micro-batches share. Softmax and
// LogSoftmax (graph/ops.h) work along the last axis of any rank >= 1, so attention
// scores [batch, heads, queries, keys] need no reshape.
//
//   auto scores = BatchMatMul(root, q, k, false, /*adj_y=*/true);   // [B, H, Tq, Tk]
//   auto attention = BatchMatMul(root, Softmax(root, scores), v);    // [B, H, Tq, Dv]
//   auto normed = LayerNorm(root, Add(root, x, attention), gamma, beta).y;
//   auto hidden = Gelu(root, BatchMatMul(root, normed, w1));
//
// Every op takes float32 or float64 inputs of one dtype; other dtypes, wrong ranks and
// shapes that do not fit are an InvalidArgument naming the input and the shapes, at
// graph-building time where the shapes are known, else when the kernel runs. Each
// builder returns invalid Outputs when the scope already failed or the node is
// rejected (the scope holds the error).
//
// Thread safety: as Scope (one building thread per graph).
#ifndef ACTORFLOW_GRAPH_MATH_OPS_H_
#define ACTORFLOW_GRAPH_MATH_OPS_H_

#include "graph/graph.h"
#include "graph/scope.h"

namespace actorflow {

// TensorFlow's BatchMatMulV2: x [..., M, K], y [..., K, N] -> [..., M, N], the matrix
// product of each pair of matrices in the last two dims. adj_x (adj_y) takes x (y) as
// [..., K, M] ([..., N, K]) and uses its transpose (the adjoint: the dtypes are real).
// The batch dims broadcast as NumPy's: [2, 1, M, K] with [3, K, N] -> [2, 3, M, N];
// a rank-2 operand is the same matrix for every batch. K = 0 gives zeros. The
// gradient of a broadcast operand is summed over the batch dims it was stretched along.
Output BatchMatMul(const Scope& scope, const Input& x, const Input& y, bool adj_x = false,
                   bool adj_y = false);

// Layer normalization over the last axis (Keras' LayerNormalization with axis -1):
// x [..., D] (D >= 1), gamma [D], beta [D] ->
//   y = gamma * (x - mean) * inv_std + beta                      [..., D]
//   mean = the mean of each row x[..., :]                        [...]
//   inv_std = 1 / sqrt(variance + epsilon), variance biased      [...]
// epsilon is finite and >= 0. mean and inv_std are outputs so that the backward op
// does not recompute them; they are differentiable too. An x without rows ([0, D])
// gives empty outputs.
struct LayerNormResult {
  Output y;
  Output mean;
  Output inv_std;
};
LayerNormResult LayerNorm(const Scope& scope, const Input& x, const Input& gamma,
                          const Input& beta, double epsilon = 1e-5);

// LayerNorm's backward op, for the gradient dy of y: with x_hat = (x - mean) * inv_std
// and g = dy * gamma (per row, sums over the last axis, D features)
//   dx = inv_std * (g - sum(g) / D - x_hat * sum(g * x_hat) / D)   [..., D]
//   dgamma = the sum of dy * x_hat over every row                  [D]
//   dbeta = the sum of dy over every row                           [D]
// mean and inv_std are LayerNorm's outputs for x. Not differentiable itself (second
// derivatives are not supported).
struct LayerNormGradResult {
  Output dx;
  Output dgamma;
  Output dbeta;
};
LayerNormGradResult LayerNormGrad(const Scope& scope, const Input& dy, const Input& x,
                                  const Input& mean, const Input& inv_std,
                                  const Input& gamma);

// Gaussian error linear unit, element-wise: x * Phi(x) = x * (1 + erf(x / sqrt(2))) / 2,
// or with `approximate` the tanh form of Hendrycks and Gimpel (TensorFlow's
// approximate=True): x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) / 2.
Output Gelu(const Scope& scope, const Input& x, bool approximate = false);

// Gelu's backward op: dy * Gelu'(x) (the derivative of the same form), dy and x of one
// shape. Not differentiable itself.
Output GeluGrad(const Scope& scope, const Input& dy, const Input& x, bool approximate = false);

// A matrix product whose right operand is packed once and then shared by many
// products (kernels/cpu/packed_gemm.h): a pipeline's micro-batches multiply one
// weight matrix M times a step, a few dozen rows at a time, and a plain MatMul would
// copy the whole matrix into its GEMM's panel format on every one of them.
//   PackMatMulOperand(b [K, N]) -> float32 [ceil(N / 32), K, 32], B's columns in
//       panels of 32 (zero past N); with transpose, b is [N, K] and B = b^T.
//   PackedMatMul(a [M, K], packed, n = N) -> a B, float32 [M, N].
// float32 on the CPU only. Neither is differentiable: a model that differentiates
// through its products uses MatMul (the pipeline builds its backward explicitly).
Output PackMatMulOperand(const Scope& scope, const Input& b, bool transpose = false);
Output PackedMatMul(const Scope& scope, const Input& a, const Input& packed, int64_t n);

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_MATH_OPS_H_
