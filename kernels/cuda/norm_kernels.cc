// GPU kernels of FusedBatchNorm, FusedBatchNormGrad and Dropout (float32 and
// float64), with the CPU kernels' checks and messages (kernels/cpu/batch_norm_shapes.h)
// and arithmetic; the math is in norm.cu. Dropout counts its runs as the CPU kernel
// does and draws the same masks (kernels/random_bits.h).
#include <atomic>
#include <cstdint>

#include "kernels/cpu/batch_norm_shapes.h"
#include "kernels/cuda/gpu_kernel.h"
#include "kernels/cuda/norm_launch.h"
#include "kernels/random_bits.h"

namespace actorflow {
namespace gpu {
namespace {

Status Queued(const GpuError& e) { return e.ok() ? Status::OK() : Internal(e.message()); }

// Device scratch for the per-channel sums of a [rows, channels] input.
StatusOr<Tensor> Scratch(GpuDevice* device, const cpu::BatchNormDims& dims) {
  return AllocateDeviceTensor(device, DType::kFloat64,
                              Shape{BatchNormScratchDoubles(dims.rows, dims.channels)});
}

// Inputs: x [...,C], scale [C], offset [C], mean [C], variance [C] (not read in
// training, so not copied to the device then). Outputs: y, batch_mean, batch_variance.
template <typename T>
class FusedBatchNormGpu : public GpuKernel {
 public:
  explicit FusedBatchNormGpu(const Node& node)
      : GpuKernel(node),
        epsilon_(node.attr<double>("epsilon")),
        training_(node.attr<bool>("is_training")) {}

  bool ShapeOnlyInput(int i) const override { return training_ && (i == 3 || i == 4); }

  Status Launch(GpuLaunch* l) override {
    const Tensor& x = l->inputs[0];
    const Tensor& scale = l->inputs[1];
    const Tensor& offset = l->inputs[2];
    const Tensor& mean = l->inputs[3];
    const Tensor& variance = l->inputs[4];
    AF_ASSIGN_OR_RETURN(cpu::BatchNormDims dims,
                        cpu::CheckBatchNormShapes("x", x.shape(),
                                                  {{"scale", &scale.shape()},
                                                   {"offset", &offset.shape()},
                                                   {"mean", &mean.shape(), training_},
                                                   {"variance", &variance.shape(), training_}}));
    AF_ASSIGN_OR_RETURN(Tensor y, l->AllocateOutput(0, x.shape()));
    AF_ASSIGN_OR_RETURN(Tensor batch_mean, l->AllocateOutput(1, Shape{dims.channels}));
    AF_ASSIGN_OR_RETURN(Tensor batch_variance, l->AllocateOutput(2, Shape{dims.channels}));
    AF_ASSIGN_OR_RETURN(Tensor scratch, Scratch(l->device, dims));
    return Queued(FusedBatchNorm(l->device, ElemTypeOf(DTypeOf<T>::value), dims.rows,
                                 dims.channels, epsilon_, training_, x.raw_data(),
                                 scale.raw_data(),
                                 offset.raw_data(), training_ ? nullptr : mean.raw_data(),
                                 training_ ? nullptr : variance.raw_data(), y.raw_data(),
                                 batch_mean.raw_data(), batch_variance.raw_data(),
                                 scratch.template data<double>()));
  }

 private:
  const double epsilon_;
  const bool training_;
};

// Inputs: y_backprop, x [...,C], scale, mean, variance [C]. Outputs: x_backprop,
// scale_backprop, offset_backprop.
template <typename T>
class FusedBatchNormGradGpu : public GpuKernel {
 public:
  explicit FusedBatchNormGradGpu(const Node& node)
      : GpuKernel(node),
        epsilon_(node.attr<double>("epsilon")),
        training_(node.attr<bool>("is_training")) {}

  Status Launch(GpuLaunch* l) override {
    const Tensor& dy = l->inputs[0];
    const Tensor& x = l->inputs[1];
    const Tensor& scale = l->inputs[2];
    const Tensor& mean = l->inputs[3];
    const Tensor& variance = l->inputs[4];
    if (dy.shape() != x.shape()) {
      return InvalidArgument("y_backprop " + dy.shape().ToString() + " and x " +
                             x.shape().ToString() + " must have the same shape");
    }
    AF_ASSIGN_OR_RETURN(
        cpu::BatchNormDims dims,
        cpu::CheckBatchNormShapes("x", x.shape(),
                                  {{"scale", &scale.shape()},
                                   {"mean", &mean.shape()},
                                   {"variance", &variance.shape()}}));
    AF_ASSIGN_OR_RETURN(Tensor dx, l->AllocateOutput(0, x.shape()));
    AF_ASSIGN_OR_RETURN(Tensor dscale, l->AllocateOutput(1, Shape{dims.channels}));
    AF_ASSIGN_OR_RETURN(Tensor doffset, l->AllocateOutput(2, Shape{dims.channels}));
    AF_ASSIGN_OR_RETURN(Tensor scratch, Scratch(l->device, dims));
    return Queued(FusedBatchNormGrad(l->device, ElemTypeOf(DTypeOf<T>::value), dims.rows,
                                     dims.channels, epsilon_, training_, dy.raw_data(),
                                     x.raw_data(), scale.raw_data(), mean.raw_data(),
                                     variance.raw_data(), dx.raw_data(), dscale.raw_data(),
                                     doffset.raw_data(), scratch.template data<double>()));
  }

 private:
  const double epsilon_;
  const bool training_;
};

// Input: x. Outputs: output = x * mask, mask.
template <typename T>
class DropoutGpu : public GpuKernel {
 public:
  explicit DropoutGpu(const Node& node)
      : GpuKernel(node),
        keep_prob_(node.attr<double>("keep_prob")),
        seed_(static_cast<uint64_t>(node.attr<int64_t>("seed"))) {}

  Status Launch(GpuLaunch* l) override {
    const Tensor& x = l->inputs[0];
    const uint64_t key = StreamKey(seed_, draws_.fetch_add(1, std::memory_order_relaxed));
    AF_ASSIGN_OR_RETURN(Tensor y, l->AllocateOutput(0, x.shape()));
    AF_ASSIGN_OR_RETURN(Tensor mask, l->AllocateOutput(1, x.shape()));
    return Queued(Dropout(l->device, ElemTypeOf(DTypeOf<T>::value), key, keep_prob_,
                          x.raw_data(), y.raw_data(), mask.raw_data(), x.NumElements()));
  }

 private:
  const double keep_prob_;
  const uint64_t seed_;
  std::atomic<uint64_t> draws_{0};
};

const GpuKernelRegistrations<FusedBatchNormGpu, float, double> reg_batch_norm("FusedBatchNorm");
const GpuKernelRegistrations<FusedBatchNormGradGpu, float, double> reg_batch_norm_grad(
    "FusedBatchNormGrad");
const GpuKernelRegistrations<DropoutGpu, float, double> reg_dropout("Dropout");

}  // namespace
}  // namespace gpu
}  // namespace actorflow
