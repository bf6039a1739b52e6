// CPU kernels of the gradient helper ops (graph/ops_gradient_helpers.cc),
// float32 and float64:
//   ReluGrad, SigmoidGrad, TanhGrad   fused activation gradients (element-wise);
//   SumToShapeOf, BroadcastToShapeOf  undo a broadcast / a reduction: both walk a
//                                     "big" tensor against a "small" one whose dims
//                                     are 1 or equal (a BroadcastMap);
//   PadToShapeOf, SliceConcatPart     move a box of elements between a tensor and a
//                                     smaller one (CopySliceBox);
//   Size                              every dtype: it only reads the shape.
// Shapes are validated here because they are often unknown when the graph is built.
//
// Thread safety: the kernels are stateless.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/small_vector.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

// --- Fused activation gradients -------------------------------------------------------

template <typename T>
struct ReluGradOp {  // (dy, x)
  T operator()(T dy, T x) const { return x > T(0) ? dy : T(0); }
};
template <typename T>
struct SigmoidGradOp {  // (y, dy)
  T operator()(T y, T dy) const { return dy * y * (T(1) - y); }
};
template <typename T>
struct TanhGradOp {  // (y, dy)
  T operator()(T y, T dy) const { return dy * (T(1) - y * y); }
};

template <typename T> using ReluGradKernel = BinaryKernel<T, T, ReluGradOp<T>>;
template <typename T> using SigmoidGradKernel = BinaryKernel<T, T, SigmoidGradOp<T>>;
template <typename T> using TanhGradKernel = BinaryKernel<T, T, TanhGradOp<T>>;

// --- Broadcast walks ------------------------------------------------------------------

// How the elements of a tensor `big` map to a tensor `small` that broadcasts to it:
// big's dims, coalesced (no 1s; neighbours merged when small is broadcast along both or
// along neither), and small's stride along each (0 where small is broadcast). Big
// element i (row-major over dims) corresponds to small element sum(index_k * stride_k).
struct BroadcastMap {
  SmallVector<int64_t, 8> dims;
  SmallVector<int64_t, 8> small_strides;
};

// `small` is aligned with `big` at the trailing end; every small dim must be 1 or
// equal to big's. Returns false otherwise.
bool MapBroadcast(const Shape& big, const Shape& small, BroadcastMap* map) {
  const int rank = big.rank();
  const int offset = rank - small.rank();
  if (offset < 0) return false;
  SmallVector<int64_t, 8> strides(rank, 0);
  int64_t stride = 1;
  for (int i = rank - 1; i >= offset; --i) {
    const int64_t d = small.dim(i - offset);
    if (d != 1 && d != big.dim(i)) return false;
    if (d != 1) strides[i] = stride;
    stride *= d;
  }
  for (int i = 0; i < rank; ++i) {
    const int64_t d = big.dim(i);
    if (d == 1) continue;
    const bool broadcast = strides[i] == 0;
    if (!map->dims.empty() && (map->small_strides.back() == 0) == broadcast) {
      map->dims.back() *= d;
      if (!broadcast) map->small_strides.back() = strides[i];
    } else {
      map->dims.push_back(d);
      map->small_strides.push_back(strides[i]);
    }
  }
  return true;
}

// Calls run(big_offset, small_offset, small_stride, n) for each innermost run of n big
// elements; small_stride is 0 or 1. Precondition: big has elements.
template <typename Fn>
void ForEachRun(const BroadcastMap& map, Fn run) {
  const int rank = static_cast<int>(map.dims.size());
  if (rank == 0) {
    run(0, 0, 0, 1);
    return;
  }
  const int64_t inner = map.dims[rank - 1];
  const int64_t inner_stride = map.small_strides[rank - 1];
  int64_t rows = 1;
  for (int i = 0; i < rank - 1; ++i) rows *= map.dims[i];
  SmallVector<int64_t, 8> index(rank - 1, 0);
  int64_t small_offset = 0;
  for (int64_t row = 0; row < rows; ++row) {
    run(row * inner, small_offset, inner_stride, inner);
    for (int d = rank - 2; d >= 0; --d) {
      small_offset += map.small_strides[d];
      if (++index[d] < map.dims[d]) break;
      small_offset -= map.small_strides[d] * map.dims[d];
      index[d] = 0;
    }
  }
}

