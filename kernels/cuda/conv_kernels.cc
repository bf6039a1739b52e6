// GPU kernels of Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter (NHWC input,
// HWIO filter; float32 and float64), with the CPU kernels' checks and messages
// (kernels/cpu/conv_kernels.cc) and the same scheme: im2col + gemm, where the patch
// matrix P [OH*OW, KH*KW*C] of an image holds the window under each output pixel and
// the HWIO filter is the row-major matrix F [KH*KW*C, O]:
//   forward:          Y = P F
//   input gradient:   dP = dY F^T, gathered back into the image (Col2Im)
//   filter gradient:  dF = sum over images of P^T dY.
// The patch matrices of several images are built at once and multiplied by one cuBLAS
// gemm (consecutive images' rows are consecutive in P, Y and dY), in chunks of images
// whose patches fit kPatchBudgetBytes. A 1x1 window at stride 1 needs no patches.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/conv_launch.h"
#include "kernels/cuda/gpu_kernel.h"
#include "kernels/cuda/window_kernel_util.h"

namespace actorflow {
namespace gpu {
namespace {

// The device memory that one chunk's patch matrix may take.
constexpr int64_t kPatchBudgetBytes = int64_t{256} << 20;

using cpu::ConvGeometry;
using cpu::IsPointwise;

// The images per chunk: as many as keep the patches within kPatchBudgetBytes, >= 1.
int64_t ImagesPerChunk(const cpu::WindowGeometry& g, size_t element_size) {
  const int64_t per_image = g.out_h * g.out_w * g.k_h * g.k_w * g.channels;
  if (per_image == 0) return std::max<int64_t>(g.batch, 1);
  const int64_t fit = kPatchBudgetBytes / static_cast<int64_t>(element_size) / per_image;
  return std::max<int64_t>(1, std::min(fit, g.batch));
}

// The element `elements` past the start of t's device buffer.
template <typename T>
const T* At(const Tensor& t, int64_t elements) { return t.data<T>() + elements; }
template <typename T>
T* MutableAt(Tensor& t, int64_t elements) { return t.data<T>() + elements; }

// Inputs: input [N,H,W,C], filter [KH,KW,C,O]. Output: [N,OH,OW,O].
template <typename T>
class Conv2DGpuKernel : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;

  Status Launch(GpuLaunch* l) override {
    const Tensor& x = l->inputs[0];
    const Tensor& filter = l->inputs[1];
    AF_ASSIGN_OR_RETURN(cpu::WindowGeometry g,
                        ConvGeometry(node(), x.shape(), filter.shape(), nullptr));
    const int64_t out_c = filter.dim(3);
    const Shape out_shape{g.batch, g.out_h, g.out_w, out_c};
    AF_RETURN_IF_ERROR(CheckOutputSize(*l, 0, out_shape));
    AF_ASSIGN_OR_RETURN(Tensor y, l->AllocateOutput(0, out_shape));
    if (y.NumElements() == 0) return Status::OK();
    const ElemType type = ElemTypeOf(DTypeOf<T>::value);
    const int64_t rows = g.out_h * g.out_w;
    const int64_t row_len = g.k_h * g.k_w * g.channels;
    if (IsPointwise(g)) {
      return Queued(MatMul(l->device, type, false, false, g.batch * rows, out_c, row_len,
                           x.data<T>(), filter.data<T>(), y.data<T>()));
    }
    const WindowShape shape = ToWindowShape(g);
    const int64_t chunk = ImagesPerChunk(g, sizeof(T));
    AF_ASSIGN_OR_RETURN(Tensor patches, AllocateDeviceTensor(l->device, DTypeOf<T>::value,
                                                             Shape{chunk * rows, row_len}));
    for (int64_t n = 0; n < g.batch; n += chunk) {
      const int64_t images = std::min(chunk, g.batch - n);
      AF_RETURN_IF_ERROR(Queued(Im2Col(l->device, type, shape, images,
                                       At<T>(x, n * g.in_h * g.in_w * g.channels),
                                       patches.data<T>())));
      AF_RETURN_IF_ERROR(Queued(MatMul(l->device, type, false, false, images * rows, out_c,
                                       row_len, patches.data<T>(), filter.data<T>(),
                                       MutableAt<T>(y, n * rows * out_c))));
    }
    return Status::OK();
  }
};

// Inputs: input_sizes [4], filter [KH,KW,C,O], out_backprop [N,OH,OW,O].
// Output: input_sizes, the gradient of Conv2D's input.
template <typename T>
class Conv2DBackpropInputGpuKernel : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;
  bool ShapeOnlyInput(int i) const override { return i == 0; }

  Status Launch(GpuLaunch* l) override {
    return WithHostSizes(l, 0, "input_sizes", [this](GpuLaunch* l, const Shape& input_shape) {
      return LaunchWithSizes(l, input_shape);
    });
  }

