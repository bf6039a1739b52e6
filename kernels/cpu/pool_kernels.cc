// CPU kernels of MaxPool, AvgPool, MaxPoolGrad and AvgPoolGrad (NHWC; float32 and
// float64). Windows are clipped to the image: padded positions never win a maximum
// and never count in an average (TensorFlow's SAME semantics). MaxPoolGrad routes each
// output's gradient to the first maximum of its window in row-major window order, the
// same element that MaxPool's strict comparison keeps.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/window_geometry.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

bool PoolGeometry(KernelContext* ctx, const Shape& input, WindowGeometry* g) {
  StatusOr<WindowGeometry> geometry = ComputeWindowGeometry(input, PoolAttrsOf(ctx->node()));
  if (!geometry.ok()) {
    ctx->Fail(Code::kInvalidArgument, geometry.status().message());
    return false;
  }
  *g = *geometry;
  return true;
}

Shape PooledShape(const WindowGeometry& g) {
  return Shape{g.batch, g.out_h, g.out_w, g.channels};
}

// The window of output (oy, ox) clipped to the image: rows [y0, y1), columns [x0, x1).
struct Window {
  int64_t y0, y1, x0, x1;
  int64_t count() const { return (y1 - y0) * (x1 - x0); }
};
Window WindowAt(const WindowGeometry& g, int64_t oy, int64_t ox) {
  const int64_t ys = oy * g.stride_h - g.pad_top;
  const int64_t xs = ox * g.stride_w - g.pad_left;
  return Window{std::max<int64_t>(ys, 0), std::min(ys + g.k_h, g.in_h),
                std::max<int64_t>(xs, 0), std::min(xs + g.k_w, g.in_w)};
}

bool CheckGradShape(KernelContext* ctx, const Tensor& grad, const WindowGeometry& g) {
  if (grad.shape() != PooledShape(g)) {
    ctx->Fail(Code::kInvalidArgument, "grad " + grad.shape().ToString() +
                                          " is not the pooled shape " +
                                          PooledShape(g).ToString());
    return false;
  }
  return true;
}

// For every (image, output pixel): f(n, window, output offset of channel 0).
template <typename F>
void ForEachWindow(const WindowGeometry& g, F f) {
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oy = 0; oy < g.out_h; ++oy) {
      for (int64_t ox = 0; ox < g.out_w; ++ox) {
        f(n, WindowAt(g, oy, ox), ((n * g.out_h + oy) * g.out_w + ox) * g.channels);
      }
    }
  }
}

// Input: value [N,H,W,C]. Output: [N,OH,OW,C].
template <typename T>
class MaxPoolKernel : public Kernel {
 public:
  explicit MaxPoolKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    WindowGeometry g;
    if (!PoolGeometry(ctx, x.shape(), &g)) return;
    Tensor& y = ctx->allocate_output(0, PooledShape(g));
    const T* in = x.data<T>();
    T* out = y.data<T>();
    // Channels innermost: each pixel of the window is one contiguous, vectorizable
    // pass over the channels (max is exact, so the order changes nothing).
    const int64_t channels = g.channels;
    ForEachWindow(g, [&](int64_t n, const Window& w, int64_t o) {
      const T* image = in + n * g.in_h * g.in_w * channels;
      T* best = out + o;
      const T* first = image + (w.y0 * g.in_w + w.x0) * channels;
      std::copy(first, first + channels, best);
      for (int64_t iy = w.y0; iy < w.y1; ++iy) {
        for (int64_t ix = w.x0; ix < w.x1; ++ix) {
          const T* px = image + (iy * g.in_w + ix) * channels;
          for (int64_t c = 0; c < channels; ++c) best[c] = std::max(best[c], px[c]);
        }
      }
    });
  }
};

// Input: value [N,H,W,C]. Output: [N,OH,OW,C].
template <typename T>
class AvgPoolKernel : public Kernel {
 public:
  explicit AvgPoolKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    WindowGeometry g;
    if (!PoolGeometry(ctx, x.shape(), &g)) return;
    Tensor& y = ctx->allocate_output(0, PooledShape(g));
    const T* in = x.data<T>();
    T* out = y.data<T>();
    ForEachWindow(g, [&](int64_t n, const Window& w, int64_t o) {
      const T* image = in + n * g.in_h * g.in_w * g.channels;
      for (int64_t iy = w.y0; iy < w.y1; ++iy) {
        for (int64_t ix = w.x0; ix < w.x1; ++ix) {
          const T* px = image + (iy * g.in_w + ix) * g.channels;
          for (int64_t c = 0; c < g.channels; ++c) out[o + c] += px[c];
        }
      }
      const T scale = T(1) / static_cast<T>(w.count());
      for (int64_t c = 0; c < g.channels; ++c) out[o + c] *= scale;
    });
  }
};

