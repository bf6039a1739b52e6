// CPU kernels of the shape ops (graph/shape_ops.h): ExpandDims and Squeeze (share
// the input's buffer), Pack, Unpack, Split, Select and MatrixBandPart (move elements
// as bytes, so one kernel serves every dtype; registered for all five), and OneHot
// (registered by its indices' dtype, int32 and int64; writes float32 or float64).
// Select's kernel dtype is its cond's, bool. Shapes are checked again here: the
// inputs' shapes may have been unknown when the graph was built. Tile and
// StridedSlice(Grad), which walk strided boxes, are in shape_strided_kernels.cc.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/kernel_util.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

std::string Str(int64_t v) { return std::to_string(v); }

int64_t Product(const std::vector<int64_t>& dims, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= dims[i];
  return p;
}

// Normalizes an axis into [0, rank + extra) (extra 1 for an inserted axis) or fails
// the node naming the op, the axis and the shape.
bool AxisOrFail(KernelContext* ctx, const std::string& what, int64_t axis, const Tensor& x,
                int extra, int* out) {
  const int64_t rank = x.rank() + extra;
  if (axis < -rank || axis >= rank) {
    ctx->Fail(Code::kInvalidArgument, what + " " + Str(axis) + " is out of range [" + Str(-rank) +
                                          ", " + Str(rank - 1) + "] for shape " +
                                          x.shape().ToString());
    return false;
  }
  *out = static_cast<int>(axis < 0 ? axis + rank : axis);
  return true;
}

void ShareReshaped(KernelContext* ctx, const Tensor& x, std::vector<int64_t> dims) {
  auto reshaped = x.Reshaped(Shape(std::move(dims)));
  if (!reshaped.ok()) return ctx->Fail(Code::kInvalidArgument, reshaped.status().message());
  ctx->set_output(0, std::move(reshaped).value());
}

// x -> x with a 1 inserted at axis; the same buffer.
template <typename T>
class ExpandDimsKernel : public Kernel {
 public:
  explicit ExpandDimsKernel(const Node& node) : Kernel(node), axis_(node.attr<int64_t>("axis")) {}
  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    int axis = 0;
    if (!AxisOrFail(ctx, "ExpandDims attr 'axis'", axis_, x, 1, &axis)) return;
    std::vector<int64_t> dims = x.shape().dims();
    dims.insert(dims.begin() + axis, 1);
    ShareReshaped(ctx, x, std::move(dims));
  }

 private:
  const int64_t axis_;
};

// x -> x without the listed dims of size 1 (every dim of 1 when none is listed).
template <typename T>
class SqueezeKernel : public Kernel {
 public:
  explicit SqueezeKernel(const Node& node)
      : Kernel(node), dims_(node.attr<std::vector<int64_t>>("squeeze_dims")) {}
  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    std::vector<bool> drop(x.rank(), dims_.empty());
    for (int64_t d : dims_) {
      int axis = 0;
      if (!AxisOrFail(ctx, "Squeeze dimension", d, x, 0, &axis)) return;
      if (x.dim(axis) != 1) {
        return ctx->Fail(Code::kInvalidArgument, "Squeeze dimension " + Str(d) + " of x " +
                                                     x.shape().ToString() + " has size " +
                                                     Str(x.dim(axis)) + ", not 1");
      }
      drop[axis] = true;
    }
    std::vector<int64_t> dims;
    for (int i = 0; i < x.rank(); ++i) {
      if (!(drop[i] && x.dim(i) == 1)) dims.push_back(x.dim(i));
    }
    ShareReshaped(ctx, x, std::move(dims));
  }

 private:
  const std::vector<int64_t> dims_;
};

// values_0..N-1 [d...] -> [..., N, ...]: viewed as [outer, N, inner], value i fills
// run i of each outer index.
template <typename T>
class PackKernel : public Kernel {
 public:
  explicit PackKernel(const Node& node) : Kernel(node), axis_(node.attr<int64_t>("axis")) {}
  void Compute(KernelContext* ctx) override {
    const int n = ctx->num_inputs();
    const Tensor& first = ctx->input(0);
    for (int i = 1; i < n; ++i) {
      if (ctx->input(i).shape() != first.shape()) {
        return ctx->Fail(Code::kInvalidArgument,
                         "Pack value " + Str(i) + " has shape " + ctx->input(i).shape().ToString() +
                             " but value 0 has " + first.shape().ToString());
      }
    }
    int axis = 0;
    if (!AxisOrFail(ctx, "Pack attr 'axis'", axis_, first, 1, &axis)) return;
    std::vector<int64_t> dims = first.shape().dims();
    const int64_t outer = Product(dims, 0, axis);
    const size_t run = Product(dims, axis, dims.size()) * DTypeSize(first.dtype());
    dims.insert(dims.begin() + axis, n);
    Tensor* out = AllocateCheckedOutput(ctx, 0, Shape(dims), /*overwrite=*/true);
    if (out == nullptr || run == 0) return;
    char* dst = static_cast<char*>(out->raw_data());
    for (int64_t o = 0; o < outer; ++o) {
      for (int i = 0; i < n; ++i) {
        std::memcpy(dst + (o * n + i) * run,
                    static_cast<const char*>(ctx->input(i).raw_data()) + o * run, run);
      }
    }
  }

