// The pooling kernels of conv_launch.h, with the arithmetic of the CPU kernels
// (kernels/cpu/pool_kernels.cc) so that results agree to the last bit: windows are
// clipped to the image, a maximum keeps the first of equal values (strict <), a mean
// sums in row-major window order in T and scales by 1/count. The gradients gather:
// one thread per input element adds the gradients of the windows that route to it,
// in output order (the CPU's scatter order), so no atomics are needed.
#include "kernels/cuda/conv_launch.h"
#include "kernels/cuda/cuda_internal.cuh"
#include "kernels/cuda/window.cuh"

namespace actorflow {
namespace gpu {
namespace {

#define AF_GRID_STRIDE_LOOP(i, n)                                                    \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// An output index o of [N,OH,OW,C] split into its image, window and channel.
struct OutputPixel {
  int64_t image, c;
  ClippedWindow window;
};
__device__ __forceinline__ OutputPixel OutputAt(const WindowShape& g, int64_t o) {
  OutputPixel p;
  p.c = o % g.channels;
  const int64_t ox = (o / g.channels) % g.out_w;
  const int64_t oy = (o / (g.channels * g.out_w)) % g.out_h;
  p.image = o / (g.channels * g.out_w * g.out_h);
  p.window = WindowAt(g, oy, ox);
  return p;
}

// The offset of the first maximum of output o's window in x (std::max's choice).
template <typename T>
__device__ __forceinline__ int64_t ArgMaxOf(const WindowShape& g, const T* x, int64_t o) {
  const OutputPixel p = OutputAt(g, o);
  const int64_t base = p.image * g.in_h * g.in_w * g.channels + p.c;
  int64_t arg = base + (p.window.y0 * g.in_w + p.window.x0) * g.channels;
  for (int64_t iy = p.window.y0; iy < p.window.y1; ++iy) {
    for (int64_t ix = p.window.x0; ix < p.window.x1; ++ix) {
      const int64_t i = base + (iy * g.in_w + ix) * g.channels;
      if (x[arg] < x[i]) arg = i;
    }
  }
  return arg;
}

template <typename T>
__global__ void MaxPoolKernel(WindowShape g, const T* __restrict__ x, T* __restrict__ y,
                              int64_t n) {
  AF_GRID_STRIDE_LOOP(o, n) { y[o] = x[ArgMaxOf(g, x, o)]; }
}

template <typename T>
__global__ void AvgPoolKernel(WindowShape g, const T* __restrict__ x, T* __restrict__ y,
                              int64_t n) {
  AF_GRID_STRIDE_LOOP(o, n) {
    const OutputPixel p = OutputAt(g, o);
    const ClippedWindow& w = p.window;
    const T* image = x + p.image * g.in_h * g.in_w * g.channels + p.c;
    T sum = T(0);
    for (int64_t iy = w.y0; iy < w.y1; ++iy) {
      for (int64_t ix = w.x0; ix < w.x1; ++ix) sum += image[(iy * g.in_w + ix) * g.channels];
    }
    y[o] = sum * (T(1) / static_cast<T>((w.y1 - w.y0) * (w.x1 - w.x0)));
  }
}

// The MaxPool argmax of every output, for MaxPoolGradGatherKernel.
template <typename T>
__global__ void ArgMaxKernel(WindowShape g, const T* __restrict__ x, int64_t* __restrict__ argmax,
                             int64_t n) {
  AF_GRID_STRIDE_LOOP(o, n) { argmax[o] = ArgMaxOf(g, x, o); }
}

// Calls f(o, output window) for the outputs whose windows cover input element i, in
// output order.
template <typename F>
__device__ __forceinline__ void ForEachCoveringOutput(const WindowShape& g, int64_t i, F f) {
  const int64_t c = i % g.channels;
  const int64_t ix = (i / g.channels) % g.in_w;
  const int64_t iy = (i / (g.channels * g.in_w)) % g.in_h;
  const int64_t image = i / (g.channels * g.in_w * g.in_h);
  const CoverRange ys = CoveringOutputs(iy, g.k_h, g.stride_h, g.pad_top, g.out_h);
  const CoverRange xs = CoveringOutputs(ix, g.k_w, g.stride_w, g.pad_left, g.out_w);
  for (int64_t oy = ys.first; oy <= ys.last; ++oy) {
    for (int64_t ox = xs.first; ox <= xs.last; ++ox) {
      f(((image * g.out_h + oy) * g.out_w + ox) * g.channels + c, oy, ox);
    }
  }
}

template <typename T>
__global__ void MaxPoolGradKernel(WindowShape g, const int64_t* __restrict__ argmax,
                                  const T* __restrict__ grad, T* __restrict__ dx, int64_t n) {
  AF_GRID_STRIDE_LOOP(i, n) {
    T sum = T(0);
    ForEachCoveringOutput(g, i, [&](int64_t o, int64_t, int64_t) {
      if (argmax[o] == i) sum += grad[o];
    });
    dx[i] = sum;
  }
}

template <typename T>
__global__ void AvgPoolGradKernel(WindowShape g, const T* __restrict__ grad, T* __restrict__ dx,
                                  int64_t n) {
  AF_GRID_STRIDE_LOOP(i, n) {
    T sum = T(0);
    ForEachCoveringOutput(g, i, [&](int64_t o, int64_t oy, int64_t ox) {
      const ClippedWindow w = WindowAt(g, oy, ox);
      sum += grad[o] * (T(1) / static_cast<T>((w.y1 - w.y0) * (w.x1 - w.x0)));
    });
    dx[i] = sum;
  }
}

#undef AF_GRID_STRIDE_LOOP

// Launches kernel<T> over n threads for the float type `type`.
template <typename Launch>
GpuError ForFloat(const char* what, ElemType type, int64_t n, Launch launch) {
  if (n == 0) return GpuError();
  GpuError e;
  if (!VisitFloat(type, [&](auto zero) {
        launch(zero);
        e = LaunchError(what);
      })) {
    return NotFloat(what);
  }
  return e;
}

int64_t OutputCount(const WindowShape& g) {
  return g.batch * g.out_h * g.out_w * g.channels;
}
int64_t InputCount(const WindowShape& g) { return g.batch * g.in_h * g.in_w * g.channels; }

}  // namespace

GpuError MaxPool(GpuDevice* device, ElemType type, const WindowShape& g, const void* x,
                 void* y) {
  const int64_t n = OutputCount(g);
  return ForFloat("MaxPool", type, n, [&](auto zero) {
    using T = decltype(zero);
    MaxPoolKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
        g, static_cast<const T*>(x), static_cast<T*>(y), n);
  });
}

GpuError AvgPool(GpuDevice* device, ElemType type, const WindowShape& g, const void* x,
                 void* y) {
  const int64_t n = OutputCount(g);
  return ForFloat("AvgPool", type, n, [&](auto zero) {
    using T = decltype(zero);
    AvgPoolKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
        g, static_cast<const T*>(x), static_cast<T*>(y), n);
  });
}

