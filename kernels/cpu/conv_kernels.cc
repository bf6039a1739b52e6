// CPU kernels of Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter (NHWC input,
// HWIO filter; float32 and float64). All three are im2col + OpenBLAS gemm over a chunk
// of images at a time: the patch matrix P [n*OH*OW, KH*KW*C] of n consecutive images
// holds in row (i, oy, ox) the window under output pixel (oy, ox) of image i (zeros
// where it covers padding), and the HWIO filter is already the row-major matrix
// F [KH*KW*C, O], so
//   forward:          Y = P F
//   input gradient:   dP = dY F^T, scattered back into the images (col2im)
//   filter gradient:  dF += P^T dY, summed over the chunks.
// Images are consecutive in NHWC, so a chunk's Y and dY are one matrix each. A chunk is
// as many images as fit kPatchBudget bytes of patches (at least one), so that small
// images still make gemms big enough for OpenBLAS's threads (one 14x14 image with a
// 5x5x32 window is a [196, 800] matrix; 16 of them are [3136, 800]); a 1x1 window at
// stride 1 needs no patches and takes the whole batch at once.
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/row_major_gemm.h"
#include "kernels/cpu/window_geometry.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

// The most bytes of patches a kernel holds at once.
constexpr int64_t kPatchBudget = int64_t{16} << 20;

// Images per chunk for `bytes_per_image` of patches: what fits kPatchBudget, >= 1, and
// so that rows * chunk stays within BLAS's int.
int64_t ImagesPerChunk(int64_t bytes_per_image, int64_t rows, int64_t batch) {
  int64_t chunk = bytes_per_image > 0 ? kPatchBudget / bytes_per_image : batch;
  chunk = std::min<int64_t>(chunk, INT_MAX / std::max<int64_t>(rows, 1));
  return std::max<int64_t>(1, std::min(chunk, batch));
}

// Fills `patches` [OH*OW, KH*KW*C] from one image [H,W,C].
template <typename T>
void Im2Col(const WindowGeometry& g, const T* image, T* patches) {
  const int64_t row_len = g.k_h * g.k_w * g.channels;
  for (int64_t oy = 0; oy < g.out_h; ++oy) {
    for (int64_t ox = 0; ox < g.out_w; ++ox) {
      T* row = patches + (oy * g.out_w + ox) * row_len;
      for (int64_t ky = 0; ky < g.k_h; ++ky) {
        const int64_t iy = oy * g.stride_h - g.pad_top + ky;
        for (int64_t kx = 0; kx < g.k_w; ++kx) {
          const int64_t ix = ox * g.stride_w - g.pad_left + kx;
          T* dst = row + (ky * g.k_w + kx) * g.channels;
          if (iy < 0 || iy >= g.in_h || ix < 0 || ix >= g.in_w) {
            for (int64_t c = 0; c < g.channels; ++c) dst[c] = T(0);
          } else {
            const T* src = image + (iy * g.in_w + ix) * g.channels;
            for (int64_t c = 0; c < g.channels; ++c) dst[c] = src[c];
          }
        }
      }
    }
  }
}

// Adds `patches` [OH*OW, KH*KW*C] back into one image [H,W,C] (the adjoint of Im2Col).
template <typename T>
void Col2ImAdd(const WindowGeometry& g, const T* patches, T* image) {
  const int64_t row_len = g.k_h * g.k_w * g.channels;
  for (int64_t oy = 0; oy < g.out_h; ++oy) {
    for (int64_t ox = 0; ox < g.out_w; ++ox) {
      const T* row = patches + (oy * g.out_w + ox) * row_len;
      for (int64_t ky = 0; ky < g.k_h; ++ky) {
        const int64_t iy = oy * g.stride_h - g.pad_top + ky;
        if (iy < 0 || iy >= g.in_h) continue;
        for (int64_t kx = 0; kx < g.k_w; ++kx) {
          const int64_t ix = ox * g.stride_w - g.pad_left + kx;
          if (ix < 0 || ix >= g.in_w) continue;
          const T* src = row + (ky * g.k_w + kx) * g.channels;
          T* dst = image + (iy * g.in_w + ix) * g.channels;
          for (int64_t c = 0; c < g.channels; ++c) dst[c] += src[c];
        }
      }
    }
  }
}

