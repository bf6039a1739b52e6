// GPU kernels of MaxPool, AvgPool, MaxPoolGrad and AvgPoolGrad (NHWC; float32 and
// float64), with the CPU kernels' checks, messages and arithmetic
// (kernels/cpu/pool_kernels.cc): windows clipped to the image, MaxPoolGrad routing each
// gradient to the first maximum of its window. The math is in pool.cu.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/conv_launch.h"
#include "kernels/cuda/gpu_kernel.h"
#include "kernels/cuda/window_kernel_util.h"

namespace actorflow {
namespace gpu {
namespace {

using cpu::PoolAttrsOf;

Shape PooledShape(const cpu::WindowGeometry& g) {
  return Shape{g.batch, g.out_h, g.out_w, g.channels};
}

Status CheckGradShape(const Tensor& grad, const cpu::WindowGeometry& g) {
  if (grad.shape() != PooledShape(g)) {
    return InvalidArgument("grad " + grad.shape().ToString() + " is not the pooled shape " +
                           PooledShape(g).ToString());
  }
  return Status::OK();
}

// Input: value [N,H,W,C]. Output: [N,OH,OW,C].
template <typename T, bool kMax>
class PoolGpuKernel : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;

  Status Launch(GpuLaunch* l) override {
    const Tensor& x = l->inputs[0];
    AF_ASSIGN_OR_RETURN(cpu::WindowGeometry g,
                        cpu::ComputeWindowGeometry(x.shape(), PoolAttrsOf(node())));
    AF_ASSIGN_OR_RETURN(Tensor y, l->AllocateOutput(0, PooledShape(g)));
    const ElemType type = ElemTypeOf(DTypeOf<T>::value);
    return Queued(kMax ? MaxPool(l->device, type, ToWindowShape(g), x.raw_data(), y.raw_data())
                       : AvgPool(l->device, type, ToWindowShape(g), x.raw_data(), y.raw_data()));
  }
};

// Inputs: orig_input [N,H,W,C], orig_output [N,OH,OW,C], grad [N,OH,OW,C].
// Output: orig_input's shape.
template <typename T>
class MaxPoolGradGpuKernel : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;
  bool ShapeOnlyInput(int i) const override { return i == 1; }  // the maxima are recomputed

  Status Launch(GpuLaunch* l) override {
    const Tensor& x = l->inputs[0];
    const Tensor& grad = l->inputs[2];
    AF_ASSIGN_OR_RETURN(cpu::WindowGeometry g,
                        cpu::ComputeWindowGeometry(x.shape(), PoolAttrsOf(node())));
    AF_RETURN_IF_ERROR(CheckGradShape(grad, g));
    AF_ASSIGN_OR_RETURN(Tensor dx, l->AllocateOutput(0, x.shape()));
    AF_ASSIGN_OR_RETURN(Tensor argmax,
                        AllocateDeviceTensor(l->device, DType::kInt64, grad.shape()));
    return Queued(MaxPoolGrad(l->device, ElemTypeOf(DTypeOf<T>::value), ToWindowShape(g),
                              x.raw_data(), grad.raw_data(), argmax.data<int64_t>(),
                              dx.raw_data()));
  }
};

// Inputs: orig_input_shape [4], grad [N,OH,OW,C]. Output: orig_input_shape.
template <typename T>
class AvgPoolGradGpuKernel : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;
  bool ShapeOnlyInput(int i) const override { return i == 0; }

  Status Launch(GpuLaunch* l) override {
    return WithHostSizes(l, 0, "orig_input_shape", [this](GpuLaunch* l, const Shape& shape) {
      return LaunchWithSizes(l, shape);
    });
  }

 private:
  Status LaunchWithSizes(GpuLaunch* l, const Shape& shape) {
    const Tensor& grad = l->inputs[1];
    AF_ASSIGN_OR_RETURN(cpu::WindowGeometry g,
                        cpu::ComputeWindowGeometry(shape, PoolAttrsOf(node())));
    AF_RETURN_IF_ERROR(CheckGradShape(grad, g));
    AF_RETURN_IF_ERROR(CheckOutputSize(*l, 0, shape));
    AF_ASSIGN_OR_RETURN(Tensor dx, l->AllocateOutput(0, shape));
    return Queued(AvgPoolGrad(l->device, ElemTypeOf(DTypeOf<T>::value), ToWindowShape(g),
                              grad.raw_data(), dx.raw_data()));
  }
};

template <typename T> using MaxPoolGpu = PoolGpuKernel<T, true>;
template <typename T> using AvgPoolGpu = PoolGpuKernel<T, false>;

const GpuKernelRegistrations<MaxPoolGpu, float, double> reg_max_pool("MaxPool");
const GpuKernelRegistrations<AvgPoolGpu, float, double> reg_avg_pool("AvgPool");
const GpuKernelRegistrations<MaxPoolGradGpuKernel, float, double> reg_max_pool_grad(
    "MaxPoolGrad");
const cpu::SizesFirstKernelRegistrations<AvgPoolGradGpuKernel> reg_avg_pool_grad("AvgPoolGrad",
                                                                        kDeviceGpu);

}  // namespace
}  // namespace gpu
}  // namespace actorflow
