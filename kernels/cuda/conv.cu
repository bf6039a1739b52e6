// The patch-matrix kernels of the GPU convolutions (conv_launch.h): Im2Col, its
// adjoint Col2Im and AddInto; the gemms go through MatMul (blas.cu). Col2Im gathers:
// one thread per image element sums the patch entries that copied it, in output
// order, so the result is deterministic and needs no atomics.
#include "kernels/cuda/conv_launch.h"
#include "kernels/cuda/cuda_internal.cuh"
#include "kernels/cuda/window.cuh"

namespace actorflow {
namespace gpu {
namespace {

// One thread per patch entry (grid-stride).
template <typename T>
__global__ void Im2ColKernel(WindowShape g, const T* __restrict__ x, T* __restrict__ patches,
                             int64_t n) {
  const int64_t row_len = g.k_h * g.k_w * g.channels;
  const int64_t rows = g.out_h * g.out_w;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t p = i / row_len;    // patch row: image * rows + pixel
    const int64_t col = i % row_len;  // (ky, kx, c)
    const int64_t image = p / rows;
    const int64_t pixel = p % rows;
    const int64_t c = col % g.channels;
    const int64_t kx = (col / g.channels) % g.k_w;
    const int64_t ky = col / (g.channels * g.k_w);
    const int64_t iy = (pixel / g.out_w) * g.stride_h - g.pad_top + ky;
    const int64_t ix = (pixel % g.out_w) * g.stride_w - g.pad_left + kx;
    const bool inside = iy >= 0 && iy < g.in_h && ix >= 0 && ix < g.in_w;
    patches[i] = inside ? x[((image * g.in_h + iy) * g.in_w + ix) * g.channels + c] : T(0);
  }
}

// One thread per image element (grid-stride).
template <typename T>
__global__ void Col2ImKernel(WindowShape g, const T* __restrict__ patches, T* __restrict__ dx,
                             int64_t n) {
  const int64_t row_len = g.k_h * g.k_w * g.channels;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = i % g.channels;
    const int64_t ix = (i / g.channels) % g.in_w;
    const int64_t iy = (i / (g.channels * g.in_w)) % g.in_h;
    const int64_t image = i / (g.channels * g.in_w * g.in_h);
    const CoverRange ys = CoveringOutputs(iy, g.k_h, g.stride_h, g.pad_top, g.out_h);
    const CoverRange xs = CoveringOutputs(ix, g.k_w, g.stride_w, g.pad_left, g.out_w);
    T sum = T(0);
    for (int64_t oy = ys.first; oy <= ys.last; ++oy) {
      const int64_t ky = iy + g.pad_top - oy * g.stride_h;
      for (int64_t ox = xs.first; ox <= xs.last; ++ox) {
        const int64_t kx = ix + g.pad_left - ox * g.stride_w;
        const int64_t p = (image * g.out_h + oy) * g.out_w + ox;
        sum += patches[p * row_len + (ky * g.k_w + kx) * g.channels + c];
      }
    }
    dx[i] = sum;
  }
}

template <typename T>
__global__ void AddIntoKernel(const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    y[i] += x[i];
  }
}

}  // namespace

GpuError Im2Col(GpuDevice* device, ElemType type, const WindowShape& g, int64_t images,
                const void* x, void* patches) {
  const int64_t n = images * g.out_h * g.out_w * g.k_h * g.k_w * g.channels;
  if (n == 0) return GpuError();
  GpuError e;
  if (!VisitFloat(type, [&](auto zero) {
        using T = decltype(zero);
        Im2ColKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
            g, static_cast<const T*>(x), static_cast<T*>(patches), n);
        e = LaunchError("Im2Col");
      })) {
    return NotFloat("Im2Col");
  }
  return e;
}

GpuError Col2Im(GpuDevice* device, ElemType type, const WindowShape& g, int64_t images,
                const void* patches, void* dx) {
  const int64_t n = images * g.in_h * g.in_w * g.channels;
  if (n == 0) return GpuError();
  GpuError e;
  if (!VisitFloat(type, [&](auto zero) {
        using T = decltype(zero);
        Col2ImKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
            g, static_cast<const T*>(patches), static_cast<T*>(dx), n);
        e = LaunchError("Col2Im");
      })) {
    return NotFloat("Col2Im");
  }
  return e;
}

GpuError AddInto(GpuDevice* device, ElemType type, const void* x, void* y, int64_t n) {
  if (n == 0) return GpuError();
  GpuError e;
  if (!VisitFloat(type, [&](auto zero) {
        using T = decltype(zero);
        AddIntoKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
            static_cast<const T*>(x), static_cast<T*>(y), n);
        e = LaunchError("AddInto");
      })) {
    return NotFloat("AddInto");
  }
  return e;
}

}  // namespace gpu
}  // namespace actorflow
