// The GPU math of the convolution and pooling kernels (conv.cu, pool.cu), without
// CUDA types, in the manner of gpu_launch.h: each function checks nothing about
// shapes (the kernel classes did, with kernels/cpu/window_geometry.h), queues its
// work on the device's stream and returns at once. Pointers are device memory.
// Element types: float32 and float64.
//
// Layouts: images NHWC, filters HWIO, the window of output (oy, ox) starting at input
// row oy * stride_h - pad_top and column ox * stride_w - pad_left (TensorFlow's rules).
// A patch matrix holds one row per output pixel, [N*OH*OW, KH*KW*C], each row the
// window under that pixel in (ky, kx, c) order, zeros where it covers padding: with it
// the HWIO filter is the row-major matrix [KH*KW*C, O] and a convolution is a gemm.
//
// Thread safety: as gpu_device.h: any thread, work ordered by the device's stream.
#ifndef ACTORFLOW_KERNELS_CUDA_CONV_LAUNCH_H_
#define ACTORFLOW_KERNELS_CUDA_CONV_LAUNCH_H_

#include <cstdint>

#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/gpu_launch.h"

namespace actorflow {
namespace gpu {

// The window geometry as plain values (a copy of cpu::WindowGeometry that nvcc can
// take without the graph headers).
struct WindowShape {
  int64_t batch = 0, in_h = 0, in_w = 0, channels = 0;
  int64_t k_h = 0, k_w = 0, stride_h = 1, stride_w = 1;
  int64_t out_h = 0, out_w = 0;
  int64_t pad_top = 0, pad_left = 0;
};

// patches [images*OH*OW, KH*KW*C] from `images` consecutive images [H,W,C] at `x`.
GpuError Im2Col(GpuDevice* device, ElemType type, const WindowShape& g, int64_t images,
                const void* x, void* patches);

// dx [images,H,W,C] = the adjoint of Im2Col applied to `patches`: every element of dx
// is written (the sum of the patch entries that copied it, 0 when none did).
GpuError Col2Im(GpuDevice* device, ElemType type, const WindowShape& g, int64_t images,
                const void* patches, void* dx);

// y[i] += x[i] for i < n.
GpuError AddInto(GpuDevice* device, ElemType type, const void* x, void* y, int64_t n);

// y [N,OH,OW,C] = the maximum (or the mean) of each window of x [N,H,W,C] clipped to
// the image: padding never wins a maximum nor counts in a mean.
GpuError MaxPool(GpuDevice* device, ElemType type, const WindowShape& g, const void* x,
                 void* y);
GpuError AvgPool(GpuDevice* device, ElemType type, const WindowShape& g, const void* x,
                 void* y);

// dx [N,H,W,C] (every element written) from grad [N,OH,OW,C]: each output's gradient
// goes to the first maximum of its clipped window in row-major window order (the one
// MaxPool keeps). `argmax` is scratch of N*OH*OW*C int64s.
GpuError MaxPoolGrad(GpuDevice* device, ElemType type, const WindowShape& g, const void* x,
                     const void* grad, int64_t* argmax, void* dx);

// dx [N,H,W,C] (every element written): each output's gradient spread evenly over its
// clipped window.
GpuError AvgPoolGrad(GpuDevice* device, ElemType type, const WindowShape& g, const void* grad,
                     void* dx);

}  // namespace gpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CUDA_CONV_LAUNCH_H_