 private:
  Status LaunchWithSizes(GpuLaunch* l, const Shape& input_shape) {
    const Tensor& filter = l->inputs[1];
    const Tensor& dy = l->inputs[2];
    AF_ASSIGN_OR_RETURN(cpu::WindowGeometry g,
                        ConvGeometry(node(), input_shape, filter.shape(), &dy));
    AF_RETURN_IF_ERROR(CheckOutputSize(*l, 0, input_shape));
    AF_ASSIGN_OR_RETURN(Tensor dx, l->AllocateOutput(0, input_shape));
    if (dx.NumElements() == 0) return Status::OK();
    const ElemType type = ElemTypeOf(DTypeOf<T>::value);
    const int64_t out_c = filter.dim(3);
    const int64_t rows = g.out_h * g.out_w;
    const int64_t row_len = g.k_h * g.k_w * g.channels;
    if (IsPointwise(g)) {  // dx [N*H*W, C] = dy [N*H*W, O] F^T
      return Queued(MatMul(l->device, type, false, true, g.batch * rows, row_len, out_c,
                           dy.data<T>(), filter.data<T>(), dx.data<T>()));
    }
    const WindowShape shape = ToWindowShape(g);
    const int64_t chunk = ImagesPerChunk(g, sizeof(T));
    AF_ASSIGN_OR_RETURN(Tensor patches, AllocateDeviceTensor(l->device, DTypeOf<T>::value,
                                                             Shape{chunk * rows, row_len}));
    for (int64_t n = 0; n < g.batch; n += chunk) {
      const int64_t images = std::min(chunk, g.batch - n);
      AF_RETURN_IF_ERROR(Queued(MatMul(l->device, type, false, true, images * rows, row_len,
                                       out_c, At<T>(dy, n * rows * out_c), filter.data<T>(),
                                       patches.data<T>())));
      AF_RETURN_IF_ERROR(Queued(Col2Im(l->device, type, shape, images, patches.data<T>(),
                                       MutableAt<T>(dx, n * g.in_h * g.in_w * g.channels))));
    }
    return Status::OK();
  }
};

// Inputs: input [N,H,W,C], filter_sizes [4], out_backprop [N,OH,OW,O].
// Output: filter_sizes, the gradient of Conv2D's filter.
template <typename T>
class Conv2DBackpropFilterGpuKernel : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;
  bool ShapeOnlyInput(int i) const override { return i == 1; }

  Status Launch(GpuLaunch* l) override {
    return WithHostSizes(l, 1, "filter_sizes", [this](GpuLaunch* l, const Shape& filter_shape) {
      return LaunchWithSizes(l, filter_shape);
    });
  }

 private:
  Status LaunchWithSizes(GpuLaunch* l, const Shape& filter_shape) {
    const Tensor& x = l->inputs[0];
    const Tensor& dy = l->inputs[2];
    AF_ASSIGN_OR_RETURN(cpu::WindowGeometry g,
                        ConvGeometry(node(), x.shape(), filter_shape, &dy));
    AF_RETURN_IF_ERROR(CheckOutputSize(*l, 0, filter_shape));
    AF_ASSIGN_OR_RETURN(Tensor df, l->AllocateOutput(0, filter_shape));
    if (df.NumElements() == 0) return Status::OK();
    const ElemType type = ElemTypeOf(DTypeOf<T>::value);
    const int64_t out_c = filter_shape.dim(3);
    const int64_t rows = g.out_h * g.out_w;
    const int64_t row_len = g.k_h * g.k_w * g.channels;
    if (IsPointwise(g) || g.batch * rows == 0) {
      // dF [C, O] = x [N*H*W, C]^T dy [N*H*W, O]; an empty sum (k = 0) gives zeros.
      return Queued(MatMul(l->device, type, true, false, row_len, out_c, g.batch * rows,
                           x.data<T>(), dy.data<T>(), df.data<T>()));
    }
    const WindowShape shape = ToWindowShape(g);
    const int64_t chunk = ImagesPerChunk(g, sizeof(T));
    AF_ASSIGN_OR_RETURN(Tensor patches, AllocateDeviceTensor(l->device, DTypeOf<T>::value,
                                                             Shape{chunk * rows, row_len}));
    // The first chunk's product goes straight into df, later ones through `partial`.
    Tensor partial;
    if (chunk < g.batch) {
      AF_ASSIGN_OR_RETURN(partial, AllocateDeviceTensor(l->device, DTypeOf<T>::value,
                                                        filter_shape));
    }
    for (int64_t n = 0; n < g.batch; n += chunk) {
      const int64_t images = std::min(chunk, g.batch - n);
      AF_RETURN_IF_ERROR(Queued(Im2Col(l->device, type, shape, images,
                                       At<T>(x, n * g.in_h * g.in_w * g.channels),
                                       patches.data<T>())));
      T* product = n == 0 ? df.data<T>() : partial.data<T>();
      AF_RETURN_IF_ERROR(Queued(MatMul(l->device, type, true, false, row_len, out_c,
                                       images * rows, patches.data<T>(),
                                       At<T>(dy, n * rows * out_c), product)));
      if (n > 0) {
        AF_RETURN_IF_ERROR(
            Queued(AddInto(l->device, type, product, df.data<T>(), df.NumElements())));
      }
    }
    return Status::OK();
  }
};

const GpuKernelRegistrations<Conv2DGpuKernel, float, double> reg_conv2d("Conv2D");
const cpu::SizesFirstKernelRegistrations<Conv2DBackpropInputGpuKernel> reg_conv2d_input(
    "Conv2DBackpropInput", kDeviceGpu);
const GpuKernelRegistrations<Conv2DBackpropFilterGpuKernel, float, double> reg_conv2d_filter(
    "Conv2DBackpropFilter");

}  // namespace
}  // namespace gpu
}  // namespace actorflow