// Inputs: orig_input [N,H,W,C], orig_output [N,OH,OW,C], grad [N,OH,OW,C].
// Output: orig_input's shape.
template <typename T>
class MaxPoolGradKernel : public Kernel {
 public:
  explicit MaxPoolGradKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& grad = ctx->input(2);
    WindowGeometry g;
    if (!PoolGeometry(ctx, x.shape(), &g) || !CheckGradShape(ctx, grad, g)) return;
    Tensor& dx = ctx->allocate_output(0, x.shape());  // zero-filled
    const T* in = x.data<T>();
    const T* gin = grad.data<T>();
    T* out = dx.data<T>();
    // Channels innermost, as in MaxPool, in two contiguous, vectorizable passes per
    // window: the maximum of each channel, then the window's pixels in row-major order
    // with the gradient added at the first pixel equal to it (`taken` marks channels
    // done). That is the first maximum MaxPool's strict comparison keeps; a NaN first
    // pixel is the maximum (nothing compares greater), and takes the gradient.
    const int64_t channels = g.channels;
    std::vector<T> best(static_cast<size_t>(channels));
    std::vector<T> taken(static_cast<size_t>(channels));
    ForEachWindow(g, [&](int64_t n, const Window& w, int64_t o) {
      const T* image = in + n * g.in_h * g.in_w * channels;
      T* image_dx = out + n * g.in_h * g.in_w * channels;
      T* best_c = best.data();
      T* taken_c = taken.data();
      const T* first = image + (w.y0 * g.in_w + w.x0) * channels;
      std::copy(first, first + channels, best_c);
      for (int64_t iy = w.y0; iy < w.y1; ++iy) {
        for (int64_t ix = w.x0; ix < w.x1; ++ix) {
          const T* px = image + (iy * g.in_w + ix) * channels;
          for (int64_t c = 0; c < channels; ++c) best_c[c] = std::max(best_c[c], px[c]);
        }
      }
      std::fill(taken_c, taken_c + channels, T(0));
      const T* window_grad = gin + o;
      for (int64_t iy = w.y0; iy < w.y1; ++iy) {
        for (int64_t ix = w.x0; ix < w.x1; ++ix) {
          const T* px = image + (iy * g.in_w + ix) * channels;
          T* dx = image_dx + (iy * g.in_w + ix) * channels;
          for (int64_t c = 0; c < channels; ++c) {
            const bool hit =
                taken_c[c] == T(0) && (px[c] == best_c[c] || best_c[c] != best_c[c]);
            dx[c] += hit ? window_grad[c] : T(0);
            taken_c[c] = hit ? T(1) : taken_c[c];
          }
        }
      }
    });
  }
};

// Inputs: orig_input_shape [4], grad [N,OH,OW,C]. Output: orig_input_shape.
template <typename T>
class AvgPoolGradKernel : public Kernel {
 public:
  explicit AvgPoolGradKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    StatusOr<Shape> shape = SizesFromTensor(ctx->input(0), "orig_input_shape");
    if (!shape.ok()) {
      ctx->Fail(Code::kInvalidArgument, shape.status().message());
      return;
    }
    const Tensor& grad = ctx->input(1);
    WindowGeometry g;
    if (!PoolGeometry(ctx, *shape, &g) || !CheckGradShape(ctx, grad, g)) return;
    Tensor* allocated = AllocateCheckedOutput(ctx, 0, *shape);  // zero-filled
    if (allocated == nullptr) return;
    Tensor& dx = *allocated;
    const T* gin = grad.data<T>();
    T* out = dx.data<T>();
    ForEachWindow(g, [&](int64_t n, const Window& w, int64_t o) {
      T* image = out + n * g.in_h * g.in_w * g.channels;
      const T scale = T(1) / static_cast<T>(w.count());
      for (int64_t iy = w.y0; iy < w.y1; ++iy) {
        for (int64_t ix = w.x0; ix < w.x1; ++ix) {
          T* px = image + (iy * g.in_w + ix) * g.channels;
          for (int64_t c = 0; c < g.channels; ++c) px[c] += gin[o + c] * scale;
        }
      }
    });
  }
};

const CpuKernelRegistrations<MaxPoolKernel, float, double> reg_max_pool("MaxPool");
const CpuKernelRegistrations<AvgPoolKernel, float, double> reg_avg_pool("AvgPool");
const CpuKernelRegistrations<MaxPoolGradKernel, float, double> reg_max_pool_grad("MaxPoolGrad");
const SizesFirstKernelRegistrations<AvgPoolGradKernel> reg_avg_pool_grad("AvgPoolGrad");

}  // namespace
}  // namespace cpu
}  // namespace actorflow