// Inputs: grad [big], like [small] (any dtype; only its shape is read), small
// broadcasting to big. Output: like's shape, grad summed over the broadcast dims.
// Sums accumulate in double.
template <typename T>
class SumToShapeOfKernel : public Kernel {
 public:
  explicit SumToShapeOfKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& grad = ctx->input(0);
    const Shape& like = ctx->input(1).shape();
    BroadcastMap map;
    if (!MapBroadcast(grad.shape(), like, &map)) {
      ctx->Fail(Code::kInvalidArgument, "like " + like.ToString() +
                                            " does not broadcast to grad " +
                                            grad.shape().ToString());
      return;
    }
    if (grad.NumElements() == like.num_elements()) {  // nothing to sum: a view
      ctx->set_output(0, *grad.Reshaped(like));
      return;
    }
    Tensor& out = ctx->allocate_output(0, like);
    if (grad.NumElements() == 0) return;  // zeros
    SmallVector<double, 64> acc(static_cast<size_t>(out.NumElements()), 0.0);
    const T* g = grad.data<T>();
    ForEachRun(map, [&](int64_t big, int64_t small, int64_t stride, int64_t n) {
      const T* __restrict src = g + big;
      if (stride == 1) {
        double* __restrict dst = acc.data() + small;
        for (int64_t j = 0; j < n; ++j) dst[j] += src[j];
      } else {
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) sum += src[j];
        acc[small] += sum;
      }
    });
    T* o = out.data<T>();
    for (size_t i = 0; i < acc.size(); ++i) o[i] = static_cast<T>(acc[i]);
  }
};

// Inputs: x, the reduction of like over `axis` (absent = every axis) with keep_dims;
// like [any dtype]. Output: like's shape, x repeated along the reduced axes.
template <typename T>
class BroadcastToShapeOfKernel : public Kernel {
 public:
  explicit BroadcastToShapeOfKernel(const Node& node)
      : Kernel(node), keep_dims_(node.attr<bool>("keep_dims")) {
    auto it = node.attrs().find("axis");
    if (it != node.attrs().end()) {
      axes_ = it->second.Is<int64_t>() ? std::vector<int64_t>{it->second.Get<int64_t>()}
                                       : it->second.Get<std::vector<int64_t>>();
      all_axes_ = false;
    }
  }

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Shape& like = ctx->input(1).shape();
    const int rank = like.rank();
    std::vector<bool> reduced(rank, all_axes_);
    for (int64_t a : axes_) {
      int axis;
      if (!NormalizeAxis(a, rank, &axis) || reduced[axis]) {
        ctx->Fail(Code::kInvalidArgument, "axis " + IntListToString(axes_) +
                                              " is out of range or repeated for like " +
                                              like.ToString());
        return;
      }
      reduced[axis] = true;
    }
    std::vector<int64_t> kept;       // the reduction's output dims
    std::vector<int64_t> with_ones;  // the same with reduced dims as 1
    for (int i = 0; i < rank; ++i) {
      with_ones.push_back(reduced[i] ? 1 : like.dim(i));
      if (!reduced[i] || keep_dims_) kept.push_back(with_ones.back());
    }
    if (x.shape() != Shape(kept)) {
      ctx->Fail(Code::kInvalidArgument, "x " + x.shape().ToString() +
                                            " is not the reduction of like " + like.ToString() +
                                            " (expected " + Shape(kept).ToString() + ")");
      return;
    }
    if (x.NumElements() == like.num_elements()) {  // nothing to repeat: a view
      ctx->set_output(0, *x.Reshaped(like));
      return;
    }
    Tensor& out = ctx->allocate_output(0, like);
    if (out.NumElements() == 0) return;
    BroadcastMap map;
    MapBroadcast(like, Shape(with_ones), &map);  // holds by construction
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    ForEachRun(map, [&](int64_t big, int64_t small, int64_t stride, int64_t n) {
      T* __restrict o = dst + big;
      if (stride == 1) {
        std::memcpy(o, src + small, static_cast<size_t>(n) * sizeof(T));
      } else {
        const T v = src[small];
        for (int64_t j = 0; j < n; ++j) o[j] = v;
      }
    });
  }

 private:
  bool all_axes_ = true;
  std::vector<int64_t> axes_;
  const bool keep_dims_;
};

