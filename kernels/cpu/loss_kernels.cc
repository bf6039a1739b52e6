// CPU kernels of SoftmaxCrossEntropyWithLogits and SparseSoftmaxCrossEntropyWithLogits.
// Each row is shifted by its maximum before exponentiation, and the loss is computed
// from log-probabilities (l - max - log(sum exp)), never from log(softmax), so that
// neither overflows nor takes the log of 0.
#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/row_ops.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

// For one row of logits l [C]: writes softmax(l) into prob [C], sets *shift = max(l)
// and *lse = log(sum(exp(l - max))), so that log_softmax(l) = (l - *shift) - *lse.
template <typename T>
void SoftmaxRow(const T* __restrict l, int64_t cols, T* __restrict prob, T* shift, T* lse) {
  const T m = RowMax(l, cols);
  ExpShifted(l, m, prob, cols);
  const double sum = RowSum(prob, cols);
  const T scale = static_cast<T>(1.0 / sum);
  for (int64_t j = 0; j < cols; ++j) prob[j] *= scale;
  *shift = m;
  // In T, where the loss is kept: a float's log costs half a double's, and rounding
  // the sum to T first moves lse by at most T's epsilon.
  *lse = std::log(static_cast<T>(sum));
}

// Inputs: logits [N,C], labels [N,C] (probabilities). Outputs: loss [N] =
// -sum_j labels * log_softmax(logits), backprop [N,C] = softmax(logits) - labels.
template <typename T>
class SoftmaxCrossEntropyKernel : public Kernel {
 public:
  explicit SoftmaxCrossEntropyKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    if (logits.rank() != 2 || labels.shape() != logits.shape()) {
      ctx->Fail(Code::kInvalidArgument, "needs logits [N,C] and labels [N,C], got " +
                                            logits.shape().ToString() + " and " +
                                            labels.shape().ToString());
      return;
    }
    const int64_t rows = logits.dim(0);
    const int64_t cols = logits.dim(1);
    Tensor& loss = ctx->allocate_output(0, Shape{rows});
    Tensor& backprop = ctx->allocate_output(1, logits.shape());
    for (int64_t r = 0; r < rows; ++r) {
      const T* __restrict l = logits.data<T>() + r * cols;
      const T* __restrict y = labels.data<T>() + r * cols;
      T* __restrict g = backprop.data<T>() + r * cols;
      T m;
      T lse;
      SoftmaxRow(l, cols, g, &m, &lse);
      double total = 0;
      for (int64_t j = 0; j < cols; ++j) {
        total += static_cast<double>(y[j]) * static_cast<double>(lse - (l[j] - m));
        g[j] -= y[j];
      }
      loss.data<T>()[r] = static_cast<T>(total);
    }
  }
};

// Inputs: logits [N,C] (dtype T), labels [N] int32 or int64 in [0, C). Outputs:
// loss [N] = -log_softmax(logits)[label], backprop [N,C] = softmax - onehot(label).
template <typename T>
class SparseSoftmaxCrossEntropyKernel : public Kernel {
 public:
  explicit SparseSoftmaxCrossEntropyKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    if (logits.rank() != 2 || labels.rank() != 1 || labels.dim(0) != logits.dim(0) ||
        (labels.dtype() != DType::kInt32 && labels.dtype() != DType::kInt64)) {
      ctx->Fail(Code::kInvalidArgument, "needs logits [N,C] and int32/int64 labels [N], got " +
                                            logits.DebugString() + " and " +
                                            labels.DebugString());
      return;
    }
    const int64_t rows = logits.dim(0);
    const int64_t cols = logits.dim(1);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t label = Label(labels, r);
      if (label < 0 || label >= cols) {
        ctx->Fail(Code::kInvalidArgument, "label " + std::to_string(label) + " at row " +
                                              std::to_string(r) + " is outside [0, " +
                                              std::to_string(cols) + ")");
        return;
      }
    }
    Tensor& loss = ctx->allocate_output(0, Shape{rows});
    Tensor& backprop = ctx->allocate_output(1, logits.shape());
    for (int64_t r = 0; r < rows; ++r) {
      const T* l = logits.data<T>() + r * cols;
      T* g = backprop.data<T>() + r * cols;
      const int64_t label = Label(labels, r);
      T m;
      T lse;
      SoftmaxRow(l, cols, g, &m, &lse);
      loss.data<T>()[r] = lse - (l[label] - m);
      g[label] -= T(1);
    }
  }

 private:
  static int64_t Label(const Tensor& labels, int64_t r) {
    return labels.dtype() == DType::kInt32 ? labels.data<int32_t>()[r]
                                           : labels.data<int64_t>()[r];
  }
};

const CpuKernelRegistrations<SoftmaxCrossEntropyKernel, float, double> reg_softmax_xent(
    "SoftmaxCrossEntropyWithLogits");
const CpuKernelRegistrations<SparseSoftmaxCrossEntropyKernel, float, double>
    reg_sparse_softmax_xent("SparseSoftmaxCrossEntropyWithLogits");

}  // namespace
}  // namespace cpu
}  // namespace actorflow
