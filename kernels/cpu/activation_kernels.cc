// CPU kernels of the activations: Relu, Sigmoid, Tanh (element-wise) and Softmax,
// LogSoftmax (along the last axis, each row shifted by its maximum so that exp never
// overflows). Floating-point dtypes only.
#include <cmath>
#include <cstdint>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

template <typename T>
struct ReluOp {
  T operator()(T a) const { return a > T(0) ? a : T(0); }
};
// exp(-a) overflows to inf for very negative a, which correctly gives 0.
template <typename T>
struct SigmoidOp {
  T operator()(T a) const { return T(1) / (T(1) + std::exp(-a)); }
};
template <typename T>
struct TanhOp {
  T operator()(T a) const { return std::tanh(a); }
};

template <typename T> using ReluKernel = UnaryKernel<T, ReluOp<T>>;
template <typename T> using SigmoidKernel = UnaryKernel<T, SigmoidOp<T>>;
template <typename T> using TanhKernel = UnaryKernel<T, TanhOp<T>>;

template <typename T>
T RowMax(const T* __restrict row, int64_t n) {
  T m = -INFINITY;
  for (int64_t j = 0; j < n; ++j) m = row[j] > m ? row[j] : m;
  return m;
}

// Input: logits [..., C] (rank >= 1); output: same shape. kLog selects LogSoftmax.
template <typename T, bool kLog>
class SoftmaxKernelBase : public Kernel {
 public:
  explicit SoftmaxKernelBase(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    if (x.rank() < 1) {
      ctx->Fail(Code::kInvalidArgument,
                "logits must have rank >= 1, got shape " + x.shape().ToString());
      return;
    }
    Tensor& y = ctx->allocate_output(0, x.shape());
    const int64_t cols = x.dim(x.rank() - 1);
    if (x.NumElements() == 0) return;
    const int64_t rows = x.NumElements() / cols;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      const T* __restrict xr = in + r * cols;
      T* __restrict yr = out + r * cols;
      const T m = RowMax(xr, cols);
      double sum = 0;
      if constexpr (kLog) {
        for (int64_t j = 0; j < cols; ++j) sum += std::exp(xr[j] - m);
        // (x - m) - lse rather than x - (m + lse): m + lse would round away lse's
        // low bits when |m| is large.
        const T lse = static_cast<T>(std::log(sum));
        for (int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] - m) - lse;
      } else {
        for (int64_t j = 0; j < cols; ++j) {
          const T e = std::exp(xr[j] - m);
          yr[j] = e;
          sum += e;
        }
        const T scale = static_cast<T>(1.0 / sum);
        for (int64_t j = 0; j < cols; ++j) yr[j] *= scale;
      }
    }
  }
};

template <typename T> using SoftmaxKernel = SoftmaxKernelBase<T, false>;
template <typename T> using LogSoftmaxKernel = SoftmaxKernelBase<T, true>;

const CpuKernelRegistrations<ReluKernel, float, double> reg_relu("Relu");
const CpuKernelRegistrations<SigmoidKernel, float, double> reg_sigmoid("Sigmoid");
const CpuKernelRegistrations<TanhKernel, float, double> reg_tanh("Tanh");
const CpuKernelRegistrations<SoftmaxKernel, float, double> reg_softmax("Softmax");
const CpuKernelRegistrations<LogSoftmaxKernel, float, double> reg_log_softmax("LogSoftmax");

}  // namespace
}  // namespace cpu
}  // namespace actorflow