// --- Box copies -----------------------------------------------------------------------

// Copies between the box [begin, begin + box) of a tensor of shape `outer` and a
// contiguous tensor of shape `box`: from the outer tensor into the box tensor when
// `slice`, else from the box tensor into the outer one. Precondition: equal ranks and
// the box fits.
template <typename T>
void CopySliceBox(const Shape& outer, const std::vector<int64_t>& begin, const Shape& box,
                  const T* from, T* to, bool slice) {
  const int rank = box.rank();
  if (box.num_elements() == 0) return;
  if (rank == 0) {
    *to = *from;
    return;
  }
  std::vector<int64_t> outer_strides(rank, 1);
  for (int i = rank - 2; i >= 0; --i) outer_strides[i] = outer_strides[i + 1] * outer.dim(i + 1);
  int64_t outer_offset = 0;
  for (int i = 0; i < rank; ++i) outer_offset += begin[i] * outer_strides[i];
  const int64_t inner = box.dim(rank - 1);
  const int64_t rows = box.num_elements() / inner;
  const size_t bytes = static_cast<size_t>(inner) * sizeof(T);
  std::vector<int64_t> index(rank - 1, 0);
  for (int64_t row = 0; row < rows; ++row) {
    if (slice) {
      std::memcpy(to + row * inner, from + outer_offset, bytes);
    } else {
      std::memcpy(to + outer_offset, from + row * inner, bytes);
    }
    for (int d = rank - 2; d >= 0; --d) {
      outer_offset += outer_strides[d];
      if (++index[d] < box.dim(d)) break;
      outer_offset -= outer_strides[d] * box.dim(d);
      index[d] = 0;
    }
  }
}

// Inputs: grad [box], like [outer] (any dtype). Output: like's shape, zeros except grad
// at `begin`.
template <typename T>
class PadToShapeOfKernel : public Kernel {
 public:
  explicit PadToShapeOfKernel(const Node& node)
      : Kernel(node), begin_(node.attr<std::vector<int64_t>>("begin")) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& grad = ctx->input(0);
    const Shape& like = ctx->input(1).shape();
    bool fits = grad.rank() == like.rank() && static_cast<int>(begin_.size()) == like.rank();
    for (int i = 0; fits && i < like.rank(); ++i) {
      fits = begin_[i] >= 0 && begin_[i] + grad.dim(i) <= like.dim(i);
    }
    if (!fits) {
      ctx->Fail(Code::kInvalidArgument, "grad " + grad.shape().ToString() + " at begin " +
                                            IntListToString(begin_) + " does not fit in like " +
                                            like.ToString());
      return;
    }
    Tensor& out = ctx->allocate_output(0, like);  // zero-filled
    CopySliceBox(like, begin_, grad.shape(), grad.data<T>(), out.data<T>(), /*slice=*/false);
  }

 private:
  const std::vector<int64_t> begin_;
};