 private:
  const int64_t axis_;
};

// value viewed as [outer, parts * part_dim, inner] -> part p = [outer, part_dim,
// inner], the runs p of each outer index; `keep_axis` false drops the axis (Unpack).
void SplitInto(KernelContext* ctx, const Tensor& value, int axis, int64_t parts, bool keep_axis) {
  if (parts == 0) return;  // Unpack of an empty axis: no outputs
  std::vector<int64_t> dims = value.shape().dims();
  const int64_t outer = Product(dims, 0, axis);
  dims[axis] /= parts;
  const size_t run = Product(dims, axis, dims.size()) * DTypeSize(value.dtype());
  if (!keep_axis) dims.erase(dims.begin() + axis);
  const char* src = static_cast<const char*>(value.raw_data());
  for (int64_t p = 0; p < parts; ++p) {
    Tensor& out = ctx->allocate_output_for_overwrite(static_cast<int>(p), Shape(dims));
    char* dst = static_cast<char*>(out.raw_data());
    for (int64_t o = 0; o < outer && run > 0; ++o) {
      std::memcpy(dst + o * run, src + (o * parts + p) * run, run);
    }
  }
}

template <typename T>
class UnpackKernel : public Kernel {
 public:
  explicit UnpackKernel(const Node& node)
      : Kernel(node), num_(node.attr<int64_t>("num")), axis_(node.attr<int64_t>("axis")) {}
  void Compute(KernelContext* ctx) override {
    const Tensor& value = ctx->input(0);
    int axis = 0;
    if (value.rank() < 1) {
      return ctx->Fail(Code::kInvalidArgument,
                       "Unpack value must have rank >= 1, got " + value.shape().ToString());
    }
    if (!AxisOrFail(ctx, "Unpack attr 'axis'", axis_, value, 0, &axis)) return;
    if (value.dim(axis) != num_) {
      return ctx->Fail(Code::kInvalidArgument, "Unpack of value " + value.shape().ToString() +
                                                   " into num " + Str(num_) + " parts along axis " +
                                                   Str(axis_) + ": the dimension there is " +
                                                   Str(value.dim(axis)));
    }
    SplitInto(ctx, value, axis, num_, /*keep_axis=*/false);
  }

 private:
  const int64_t num_;
  const int64_t axis_;
};

template <typename T>
class SplitKernel : public Kernel {
 public:
  explicit SplitKernel(const Node& node)
      : Kernel(node), parts_(node.attr<int64_t>("num_split")), axis_(node.attr<int64_t>("axis")) {}
  void Compute(KernelContext* ctx) override {
    const Tensor& value = ctx->input(0);
    int axis = 0;
    if (value.rank() < 1) {
      return ctx->Fail(Code::kInvalidArgument,
                       "Split value must have rank >= 1, got " + value.shape().ToString());
    }
    if (!AxisOrFail(ctx, "Split attr 'axis'", axis_, value, 0, &axis)) return;
    if (value.dim(axis) % parts_ != 0) {
      return ctx->Fail(Code::kInvalidArgument, "Split of value " + value.shape().ToString() +
                                                   " along axis " + Str(axis_) + ": dimension " +
                                                   Str(value.dim(axis)) +
                                                   " is not divisible by num_split " + Str(parts_));
    }
    SplitInto(ctx, value, axis, parts_, /*keep_axis=*/true);
  }

 private:
  const int64_t parts_;
  const int64_t axis_;
};

// cond, t, e -> t where cond, else e. Each element of cond governs a run of
// t.NumElements() / cond.NumElements() elements: one, or a whole row.
template <typename T>
class SelectKernel : public Kernel {
 public:
  explicit SelectKernel(const Node& node) : Kernel(node) {}
  void Compute(KernelContext* ctx) override {
    const Tensor& cond = ctx->input(0);
    const Tensor& t = ctx->input(1);
    const Tensor& e = ctx->input(2);
    if (t.shape() != e.shape()) {
      return ctx->Fail(Code::kInvalidArgument, "Select t " + t.shape().ToString() + " and e " +
                                                   e.shape().ToString() + " must have one shape");
    }
    const bool rows = cond.rank() == 1 && t.rank() >= 1 && cond.dim(0) == t.dim(0);
    if (cond.shape() != t.shape() && !rows) {
      return ctx->Fail(Code::kInvalidArgument,
                       "Select cond " + cond.shape().ToString() + " must have the shape of t " +
                           t.shape().ToString() + " or be a vector of its first dimension");
    }
    Tensor* out = AllocateCheckedOutput(ctx, 0, t.shape(), /*overwrite=*/true);
    if (out == nullptr || out->NumElements() == 0) return;
    const size_t run = (t.NumElements() / cond.NumElements()) * DTypeSize(t.dtype());
    const bool* c = cond.data<bool>();
    char* dst = static_cast<char*>(out->raw_data());
    for (int64_t i = 0; i < cond.NumElements(); ++i) {
      const Tensor& from = c[i] ? t : e;
      std::memcpy(dst + i * run, static_cast<const char*>(from.raw_data()) + i * run, run);
    }
  }
};

