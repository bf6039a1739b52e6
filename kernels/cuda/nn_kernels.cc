// GPU kernels of the reductions (Sum, Mean, Max, Min over axes), Softmax,
// LogSoftmax, both cross-entropy losses and the gradient helpers that undo a
// broadcast or a reduction (SumToShapeOf, BroadcastToShapeOf), for float32 and
// float64. Shapes and attrs are checked here with the CPU kernels' messages.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cuda/gpu_kernel.h"

namespace actorflow {
namespace gpu {
namespace {

Status Queued(const GpuError& e) { return e.ok() ? Status::OK() : Internal(e.message()); }

// The "axis" attr: absent = every axis; an int or a list.
struct Axes {
  bool all = true;
  std::vector<int64_t> list;
};

Axes AxesOf(const Node& node) {
  Axes axes;
  auto it = node.attrs().find("axis");
  if (it == node.attrs().end()) return axes;
  axes.all = false;
  if (it->second.Is<int64_t>()) {
    axes.list.push_back(it->second.Get<int64_t>());
  } else if (it->second.Is<std::vector<int64_t>>()) {
    axes.list = it->second.Get<std::vector<int64_t>>();
  }
  return axes;
}

// Which of `rank` axes `axes` reduces; InvalidArgument for a bad or repeated axis.
StatusOr<std::vector<bool>> ReducedAxes(const Axes& axes, const Shape& shape) {
  const int rank = shape.rank();
  std::vector<bool> reduce(rank, axes.all);
  for (int64_t a : axes.list) {
    int axis;
    if (!cpu::NormalizeAxis(a, rank, &axis)) {
      return InvalidArgument("reduction axis " + std::to_string(a) +
                             " is out of range for shape " + shape.ToString());
    }
    if (reduce[axis]) {
      return InvalidArgument("duplicate reduction axis " + std::to_string(a) + " in " +
                             cpu::IntListToString(axes.list));
    }
    reduce[axis] = true;
  }
  return reduce;
}

// The kept and reduced halves of x's dims as indexes into x (row-major strides).
struct ReductionPlan {
  StridedIndex kept;
  StridedIndex reduced;
  int64_t reduced_count = 1;
  int64_t kept_count = 1;
};

StatusOr<ReductionPlan> PlanReduction(const Shape& x, const std::vector<bool>& reduce) {
  AF_ASSIGN_OR_RETURN(StridedIndex all, ContiguousIndex(x));
  ReductionPlan plan;
  for (int d = 0; d < x.rank(); ++d) {
    StridedIndex& half = reduce[d] ? plan.reduced : plan.kept;
    half.dims[half.rank] = all.dims[d];
    half.strides[half.rank] = all.strides[d];
    ++half.rank;
    (reduce[d] ? plan.reduced_count : plan.kept_count) *= x.dim(d);
  }
  return plan;
}

template <typename T, ReduceOp kOp>
class ReductionGpuKernel : public GpuKernel {
 public:
  explicit ReductionGpuKernel(const Node& node) : GpuKernel(node), axes_(AxesOf(node)) {
    auto kd = node.attrs().find("keep_dims");
    keep_dims_ = kd != node.attrs().end() && kd->second.Is<bool>() && kd->second.Get<bool>();
  }

  Status Launch(GpuLaunch* l) override {
    const Tensor& x = l->inputs[0];
    AF_ASSIGN_OR_RETURN(std::vector<bool> reduce, ReducedAxes(axes_, x.shape()));
    std::vector<int64_t> out_dims;
    for (int d = 0; d < x.rank(); ++d) {
      if (!reduce[d]) {
        out_dims.push_back(x.dim(d));
      } else if (keep_dims_) {
        out_dims.push_back(1);
      }
    }
    AF_ASSIGN_OR_RETURN(ReductionPlan plan, PlanReduction(x.shape(), reduce));
    AF_ASSIGN_OR_RETURN(Tensor y, l->AllocateOutput(0, Shape(std::move(out_dims))));
    return Queued(Reduce(l->device, kOp, ElemTypeOf(DTypeOf<T>::value), x.raw_data(), plan.kept,
                         plan.reduced, plan.reduced_count, y.raw_data(), y.NumElements()));
  }