GpuError MaxPoolGrad(GpuDevice* device, ElemType type, const WindowShape& g, const void* x,
                     const void* grad, int64_t* argmax, void* dx) {
  const int64_t outputs = OutputCount(g);
  GpuError e = ForFloat("MaxPoolGrad argmax", type, outputs, [&](auto zero) {
    using T = decltype(zero);
    ArgMaxKernel<T><<<GridFor(outputs), kThreads, 0, device->stream>>>(
        g, static_cast<const T*>(x), argmax, outputs);
  });
  if (!e.ok()) return e;
  const int64_t n = InputCount(g);
  return ForFloat("MaxPoolGrad", type, n, [&](auto zero) {
    using T = decltype(zero);
    MaxPoolGradKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
        g, argmax, static_cast<const T*>(grad), static_cast<T*>(dx), n);
  });
}

GpuError AvgPoolGrad(GpuDevice* device, ElemType type, const WindowShape& g, const void* grad,
                     void* dx) {
  const int64_t n = InputCount(g);
  return ForFloat("AvgPoolGrad", type, n, [&](auto zero) {
    using T = decltype(zero);
    AvgPoolGradKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
        g, static_cast<const T*>(grad), static_cast<T*>(dx), n);
  });
}

}  // namespace gpu
}  // namespace actorflow
