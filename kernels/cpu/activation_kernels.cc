// CPU kernels of the activations: Relu, Sigmoid, Tanh (element-wise) and Softmax,
// LogSoftmax (along the last axis, each row shifted by its maximum so that exp never
// overflows). Floating-point dtypes only; float32 uses the vectorizable exp and tanh
// of fast_math.h.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/fast_math.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/row_ops.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

template <typename T>
struct ReluOp {
  // NaN passes through (as TensorFlow's): a NaN input must not turn into a confident 0.
  T operator()(T a) const { return a < T(0) ? T(0) : a; }
};
// exp(-a) overflows to inf for very negative a, which correctly gives 0.
template <typename T>
struct SigmoidOp {
  T operator()(T a) const {
    if constexpr (std::is_same_v<T, float>) {
      return 1.0f / (1.0f + FastExp(-a));
    } else {
      return T(1) / (T(1) + std::exp(-a));
    }
  }
};
template <typename T>
struct TanhOp {
  T operator()(T a) const {
    if constexpr (std::is_same_v<T, float>) {
      return FastTanh(a);
    } else {
      return std::tanh(a);
    }
  }
};

template <typename T> using ReluKernel = UnaryKernel<T, ReluOp<T>>;
template <typename T> using SigmoidKernel = UnaryKernel<T, SigmoidOp<T>>;
template <typename T> using TanhKernel = UnaryKernel<T, TanhOp<T>>;

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
    Tensor& y = ctx->allocate_output_for_overwrite(0, x.shape());  // every row
    const int64_t cols = x.dim(x.rank() - 1);
    if (x.NumElements() == 0) return;
    const int64_t rows = x.NumElements() / cols;
    for (int64_t r = 0; r < rows; ++r) {
      const T* __restrict xr = x.data<T>() + r * cols;
      T* __restrict yr = y.data<T>() + r * cols;
      const T m = RowMax(xr, cols);
      ExpShifted(xr, m, yr, cols);
      const double sum = RowSum(yr, cols);
      if constexpr (kLog) {
        // (x - m) - lse rather than x - (m + lse): m + lse would round away lse's
        // low bits when |m| is large.
        const T lse = static_cast<T>(std::log(sum));
        for (int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] - m) - lse;
      } else {
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