 private:
  const Axes axes_;
  bool keep_dims_ = false;
};

// Input: logits [..., C] (rank >= 1). Output: same shape, along the last axis.
template <typename T, bool kLog>
class SoftmaxGpuKernel : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;
  Status Launch(GpuLaunch* l) override {
    const Tensor& x = l->inputs[0];
    if (x.rank() < 1) {
      return InvalidArgument("needs logits of rank >= 1, got " + x.shape().ToString());
    }
    AF_ASSIGN_OR_RETURN(Tensor y, l->AllocateOutput(0, x.shape()));
    const int64_t cols = x.dim(x.rank() - 1);
    const int64_t rows = cols == 0 ? 0 : x.NumElements() / cols;
    return Queued(Softmax(l->device, ElemTypeOf(DTypeOf<T>::value), kLog, x.raw_data(),
                          y.raw_data(), rows, cols));
  }
};

// Inputs: logits [N,C], labels [N,C]. Outputs: loss [N], backprop [N,C].
template <typename T>
class SoftmaxCrossEntropyGpuKernel : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;
  Status Launch(GpuLaunch* l) override {
    const Tensor& logits = l->inputs[0];
    const Tensor& labels = l->inputs[1];
    if (logits.rank() != 2 || labels.shape() != logits.shape()) {
      return InvalidArgument("needs logits [N,C] and labels [N,C], got " +
                             logits.shape().ToString() + " and " + labels.shape().ToString());
    }
    AF_ASSIGN_OR_RETURN(Tensor loss, l->AllocateOutput(0, Shape{logits.dim(0)}));
    AF_ASSIGN_OR_RETURN(Tensor backprop, l->AllocateOutput(1, logits.shape()));
    return Queued(SoftmaxCrossEntropy(l->device, ElemTypeOf(DTypeOf<T>::value),
                                      logits.raw_data(), labels.raw_data(), loss.raw_data(),
                                      backprop.raw_data(), logits.dim(0), logits.dim(1)));
  }
};

// Inputs: logits [N,C], labels [N] int32/int64. Outputs: loss [N], backprop [N,C].
// A label outside [0, C) is found on the device and read back after the work
// completes: the kernel then fails naming the row and the label.
template <typename T>
class SparseSoftmaxCrossEntropyGpuKernel : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;
  Status Launch(GpuLaunch* l) override {
    const Tensor& logits = l->inputs[0];
    const Tensor& labels = l->inputs[1];
    const bool int_labels = labels.dtype() == DType::kInt32 || labels.dtype() == DType::kInt64;
    if (logits.rank() != 2 || labels.rank() != 1 || !int_labels ||
        labels.dim(0) != logits.dim(0)) {
      return InvalidArgument("needs logits [N,C] and int32/int64 labels [N], got " +
                             logits.DebugString() + " and " + labels.DebugString());
    }
    const int64_t rows = logits.dim(0);
    const int64_t cols = logits.dim(1);
    AF_ASSIGN_OR_RETURN(Tensor loss, l->AllocateOutput(0, Shape{rows}));
    AF_ASSIGN_OR_RETURN(Tensor backprop, l->AllocateOutput(1, logits.shape()));
    AF_ASSIGN_OR_RETURN(Tensor bad, AllocateDeviceTensor(l->device, DType::kInt64, Shape{2}));
    AF_RETURN_IF_ERROR(Queued(SparseSoftmaxCrossEntropy(
        l->device, ElemTypeOf(DTypeOf<T>::value), logits.raw_data(), labels.raw_data(),
        ElemTypeOf(labels.dtype()), loss.raw_data(), backprop.raw_data(), rows, cols,
        bad.data<int64_t>())));
    AF_ASSIGN_OR_RETURN(Tensor bad_host, QueueCopyToHost(l->device, bad));
    KernelContext* ctx = l->ctx;
    l->after = [ctx, bad_host, cols] {
      const int64_t row = bad_host.data<int64_t>()[0];
      if (row < 0) return;
      ctx->Fail(Code::kInvalidArgument, "label " + std::to_string(bad_host.data<int64_t>()[1]) +
                                            " at row " + std::to_string(row) +
                                            " is outside [0, " + std::to_string(cols) + ")");
    };
    return Status::OK();
  }
};

// Inputs: grad [big], like [small] (only its shape), small broadcasting to big.
// Output: like's shape, grad summed over the broadcast dims.
template <typename T>
class SumToShapeOfGpuKernel : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;
  bool ShapeOnlyInput(int i) const override { return i == 1; }
  Status Launch(GpuLaunch* l) override {
    const Tensor& grad = l->inputs[0];
    const Shape& like = l->inputs[1].shape();
    const int offset = grad.rank() - like.rank();
    bool ok = offset >= 0;
    std::vector<bool> reduce(grad.rank(), true);
    for (int d = 0; ok && d < grad.rank(); ++d) {
      if (d < offset) continue;
      const int64_t small = like.dim(d - offset);
      ok = small == 1 || small == grad.dim(d);
      reduce[d] = small == 1 && grad.dim(d) != 1;
    }
    if (!ok) {
      return InvalidArgument("like " + like.ToString() + " does not broadcast to grad " +
                             grad.shape().ToString());
    }
    if (grad.NumElements() == like.num_elements()) {  // nothing to sum: a view
      l->ctx->set_output(0, *grad.Reshaped(like));
      return Status::OK();
    }
    AF_ASSIGN_OR_RETURN(ReductionPlan plan, PlanReduction(grad.shape(), reduce));
    AF_ASSIGN_OR_RETURN(Tensor out, l->AllocateOutput(0, like));
    return Queued(Reduce(l->device, ReduceOp::kSum, ElemTypeOf(DTypeOf<T>::value),
                         grad.raw_data(), plan.kept, plan.reduced, plan.reduced_count,
                         out.raw_data(), out.NumElements()));
  }
};

