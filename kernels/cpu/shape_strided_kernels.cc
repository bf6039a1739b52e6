// CPU kernels of the shape ops that walk strided boxes of elements (graph/shape_ops.h):
// Tile, StridedSlice and StridedSliceGrad. They move elements as bytes, so one kernel
// serves every dtype (registered for all five). The other shape ops' kernels are in
// shape_kernels.cc.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "graph/shape_ops.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

// Row-major element strides of `dims`.
std::vector<int64_t> StridesOf(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * dims[i + 1];
  return strides;
}

// Copies the box `sizes` of elements from src to dst; each side is addressed by an
// element offset plus index * stride per axis (strides may be negative). The last
// axis goes by one memcpy when both sides are contiguous there.
void CopyStridedBox(const char* src, int64_t src_offset, const std::vector<int64_t>& src_strides,
                    char* dst, int64_t dst_offset, const std::vector<int64_t>& dst_strides,
                    const std::vector<int64_t>& sizes, size_t element) {
  const int rank = static_cast<int>(sizes.size());
  for (int64_t s : sizes) {
    if (s == 0) return;
  }
  if (rank == 0) {
    std::memcpy(dst + dst_offset * element, src + src_offset * element, element);
    return;
  }
  const int last = rank - 1;
  const bool contiguous = src_strides[last] == 1 && dst_strides[last] == 1;
  std::vector<int64_t> index(rank, 0);
  while (true) {
    if (contiguous) {
      std::memcpy(dst + dst_offset * element, src + src_offset * element, sizes[last] * element);
    } else {
      for (int64_t k = 0; k < sizes[last]; ++k) {
        std::memcpy(dst + (dst_offset + k * dst_strides[last]) * element,
                    src + (src_offset + k * src_strides[last]) * element, element);
      }
    }
    int d = last - 1;
    for (; d >= 0; --d) {
      src_offset += src_strides[d];
      dst_offset += dst_strides[d];
      if (++index[d] < sizes[d]) break;
      src_offset -= src_strides[d] * sizes[d];
      dst_offset -= dst_strides[d] * sizes[d];
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

// x [d...] -> [m_i * d_i ...]: x copied whole into each tile (an odometer over the
// tiles, each tile a CopyStridedBox at its corner).
template <typename T>
class TileKernel : public Kernel {
 public:
  explicit TileKernel(const Node& node)
      : Kernel(node), multiples_(node.attr<std::vector<int64_t>>("multiples")) {}
  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const int rank = x.rank();
    if (static_cast<int>(multiples_.size()) != rank) {
      return ctx->Fail(Code::kInvalidArgument,
                       "Tile attr 'multiples' " + IntListToString(multiples_) +
                           " needs one entry per axis of x " + x.shape().ToString());
    }
    std::vector<int64_t> dims = x.shape().dims();
    for (int i = 0; i < rank; ++i) {
      if (!CheckedMul(dims[i], multiples_[i], &dims[i])) {
        return ctx->Fail(Code::kInvalidArgument, "Tile of x " + x.shape().ToString() + " by " +
                                                     IntListToString(multiples_) + " is too large");
      }
    }
    Tensor* out = AllocateCheckedOutput(ctx, 0, Shape(dims), /*overwrite=*/true);
    if (out == nullptr || out->NumElements() == 0) return;
    const std::vector<int64_t> x_strides = StridesOf(x.shape().dims());
    const std::vector<int64_t> out_strides = StridesOf(dims);
    const size_t element = DTypeSize(x.dtype());
    std::vector<int64_t> tile(rank, 0);
    while (true) {
      int64_t corner = 0;
      for (int i = 0; i < rank; ++i) corner += tile[i] * x.dim(i) * out_strides[i];
      CopyStridedBox(static_cast<const char*>(x.raw_data()), 0, x_strides,
                     static_cast<char*>(out->raw_data()), corner, out_strides, x.shape().dims(),
                     element);
      int d = rank - 1;
      for (; d >= 0; --d) {
        if (++tile[d] < multiples_[d]) break;
        tile[d] = 0;
      }
      if (d < 0) return;
    }
  }

 private:
  const std::vector<int64_t> multiples_;
};

// The strided box of x's shape that the attrs describe: its offset, strides and sizes
// in x's elements, and the output dims (shrunk axes dropped).
struct StridedBox {
  int64_t offset = 0;
  std::vector<int64_t> strides;
  std::vector<int64_t> sizes;
  std::vector<int64_t> out_dims;
};

class StridedSliceBase : public Kernel {
 public:
  explicit StridedSliceBase(const Node& node)
      : Kernel(node),
        begin_(node.attr<std::vector<int64_t>>("begin")),
        end_(node.attr<std::vector<int64_t>>("end")),
        strides_(node.attr<std::vector<int64_t>>("strides")),
        begin_mask_(node.attr<int64_t>("begin_mask")),
        end_mask_(node.attr<int64_t>("end_mask")),
        shrink_mask_(node.attr<int64_t>("shrink_axis_mask")) {}

 protected:
  // Fills *box for an input of shape x; false after failing the node.
  bool Box(KernelContext* ctx, const Shape& x, StridedBox* box) const {
    auto spec =
        ResolveStridedSlice(x.dims(), begin_, end_, strides_, begin_mask_, end_mask_, shrink_mask_);
    if (!spec.ok()) {
      ctx->Fail(Code::kInvalidArgument, spec.status().message() + " (x " + x.ToString() + ")");
      return false;
    }
    const std::vector<int64_t> x_strides = StridesOf(x.dims());
    for (size_t i = 0; i < spec->size(); ++i) {
      const StridedSliceDim& d = (*spec)[i];
      box->offset += d.begin * x_strides[i];
      box->strides.push_back(d.stride * x_strides[i]);
      box->sizes.push_back(d.size);
      if (!d.shrink) box->out_dims.push_back(d.size);
    }
    return true;
  }

 private:
  const std::vector<int64_t> begin_, end_, strides_;
  const int64_t begin_mask_, end_mask_, shrink_mask_;
};

// x -> the strided box of x, gathered contiguously.
template <typename T>
class StridedSliceKernel : public StridedSliceBase {
 public:
  explicit StridedSliceKernel(const Node& node) : StridedSliceBase(node) {}
  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    StridedBox box;
    if (!Box(ctx, x.shape(), &box)) return;
    Tensor& out = ctx->allocate_output_for_overwrite(0, Shape(box.out_dims));
    CopyStridedBox(static_cast<const char*>(x.raw_data()), box.offset, box.strides,
                   static_cast<char*>(out.raw_data()), 0, StridesOf(box.sizes), box.sizes,
                   DTypeSize(x.dtype()));
  }
};

// like, dy -> zeros of like's shape with dy scattered into the strided box.
template <typename T>
class StridedSliceGradKernel : public StridedSliceBase {
 public:
  explicit StridedSliceGradKernel(const Node& node) : StridedSliceBase(node) {}
  void Compute(KernelContext* ctx) override {
    const Tensor& like = ctx->input(0);
    const Tensor& dy = ctx->input(1);
    StridedBox box;
    if (!Box(ctx, like.shape(), &box)) return;
    if (dy.shape() != Shape(box.out_dims)) {
      return ctx->Fail(Code::kInvalidArgument, "StridedSliceGrad dy " + dy.shape().ToString() +
                                                   " is not the slice's shape " +
                                                   Shape(box.out_dims).ToString() + " of like " +
                                                   like.shape().ToString());
    }
    Tensor& out = ctx->allocate_output(0, like.shape());  // zero-filled
    CopyStridedBox(static_cast<const char*>(dy.raw_data()), 0, StridesOf(box.sizes),
                   static_cast<char*>(out.raw_data()), box.offset, box.strides, box.sizes,
                   DTypeSize(dy.dtype()));
  }
};

#define AF_ALL_DTYPES float, double, int32_t, int64_t, bool
const CpuKernelRegistrations<TileKernel, AF_ALL_DTYPES> reg_tile("Tile");
const CpuKernelRegistrations<StridedSliceKernel, AF_ALL_DTYPES> reg_strided_slice("StridedSlice");
const CpuKernelRegistrations<StridedSliceGradKernel, AF_ALL_DTYPES> reg_strided_slice_grad(
    "StridedSliceGrad");
#undef AF_ALL_DTYPES

}  // namespace
}  // namespace cpu
}  // namespace actorflow
