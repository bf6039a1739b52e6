// CPU kernels of MatMul (OpenBLAS gemm on the input buffers: transposes are expressed
// through the BLAS transpose flags and leading dimensions, never by copying) and
// BiasAdd. Floating-point dtypes only.
#include <cblas.h>

#include <climits>
#include <cstdint>
#include <string>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/row_major_gemm.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

// Inputs: a [M,K] ([K,M] if transpose_a), b [K,N] ([N,K] if transpose_b).
// Output: [M,N]. K = 0 gives zeros; BLAS is never called with a zero dimension.
template <typename T>
class MatMulKernel : public Kernel {
 public:
  explicit MatMulKernel(const Node& node)
      : Kernel(node),
        transpose_a_(node.attr<bool>("transpose_a")),
        transpose_b_(node.attr<bool>("transpose_b")) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    if (a.rank() != 2 || b.rank() != 2) {
      ctx->Fail(Code::kInvalidArgument, "MatMul needs rank-2 inputs, got " +
                                            a.shape().ToString() + " and " +
                                            b.shape().ToString());
      return;
    }
    const int64_t m = transpose_a_ ? a.dim(1) : a.dim(0);
    const int64_t k = transpose_a_ ? a.dim(0) : a.dim(1);
    const int64_t kb = transpose_b_ ? b.dim(1) : b.dim(0);
    const int64_t n = transpose_b_ ? b.dim(0) : b.dim(1);
    if (k != kb) {
      ctx->Fail(Code::kInvalidArgument,
                "MatMul shape mismatch: a " + a.shape().ToString() +
                    (transpose_a_ ? " (transposed)" : "") + " and b " + b.shape().ToString() +
                    (transpose_b_ ? " (transposed)" : "") + " have inner dimensions " +
                    std::to_string(k) + " and " + std::to_string(kb));
      return;
    }
    for (int64_t d : {m, n, k}) {
      if (d > INT_MAX) {
        ctx->Fail(Code::kInvalidArgument, "MatMul dimension " + std::to_string(d) +
                                              " exceeds the BLAS limit of " +
                                              std::to_string(INT_MAX));
        return;
      }
    }
    // K = 0 leaves the zeros; otherwise the GEMM (beta = 0) writes every element.
    Tensor* allocated = AllocateCheckedOutput(ctx, 0, Shape{m, n}, /*overwrite=*/k > 0);
    if (allocated == nullptr) return;
    Tensor& c = *allocated;
    if (m == 0 || n == 0 || k == 0) return;
    Gemm(transpose_a_, transpose_b_, static_cast<int>(m), static_cast<int>(n),
         static_cast<int>(k), a.data<T>(), static_cast<int>(a.dim(1)), b.data<T>(),
         static_cast<int>(b.dim(1)), c.data<T>());
  }

 private:
  const bool transpose_a_;
  const bool transpose_b_;
};

// Inputs: value [..., C] (rank >= 1), bias [C]. Output: value's shape.
template <typename T>
class BiasAddKernel : public Kernel {
 public:
  explicit BiasAddKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& value = ctx->input(0);
    const Tensor& bias = ctx->input(1);
    if (value.rank() < 1 || bias.rank() != 1 || bias.dim(0) != value.dim(value.rank() - 1)) {
      ctx->Fail(Code::kInvalidArgument,
                "BiasAdd needs value [..., C] and bias [C], got " + value.shape().ToString() +
                    " and " + bias.shape().ToString());
      return;
    }
    bool in_place = false;  // over value when the step holds its last reference
    Tensor* out = ForwardInputOrAllocateOutput(ctx, 0, 0, value.shape(), &in_place);
    if (out == nullptr) return;
    const int64_t cols = bias.dim(0);
    if (value.NumElements() == 0) return;
    const int64_t rows = value.NumElements() / cols;
    const T* __restrict b = bias.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      T* __restrict o = out->data<T>() + r * cols;
      if (in_place) {
        for (int64_t j = 0; j < cols; ++j) o[j] += b[j];
      } else {
        const T* __restrict v = value.data<T>() + r * cols;
        for (int64_t j = 0; j < cols; ++j) o[j] = v[j] + b[j];
      }
    }
  }
};

const CpuKernelRegistrations<MatMulKernel, float, double> reg_matmul("MatMul");
const CpuKernelRegistrations<BiasAddKernel, float, double> reg_bias_add("BiasAdd");

}  // namespace
}  // namespace cpu
}  // namespace actorflow