// Inputs: x, the reduction of like over `axis` (absent = every axis) with keep_dims;
// like (only its shape). Output: like's shape, x repeated along the reduced axes.
template <typename T>
class BroadcastToShapeOfGpuKernel : public GpuKernel {
 public:
  explicit BroadcastToShapeOfGpuKernel(const Node& node)
      : GpuKernel(node), axes_(AxesOf(node)), keep_dims_(node.attr<bool>("keep_dims")) {}
  bool ShapeOnlyInput(int i) const override { return i == 1; }

  Status Launch(GpuLaunch* l) override {
    const Tensor& x = l->inputs[0];
    const Shape& like = l->inputs[1].shape();
    auto reduce = ReducedAxes(axes_, like);
    if (!reduce.ok()) {
      return InvalidArgument("axis " + cpu::IntListToString(axes_.list) +
                             " is out of range or repeated for like " + like.ToString());
    }
    std::vector<int64_t> kept;
    for (int d = 0; d < like.rank(); ++d) {
      if (!(*reduce)[d]) {
        kept.push_back(like.dim(d));
      } else if (keep_dims_) {
        kept.push_back(1);
      }
    }
    if (x.shape() != Shape(kept)) {
      return InvalidArgument("x " + x.shape().ToString() + " is not the reduction of like " +
                             like.ToString() + " (expected " + Shape(kept).ToString() + ")");
    }
    if (x.NumElements() == like.num_elements()) {  // nothing to repeat: a view
      l->ctx->set_output(0, *x.Reshaped(like));
      return Status::OK();
    }
    AF_ASSIGN_OR_RETURN(StridedIndex index, ContiguousIndex(like));
    // x's strides over like's dims: 0 along reduced axes, row-major otherwise.
    int64_t stride = 1;
    for (int d = like.rank() - 1; d >= 0; --d) {
      index.strides[d] = (*reduce)[d] ? 0 : stride;
      if (!(*reduce)[d]) stride *= like.dim(d);
    }
    AF_ASSIGN_OR_RETURN(Tensor out, l->AllocateOutput(0, like));
    return Queued(Gather(l->device, ElemTypeOf(DTypeOf<T>::value), x.raw_data(), index,
                         out.raw_data(), out.NumElements()));
  }

 private:
  const Axes axes_;
  const bool keep_dims_;
};

template <typename T> using SumGpu = ReductionGpuKernel<T, ReduceOp::kSum>;
template <typename T> using MeanGpu = ReductionGpuKernel<T, ReduceOp::kMean>;
template <typename T> using MaxGpu = ReductionGpuKernel<T, ReduceOp::kMax>;
template <typename T> using MinGpu = ReductionGpuKernel<T, ReduceOp::kMin>;
template <typename T> using SoftmaxGpu = SoftmaxGpuKernel<T, false>;
template <typename T> using LogSoftmaxGpu = SoftmaxGpuKernel<T, true>;

const GpuKernelRegistrations<SumGpu, float, double> reg_sum("Sum");
const GpuKernelRegistrations<MeanGpu, float, double> reg_mean("Mean");
const GpuKernelRegistrations<MaxGpu, float, double> reg_max("Max");
const GpuKernelRegistrations<MinGpu, float, double> reg_min("Min");
const GpuKernelRegistrations<SoftmaxGpu, float, double> reg_softmax("Softmax");
const GpuKernelRegistrations<LogSoftmaxGpu, float, double> reg_log_softmax("LogSoftmax");
const GpuKernelRegistrations<SoftmaxCrossEntropyGpuKernel, float, double> reg_xent(
    "SoftmaxCrossEntropyWithLogits");
const GpuKernelRegistrations<SparseSoftmaxCrossEntropyGpuKernel, float, double> reg_sparse_xent(
    "SparseSoftmaxCrossEntropyWithLogits");
const GpuKernelRegistrations<SumToShapeOfGpuKernel, float, double> reg_sum_to_shape_of(
    "SumToShapeOf");
const GpuKernelRegistrations<BroadcastToShapeOfGpuKernel, float, double>
    reg_broadcast_to_shape_of("BroadcastToShapeOf");

}  // namespace
}  // namespace gpu
}  // namespace actorflow