// Inputs: grad (the shape of ConcatV2(x_0..x_{n-1}; axis)), x_0 .. x_{n-1} (any dtype;
// only shapes are read). Output: x_index's shape, its part of grad along the axis.
template <typename T>
class SliceConcatPartKernel : public Kernel {
 public:
  explicit SliceConcatPartKernel(const Node& node)
      : Kernel(node), axis_(node.attr<int64_t>("axis")), index_(node.attr<int64_t>("index")) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& grad = ctx->input(0);
    const int rank = grad.rank();
    const int n = ctx->num_inputs() - 1;
    int axis;
    if (!NormalizeAxis(axis_, rank, &axis) || index_ < 0 || index_ >= n) {
      ctx->Fail(Code::kInvalidArgument, "axis " + std::to_string(axis_) + " or index " +
                                            std::to_string(index_) + " is out of range for grad " +
                                            grad.shape().ToString() + " and " + std::to_string(n) +
                                            " part(s)");
      return;
    }
    std::vector<int64_t> begin(rank, 0);
    int64_t total = 0;
    for (int i = 0; i < n; ++i) {
      const Shape& part = ctx->input(1 + i).shape();
      bool match = part.rank() == rank;
      for (int d = 0; match && d < rank; ++d) match = d == axis || part.dim(d) == grad.dim(d);
      if (!match) {
        ctx->Fail(Code::kInvalidArgument, "part " + std::to_string(i) + " " + part.ToString() +
                                              " does not match grad " + grad.shape().ToString() +
                                              " outside axis " + std::to_string(axis_));
        return;
      }
      if (i == index_) begin[axis] = total;
      total += part.dim(axis);
    }
    if (total != grad.dim(axis)) {
      ctx->Fail(Code::kInvalidArgument, "the parts add up to " + std::to_string(total) +
                                            " along axis " + std::to_string(axis_) +
                                            " but grad is " + grad.shape().ToString());
      return;
    }
    const Shape& part = ctx->input(1 + static_cast<int>(index_)).shape();
    Tensor& out = ctx->allocate_output(0, part);
    CopySliceBox(grad.shape(), begin, part, grad.data<T>(), out.data<T>(), /*slice=*/true);
  }

 private:
  const int64_t axis_;
  const int64_t index_;
};

// --- Size -----------------------------------------------------------------------------

// Input: x [any dtype and shape]. Output: int32 or int64 [], x's number of elements.
template <typename T>
class SizeKernel : public Kernel {
 public:
  explicit SizeKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const int64_t n = ctx->input(0).NumElements();
    Tensor& out = ctx->allocate_output(0, Shape{});
    if (out.dtype() == DType::kInt32) {
      if (n > INT32_MAX) {
        ctx->Fail(Code::kInvalidArgument,
                  std::to_string(n) + " elements do not fit in int32; use out_type int64");
        return;
      }
      *out.data<int32_t>() = static_cast<int32_t>(n);
    } else {
      *out.data<int64_t>() = n;
    }
  }
};

const CpuKernelRegistrations<ReluGradKernel, float, double> reg_relu_grad("ReluGrad");
const CpuKernelRegistrations<SigmoidGradKernel, float, double> reg_sigmoid_grad("SigmoidGrad");
const CpuKernelRegistrations<TanhGradKernel, float, double> reg_tanh_grad("TanhGrad");
const CpuKernelRegistrations<SumToShapeOfKernel, float, double> reg_sum_to_shape_of(
    "SumToShapeOf");
const CpuKernelRegistrations<BroadcastToShapeOfKernel, float, double>
    reg_broadcast_to_shape_of("BroadcastToShapeOf");
const CpuKernelRegistrations<PadToShapeOfKernel, float, double> reg_pad_to_shape_of(
    "PadToShapeOf");
const CpuKernelRegistrations<SliceConcatPartKernel, float, double> reg_slice_concat_part(
    "SliceConcatPart");
const CpuKernelRegistrations<SizeKernel, float, double, int32_t, int64_t, bool> reg_size("Size");

}  // namespace
}  // namespace cpu
}  // namespace actorflow
