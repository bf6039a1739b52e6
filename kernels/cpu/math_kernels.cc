// CPU kernels of BatchMatMul and Gelu/GeluGrad (graph/math_ops.h has the contracts;
// LayerNorm is in layer_norm_kernels.cc, Softmax of any rank in activation_kernels.cc).
// Floating-point dtypes only.
//
// BatchMatMul calls OpenBLAS gemm once per output matrix, on the operands' buffers:
// adjoints are BLAS transpose flags and broadcast batch dims are offsets into the
// operands, never copies. When y is one matrix for every batch and x is not
// transposed, the batch of x is one tall row-major matrix [batch * M, K] and the whole
// product is a single gemm (the dense layers of a Transformer), which BLAS
// parallelizes far better than many small calls.
#include <cblas.h>

#include <cmath>
#include <cstdint>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/math_op_shapes.h"
#include "kernels/cpu/row_major_gemm.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

// Inputs: x [..., M, K] ([..., K, M] with adj_x), y [..., K, N] ([..., N, K] with
// adj_y), batch dims broadcasting. Output: [broadcast batch..., M, N]; K = 0 gives
// zeros and BLAS is never called with a zero dimension.
template <typename T>
class BatchMatMulKernel : public Kernel {
 public:
  explicit BatchMatMulKernel(const Node& node)
      : Kernel(node), adj_x_(node.attr<bool>("adj_x")), adj_y_(node.attr<bool>("adj_y")) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    StatusOr<BatchMatMulPlan> planned = PlanBatchMatMul(x.shape(), y.shape(), adj_x_, adj_y_);
    if (!planned.ok()) {
      ctx->Fail(planned.status().code(), planned.status().message());
      return;
    }
    const BatchMatMulPlan& plan = *planned;
    const int64_t m = plan.m, n = plan.n, k = plan.k;
    // K = 0 leaves the zeros; otherwise each gemm (beta = 0) writes its whole matrix.
    Tensor* out = AllocateCheckedOutput(ctx, 0, plan.out, /*overwrite=*/k > 0);
    if (out == nullptr || out->NumElements() == 0 || k == 0) return;
    const int64_t batch = plan.batch();
    // One gemm for the whole batch: x's matrices stacked, y a single matrix.
    const bool stacked = plan.StacksX();
    const int64_t rows = stacked ? batch * m : m;
    const Status limits = CheckBatchMatMulBlasLimits(plan);
    if (!limits.ok()) {
      ctx->Fail(limits.code(), limits.message());
      return;
    }
    const int lda = static_cast<int>(plan.x_row_length);
    const int ldb = static_cast<int>(plan.y_row_length);
    const T* a = x.data<T>();
    const T* b = y.data<T>();
    T* c = out->data<T>();
    if (stacked) {
      Gemm(false, adj_y_, static_cast<int>(rows), static_cast<int>(n), static_cast<int>(k), a,
           lda, b, ldb, c);
      return;
    }
    const int64_t x_size = m * k, y_size = k * n, c_size = m * n;
    for (int64_t i = 0; i < batch; ++i) {
      Gemm(adj_x_, adj_y_, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
           a + plan.x_matrix[i] * x_size, lda, b + plan.y_matrix[i] * y_size, ldb,
           c + i * c_size);
    }
  }

 private:
  const bool adj_x_;
  const bool adj_y_;
};

// --- Gelu ------------------------------------------------------------------------------
// Phi(x) (the standard normal CDF) is written 0.5 * erfc(-x / sqrt(2)) and the tanh
// form's 0.5 * (1 + tanh(u)) as sigmoid(2u) = 1 / (1 + exp(-2u)): both equal the
// textbook forms but keep full relative precision for negative x, where 1 + erf and
// 1 + tanh cancel.

constexpr double kSqrtHalf = 0.70710678118654752440;     // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1 / sqrt(2 pi)
constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kCubic = 0.044715;

template <typename T>
struct GeluMath {
  // sigmoid(2u) for the tanh form, u = sqrt(2 / pi) (x + 0.044715 x^3).
  static T HalfOnePlusTanh(T x) {
    const T u = T(kSqrt2OverPi) * (x + T(kCubic) * x * x * x);
    return T(1) / (T(1) + std::exp(T(-2) * u));
  }
  static T Value(T x, bool approximate) {
    if (approximate) return x * HalfOnePlusTanh(x);
    return x * (T(0.5) * std::erfc(-x * T(kSqrtHalf)));
  }
  // d/dx: Phi(x) + x phi(x) exactly; s + 2 x s (1 - s) u' for the tanh form with
  // s = sigmoid(2u) (1 - tanh(u)^2 = 4 s (1 - s)).
  static T Derivative(T x, bool approximate) {
    if (approximate) {
      const T s = HalfOnePlusTanh(x);
      const T slope = s * (T(1) - s);
      // Where s saturates, x^2 may be inf (float32): the product is 0, not inf * 0.
      if (slope == T(0)) return s;
      const T du = T(kSqrt2OverPi) * (T(1) + T(3 * kCubic) * x * x);
      return s + T(2) * x * slope * du;
    }
    return T(0.5) * std::erfc(-x * T(kSqrtHalf)) +
           x * T(kInvSqrt2Pi) * std::exp(T(-0.5) * x * x);
  }
};

// Input: x (any shape). Output: Gelu(x), same shape.
template <typename T>
class GeluKernel : public Kernel {
 public:
  explicit GeluKernel(const Node& node)
      : Kernel(node), approximate_(node.attr<bool>("approximate")) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor& y = ctx->allocate_output_for_overwrite(0, x.shape());  // every element
    const int64_t size = x.NumElements();
    if (size == 0) return;
    const T* __restrict in = x.data<T>();
    T* __restrict out = y.data<T>();
    for (int64_t i = 0; i < size; ++i) out[i] = GeluMath<T>::Value(in[i], approximate_);
  }

 private:
  const bool approximate_;
};

// Inputs: dy, x of one shape. Output: dy * Gelu'(x), that shape.
template <typename T>
class GeluGradKernel : public Kernel {
 public:
  explicit GeluGradKernel(const Node& node)
      : Kernel(node), approximate_(node.attr<bool>("approximate")) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& x = ctx->input(1);
    const Status shapes = CheckGeluGradShapes(dy.shape(), x.shape());
    if (!shapes.ok()) {
      ctx->Fail(shapes.code(), shapes.message());
      return;
    }
    Tensor& dx = ctx->allocate_output_for_overwrite(0, x.shape());  // every element
    const int64_t size = x.NumElements();
    if (size == 0) return;
    const T* __restrict g = dy.data<T>();
    const T* __restrict in = x.data<T>();
    T* __restrict out = dx.data<T>();
    for (int64_t i = 0; i < size; ++i) {
      out[i] = g[i] * GeluMath<T>::Derivative(in[i], approximate_);
    }
  }

 private:
  const bool approximate_;
};

const CpuKernelRegistrations<BatchMatMulKernel, float, double> reg_batch_matmul("BatchMatMul");
const CpuKernelRegistrations<GeluKernel, float, double> reg_gelu("Gelu");
const CpuKernelRegistrations<GeluGradKernel, float, double> reg_gelu_grad("GeluGrad");

}  // namespace
}  // namespace cpu
}  // namespace actorflow