// ConvGeometry (window_geometry.h), and every gemm dimension within BLAS's int; false
// after failing the context.
bool CheckConvGeometry(KernelContext* ctx, const Node& node, const Shape& input,
                       const Shape& filter, const Tensor* out_backprop, WindowGeometry* g) {
  StatusOr<WindowGeometry> geometry = ConvGeometry(node, input, filter, out_backprop);
  if (!geometry.ok()) {
    ctx->Fail(Code::kInvalidArgument, geometry.status().message());
    return false;
  }
  *g = *geometry;
  for (int64_t d : {g->out_h * g->out_w, g->k_h * g->k_w * g->channels, filter.dim(3)}) {
    if (d > INT_MAX) {
      ctx->Fail(Code::kInvalidArgument, "dimension " + std::to_string(d) +
                                            " exceeds the BLAS limit of " +
                                            std::to_string(INT_MAX));
      return false;
    }
  }
  return true;
}

// A size input (input_sizes, filter_sizes) as a Shape; false after failing the context.
bool SizesInput(KernelContext* ctx, int i, const std::string& what, Shape* out) {
  StatusOr<Shape> sizes = SizesFromTensor(ctx->input(i), what);
  if (!sizes.ok()) {
    ctx->Fail(Code::kInvalidArgument, sizes.status().message());
    return false;
  }
  *out = *sizes;
  return true;
}

// Inputs: input [N,H,W,C], filter [KH,KW,C,O]. Output: [N,OH,OW,O].
template <typename T>
class Conv2DKernel : public Kernel {
 public:
  explicit Conv2DKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& filter = ctx->input(1);
    WindowGeometry g;
    if (!CheckConvGeometry(ctx, node(), input.shape(), filter.shape(), nullptr, &g)) return;
    const int64_t out_c = filter.dim(3);
    // An empty input and an empty filter can still make huge output dims.
    Tensor* allocated = AllocateCheckedOutput(ctx, 0, Shape{g.batch, g.out_h, g.out_w, out_c});
    if (allocated == nullptr) return;
    Tensor& out = *allocated;
    const int64_t rows = g.out_h * g.out_w;
    const int64_t row_len = g.k_h * g.k_w * g.channels;
    if (out.NumElements() == 0 || row_len == 0) return;
    const bool pointwise = IsPointwise(g);
    const int64_t image_size = g.in_h * g.in_w * g.channels;
    const int64_t chunk = pointwise ? std::min<int64_t>(g.batch, INT_MAX / std::max<int64_t>(rows, 1))
                                    : ImagesPerChunk(rows * row_len * sizeof(T), rows, g.batch);
    std::vector<T> patches(pointwise ? 0 : chunk * rows * row_len);
    for (int64_t n = 0; n < g.batch; n += chunk) {
      const int64_t count = std::min(chunk, g.batch - n);
      const T* images = input.data<T>() + n * image_size;
      for (int64_t i = 0; i < count && !pointwise; ++i) {
        Im2Col(g, images + i * image_size, patches.data() + i * rows * row_len);
      }
      Gemm(false, false, static_cast<int>(count * rows), static_cast<int>(out_c),
           static_cast<int>(row_len), pointwise ? images : patches.data(),
           static_cast<int>(row_len), filter.data<T>(), static_cast<int>(out_c), T(0),
           out.data<T>() + n * rows * out_c);
    }
  }
};

