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

#include <climits>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/kernel_util.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

// Row-major C[M,N] = op(A) op(B) with beta = 0; lda/ldb are the stored row lengths.
inline void Gemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b,
                 int ldb, float* c) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m,
              n, k, 1.0f, a, lda, b, ldb, 0.0f, c, n);
}
inline void Gemm(bool ta, bool tb, int m, int n, int k, const double* a, int lda,
                 const double* b, int ldb, double* c) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m,
              n, k, 1.0, a, lda, b, ldb, 0.0, c, n);
}

// The broadcast of x's and y's batch dims (all but the last two): the output's batch
// dims and, for each output matrix b in row-major order, the matrices of x and y it
// multiplies (flat indices into their batch dims).
struct BatchPlan {
  std::vector<int64_t> dims;
  std::vector<int64_t> x_matrix, y_matrix;
  int64_t x_count = 1, y_count = 1;  // matrices in x and in y
};

// False when the batch dims do not broadcast. Preconditions: ranks >= 2.
bool PlanBatches(const Shape& x, const Shape& y, BatchPlan* plan) {
  const int xb = x.rank() - 2, yb = y.rank() - 2;
  const int rank = xb > yb ? xb : yb;
  std::vector<int64_t> x_stride(rank), y_stride(rank);  // 0 along stretched dims
  plan->dims.assign(rank, 1);
  for (int i = rank - 1; i >= 0; --i) {
    const int64_t xd = i - (rank - xb) >= 0 ? x.dim(i - (rank - xb)) : 1;
    const int64_t yd = i - (rank - yb) >= 0 ? y.dim(i - (rank - yb)) : 1;
    if (xd != yd && xd != 1 && yd != 1) return false;
    plan->dims[i] = xd == 1 ? yd : xd;
    x_stride[i] = xd == 1 ? 0 : plan->x_count;
    y_stride[i] = yd == 1 ? 0 : plan->y_count;
    plan->x_count *= xd;
    plan->y_count *= yd;
  }
  int64_t total = 1;
  for (int64_t d : plan->dims) total *= d;
  plan->x_matrix.assign(total, 0);
  plan->y_matrix.assign(total, 0);
  std::vector<int64_t> index(rank, 0);  // an odometer over the output's batch dims
  int64_t xi = 0, yi = 0;
  for (int64_t b = 0; b < total; ++b) {
    plan->x_matrix[b] = xi;
    plan->y_matrix[b] = yi;
    for (int i = rank - 1; i >= 0; --i) {
      xi += x_stride[i];
      yi += y_stride[i];
      if (++index[i] < plan->dims[i]) break;
      xi -= x_stride[i] * index[i];
      yi -= y_stride[i] * index[i];
      index[i] = 0;
    }
  }
  return true;
}

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
    const std::string shapes = "x " + x.shape().ToString() + (adj_x_ ? " (adjoint)" : "") +
                               " and y " + y.shape().ToString() + (adj_y_ ? " (adjoint)" : "");
    if (x.rank() < 2 || y.rank() < 2) {
      ctx->Fail(Code::kInvalidArgument,
                "BatchMatMul needs inputs of rank >= 2 ([..., M, K] and [..., K, N]), got " +
                    shapes);
      return;
    }
    const int xr = x.rank(), yr = y.rank();
    const int64_t m = adj_x_ ? x.dim(xr - 1) : x.dim(xr - 2);
    const int64_t k = adj_x_ ? x.dim(xr - 2) : x.dim(xr - 1);
    const int64_t ky = adj_y_ ? y.dim(yr - 1) : y.dim(yr - 2);
    const int64_t n = adj_y_ ? y.dim(yr - 2) : y.dim(yr - 1);
    if (k != ky) {
      ctx->Fail(Code::kInvalidArgument, "BatchMatMul shape mismatch: " + shapes +
                                            " have inner dimensions " + std::to_string(k) +
                                            " and " + std::to_string(ky));
      return;
    }
    BatchPlan plan;
    if (!PlanBatches(x.shape(), y.shape(), &plan)) {
      ctx->Fail(Code::kInvalidArgument,
                "BatchMatMul: the batch dimensions of " + shapes + " do not broadcast");
      return;
    }
    std::vector<int64_t> out_dims = plan.dims;
    out_dims.push_back(m);
    out_dims.push_back(n);
    // K = 0 leaves the zeros; otherwise each gemm (beta = 0) writes its whole matrix.
    Tensor* out = AllocateCheckedOutput(ctx, 0, Shape(out_dims), /*overwrite=*/k > 0);
    if (out == nullptr || out->NumElements() == 0 || k == 0) return;
    const int64_t batch = static_cast<int64_t>(plan.x_matrix.size());
    // One gemm for the whole batch: x's matrices stacked, y a single matrix.
    const bool stacked = !adj_x_ && plan.y_count == 1 && plan.x_count == batch;
    const int64_t rows = stacked ? batch * m : m;
    for (int64_t d : {rows, n, k, x.dim(xr - 1), y.dim(yr - 1)}) {
      if (d > INT_MAX) {
        ctx->Fail(Code::kInvalidArgument, "BatchMatMul dimension " + std::to_string(d) +
                                              " of " + shapes + " exceeds the BLAS limit of " +
                                              std::to_string(INT_MAX));
        return;
      }
    }
    const int lda = static_cast<int>(x.dim(xr - 1));
    const int ldb = static_cast<int>(y.dim(yr - 1));
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
    if (dy.shape() != x.shape()) {
      ctx->Fail(Code::kInvalidArgument, "GeluGrad needs dy and x of one shape, got dy " +
                                            dy.shape().ToString() + " and x " +
                                            x.shape().ToString());
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
