// Window arithmetic shared by conv.cu and pool.cu (device code): the clipped window
// under an output pixel, and the output pixels whose windows cover an input pixel,
// from a WindowShape (conv_launch.h). Pure functions.
#ifndef ACTORFLOW_KERNELS_CUDA_WINDOW_CUH_
#define ACTORFLOW_KERNELS_CUDA_WINDOW_CUH_

#include <cstdint>

#include "kernels/cuda/conv_launch.h"

namespace actorflow {
namespace gpu {

// [first, last] (inclusive; empty when first > last) of the outputs along one axis
// whose window [o * stride - pad, o * stride - pad + k) holds input position i.
struct CoverRange {
  int64_t first, last;
};
__device__ __forceinline__ CoverRange CoveringOutputs(int64_t i, int64_t k, int64_t stride,
                                                      int64_t pad, int64_t out) {
  const int64_t shifted = i + pad;  // >= 0
  const int64_t low = shifted - k + 1;
  CoverRange r;
  r.first = low <= 0 ? 0 : (low + stride - 1) / stride;
  r.last = shifted / stride;
  if (r.last > out - 1) r.last = out - 1;
  return r;
}

// The window of output (oy, ox) clipped to the image: rows [y0, y1), columns [x0, x1).
struct ClippedWindow {
  int64_t y0, y1, x0, x1;
};
__device__ __forceinline__ ClippedWindow WindowAt(const WindowShape& g, int64_t oy, int64_t ox) {
  const int64_t ys = oy * g.stride_h - g.pad_top;
  const int64_t xs = ox * g.stride_w - g.pad_left;
  ClippedWindow w;
  w.y0 = ys > 0 ? ys : 0;
  w.y1 = ys + g.k_h < g.in_h ? ys + g.k_h : g.in_h;
  w.x0 = xs > 0 ? xs : 0;
  w.x1 = xs + g.k_w < g.in_w ? xs + g.k_w : g.in_w;
  return w;
}

}  // namespace gpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CUDA_WINDOW_CUH_