// Inputs: input_sizes [4], filter [KH,KW,C,O], out_backprop [N,OH,OW,O].
// Output: input_sizes, the gradient of Conv2D's input.
template <typename T>
class Conv2DBackpropInputKernel : public Kernel {
 public:
  explicit Conv2DBackpropInputKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    Shape input_shape;
    if (!SizesInput(ctx, 0, "input_sizes", &input_shape)) return;
    const Tensor& filter = ctx->input(1);
    const Tensor& dy = ctx->input(2);
    WindowGeometry g;
    if (!CheckConvGeometry(ctx, node(), input_shape, filter.shape(), &dy, &g)) return;
    Tensor* allocated = AllocateCheckedOutput(ctx, 0, input_shape);  // zero-filled
    if (allocated == nullptr) return;
    Tensor& dx = *allocated;
    const int64_t out_c = filter.dim(3);
    const int64_t rows = g.out_h * g.out_w;
    const int64_t row_len = g.k_h * g.k_w * g.channels;
    if (dx.NumElements() == 0 || rows == 0 || row_len == 0) return;
    const bool pointwise = IsPointwise(g);
    if (out_c == 0) return;
    const int64_t image_size = g.in_h * g.in_w * g.channels;
    const int64_t chunk = pointwise ? std::min<int64_t>(g.batch, INT_MAX / std::max<int64_t>(rows, 1))
                                    : ImagesPerChunk(rows * row_len * sizeof(T), rows, g.batch);
    std::vector<T> patches(pointwise ? 0 : chunk * rows * row_len);
    for (int64_t n = 0; n < g.batch; n += chunk) {
      const int64_t count = std::min(chunk, g.batch - n);
      T* images = dx.data<T>() + n * image_size;
      Gemm(false, true, static_cast<int>(count * rows), static_cast<int>(row_len),
           static_cast<int>(out_c), dy.data<T>() + n * rows * out_c, static_cast<int>(out_c),
           filter.data<T>(), static_cast<int>(out_c), T(0), pointwise ? images : patches.data());
      for (int64_t i = 0; i < count && !pointwise; ++i) {
        Col2ImAdd(g, patches.data() + i * rows * row_len, images + i * image_size);
      }
    }
  }
};

// Inputs: input [N,H,W,C], filter_sizes [4], out_backprop [N,OH,OW,O].
// Output: filter_sizes, the gradient of Conv2D's filter.
template <typename T>
class Conv2DBackpropFilterKernel : public Kernel {
 public:
  explicit Conv2DBackpropFilterKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    Shape filter_shape;
    if (!SizesInput(ctx, 1, "filter_sizes", &filter_shape)) return;
    const Tensor& dy = ctx->input(2);
    WindowGeometry g;
    if (!CheckConvGeometry(ctx, node(), input.shape(), filter_shape, &dy, &g)) return;
    Tensor* allocated = AllocateCheckedOutput(ctx, 0, filter_shape);  // zero-filled
    if (allocated == nullptr) return;
    Tensor& df = *allocated;
    const int64_t out_c = filter_shape.dim(3);
    const int64_t rows = g.out_h * g.out_w;
    const int64_t row_len = g.k_h * g.k_w * g.channels;
    if (df.NumElements() == 0 || rows == 0) return;
    const bool pointwise = IsPointwise(g);
    const int64_t image_size = g.in_h * g.in_w * g.channels;
    const int64_t chunk = pointwise ? std::min<int64_t>(g.batch, INT_MAX / std::max<int64_t>(rows, 1))
                                    : ImagesPerChunk(rows * row_len * sizeof(T), rows, g.batch);
    std::vector<T> patches(pointwise ? 0 : chunk * rows * row_len);
    for (int64_t n = 0; n < g.batch; n += chunk) {
      const int64_t count = std::min(chunk, g.batch - n);
      const T* images = input.data<T>() + n * image_size;
      for (int64_t i = 0; i < count && !pointwise; ++i) {
        Im2Col(g, images + i * image_size, patches.data() + i * rows * row_len);
      }
      Gemm(true, false, static_cast<int>(row_len), static_cast<int>(out_c),
           static_cast<int>(count * rows), pointwise ? images : patches.data(),
           static_cast<int>(row_len), dy.data<T>() + n * rows * out_c,
           static_cast<int>(out_c), T(1), df.data<T>());
    }
  }
};

const CpuKernelRegistrations<Conv2DKernel, float, double> reg_conv2d("Conv2D");
const SizesFirstKernelRegistrations<Conv2DBackpropInputKernel> reg_conv2d_input(
    "Conv2DBackpropInput");
const CpuKernelRegistrations<Conv2DBackpropFilterKernel, float, double> reg_conv2d_filter(
    "Conv2DBackpropFilter");

}  // namespace
}  // namespace cpu
}  // namespace actorflow