// x [..., M, N] -> the band of each matrix, zeros elsewhere.
template <typename T>
class MatrixBandPartKernel : public Kernel {
 public:
  explicit MatrixBandPartKernel(const Node& node)
      : Kernel(node),
        lower_(node.attr<int64_t>("num_lower")),
        upper_(node.attr<int64_t>("num_upper")) {}
  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    if (x.rank() < 2) {
      return ctx->Fail(Code::kInvalidArgument,
                       "MatrixBandPart input must have rank >= 2, got " + x.shape().ToString());
    }
    Tensor& out = ctx->allocate_output(0, x.shape());  // zero-filled
    const int64_t rows = x.dim(x.rank() - 2);
    const int64_t cols = x.dim(x.rank() - 1);
    if (out.NumElements() == 0) return;
    const int64_t batch = x.NumElements() / (rows * cols);
    const size_t element = DTypeSize(x.dtype());
    const char* src = static_cast<const char*>(x.raw_data());
    char* dst = static_cast<char*>(out.raw_data());
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t m = 0; m < rows; ++m) {
        // Columns [m - lower, m + upper] of row m, clipped to the matrix.
        const int64_t first = lower_ < 0 ? 0 : std::max<int64_t>(0, m - std::min(lower_, m));
        const int64_t last = upper_ < 0 ? cols : std::min(cols, m + 1 + std::min(upper_, cols));
        if (first >= last) continue;
        const int64_t at = (b * rows + m) * cols + first;
        std::memcpy(dst + at * element, src + at * element, (last - first) * element);
      }
    }
  }

 private:
  const int64_t lower_, upper_;
};

// indices [outer, inner] (depth inserted between) -> [outer, depth, inner]: on_value
// where the depth position equals the index, else off_value (out-of-range ids too).
template <typename TIndex>
class OneHotKernel : public Kernel {
 public:
  explicit OneHotKernel(const Node& node)
      : Kernel(node),
        depth_(node.attr<int64_t>("depth")),
        axis_(node.attr<int64_t>("axis")),
        on_(node.attr<double>("on_value")),
        off_(node.attr<double>("off_value")) {}
  void Compute(KernelContext* ctx) override {
    const Tensor& indices = ctx->input(0);
    if (axis_ < -1 || axis_ > indices.rank()) {
      return ctx->Fail(Code::kInvalidArgument, "OneHot attr 'axis' " + Str(axis_) +
                                                   " is out of range [-1, " + Str(indices.rank()) +
                                                   "] for indices " + indices.shape().ToString());
    }
    const int axis = axis_ == -1 ? indices.rank() : static_cast<int>(axis_);
    std::vector<int64_t> dims = indices.shape().dims();
    const int64_t outer = Product(dims, 0, axis);
    const int64_t inner = Product(dims, axis, dims.size());
    dims.insert(dims.begin() + axis, depth_);
    Tensor* out = AllocateCheckedOutput(ctx, 0, Shape(dims), /*overwrite=*/true);
    if (out == nullptr) return;
    if (out->dtype() == DType::kFloat32) {
      Fill<float>(indices.data<TIndex>(), outer, inner, out->data<float>());
    } else {
      Fill<double>(indices.data<TIndex>(), outer, inner, out->data<double>());
    }
  }

 private:
  template <typename TOut>
  void Fill(const TIndex* ids, int64_t outer, int64_t inner, TOut* out) const {
    const TOut on = static_cast<TOut>(on_), off = static_cast<TOut>(off_);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t d = 0; d < depth_; ++d) {
        TOut* row = out + (o * depth_ + d) * inner;
        for (int64_t i = 0; i < inner; ++i) {
          row[i] = static_cast<int64_t>(ids[o * inner + i]) == d ? on : off;
        }
      }
    }
  }

  const int64_t depth_, axis_;
  const double on_, off_;
};

#define AF_ALL_DTYPES float, double, int32_t, int64_t, bool
const CpuKernelRegistrations<ExpandDimsKernel, AF_ALL_DTYPES> reg_expand_dims("ExpandDims");
const CpuKernelRegistrations<SqueezeKernel, AF_ALL_DTYPES> reg_squeeze("Squeeze");
const CpuKernelRegistrations<PackKernel, AF_ALL_DTYPES> reg_pack("Pack");
const CpuKernelRegistrations<UnpackKernel, AF_ALL_DTYPES> reg_unpack("Unpack");
const CpuKernelRegistrations<SplitKernel, AF_ALL_DTYPES> reg_split("Split");
const CpuKernelRegistrations<MatrixBandPartKernel, AF_ALL_DTYPES> reg_matrix_band_part(
    "MatrixBandPart");
#undef AF_ALL_DTYPES
// Kernel dtypes are the first input's: Select's cond (bool), OneHot's indices.
const CpuKernelRegistrations<SelectKernel, bool> reg_select("Select");
const CpuKernelRegistrations<OneHotKernel, int32_t, int64_t> reg_one_hot("OneHot");

}  // namespace
}  // namespace cpu
}  // namespace actorflow
