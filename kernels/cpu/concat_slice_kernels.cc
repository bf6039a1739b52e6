// CPU kernels of ConcatV2, Slice and EvenSplitPart. They copy whole contiguous runs
// with memcpy, so they are dtype-agnostic byte movers; shapes are validated at run
// time because they may be unknown when the graph is built.
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

// Inputs: x0 .. xn-1 (n >= 1), same dtype and rank >= 1, equal except along `axis`.
// Output: their concatenation along `axis`. Viewed as [outer, d_i * inner], each
// input contributes one contiguous run per outer index.
template <typename T>
class ConcatV2Kernel : public Kernel {
 public:
  explicit ConcatV2Kernel(const Node& node) : Kernel(node), axis_(node.attr<int64_t>("axis")) {}

  void Compute(KernelContext* ctx) override {
    const int n = ctx->num_inputs();
    const Tensor& first = ctx->input(0);
    const int rank = first.rank();
    int axis;
    if (rank < 1 || !NormalizeAxis(axis_, rank, &axis)) {
      ctx->Fail(Code::kInvalidArgument, "ConcatV2 axis " + std::to_string(axis_) +
                                            " is out of range for input 0 of shape " +
                                            first.shape().ToString());
      return;
    }
    std::vector<int64_t> out_dims = first.shape().dims();
    out_dims[axis] = 0;
    for (int i = 0; i < n; ++i) {
      const Tensor& t = ctx->input(i);
      bool match = t.dtype() == first.dtype() && t.rank() == rank;
      for (int d = 0; match && d < rank; ++d) match = d == axis || t.dim(d) == first.dim(d);
      if (!match) {
        ctx->Fail(Code::kInvalidArgument,
                  "ConcatV2 input " + std::to_string(i) + " " + t.DebugString() +
                      " does not match input 0 " + first.DebugString() +
                      " outside axis " + std::to_string(axis_));
        return;
      }
      if (!CheckedAdd(out_dims[axis], t.dim(axis), &out_dims[axis])) {
        ctx->Fail(Code::kInvalidArgument, "ConcatV2 inputs' dimensions " +
                                              std::to_string(axis_) +
                                              " add up to more than an int64 can count");
        return;
      }
    }
    if (n == 1) {
      ctx->set_output(0, first);
      return;
    }
    // Every byte is copied from an input: no zero-fill first.
    Tensor* allocated = AllocateCheckedOutput(ctx, 0, Shape(out_dims), /*overwrite=*/true);
    if (allocated == nullptr) return;
    Tensor& out = *allocated;
    if (out.NumElements() == 0) return;
    int64_t outer = 1;
    for (int d = 0; d < axis; ++d) outer *= out_dims[d];
    int64_t inner = 1;
    for (int d = axis + 1; d < rank; ++d) inner *= out_dims[d];
    const size_t element = DTypeSize(first.dtype());
    std::vector<const char*> src(n);
    std::vector<size_t> run(n);  // bytes per outer index, per input
    for (int i = 0; i < n; ++i) {
      src[i] = static_cast<const char*>(ctx->input(i).raw_data());
      run[i] = static_cast<size_t>(ctx->input(i).dim(axis) * inner) * element;
    }
    char* dst = static_cast<char*>(out.raw_data());
    for (int64_t o = 0; o < outer; ++o) {
      for (int i = 0; i < n; ++i) {
        if (run[i] == 0) continue;
        std::memcpy(dst, src[i] + o * run[i], run[i]);
        dst += run[i];
      }
    }
  }

 private:
  const int64_t axis_;
};

// Input: x [d0, ..., dn-1]. Output: x[begin[i] : begin[i] + size[i]] along each axis
// (size -1 = to the end). Trailing axes taken whole merge into one contiguous run.
template <typename T>
class SliceKernel : public Kernel {
 public:
  explicit SliceKernel(const Node& node)
      : Kernel(node),
        begin_(node.attr<std::vector<int64_t>>("begin")),
        size_(node.attr<std::vector<int64_t>>("size")) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const int rank = x.rank();
    if (static_cast<int>(begin_.size()) != rank || static_cast<int>(size_.size()) != rank) {
      ctx->Fail(Code::kInvalidArgument, "Slice begin " + IntListToString(begin_) + " and size " +
                                            IntListToString(size_) + " must have one entry per "
                                            "axis of " + x.shape().ToString());
      return;
    }
    std::vector<int64_t> sizes(rank);
    for (int d = 0; d < rank; ++d) {
      const int64_t dim = x.dim(d);
      const int64_t b = begin_[d];
      const int64_t s = size_[d] == -1 ? dim - b : size_[d];
      // s > dim - b rather than b + s > dim: attrs near the int64 limit must not
      // overflow past the bounds check.
      if (b < 0 || b > dim || s < 0 || s > dim - b) {
        ctx->Fail(Code::kInvalidArgument,
                  "Slice begin " + IntListToString(begin_) + " size " + IntListToString(size_) +
                      " is out of bounds for shape " + x.shape().ToString() + " at axis " +
                      std::to_string(d));
        return;
      }
      sizes[d] = s;
    }
    const Shape out_shape(sizes);
    // k: the last axis not taken whole; everything after it is one contiguous run.
    int k = rank - 1;
    while (k >= 0 && sizes[k] == x.dim(k)) --k;
    if (k < 0) {
      ctx->set_output(0, x);  // the whole tensor
      return;
    }
    // The odometer below copies every output byte: no zero-fill first.
    Tensor& out = ctx->allocate_output_for_overwrite(0, out_shape);
    if (out.NumElements() == 0) return;
    std::vector<int64_t> in_strides(rank);
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      in_strides[d] = stride;
      stride *= x.dim(d);
    }
    int64_t in_offset = 0;
    for (int d = 0; d < rank; ++d) in_offset += begin_[d] * in_strides[d];
    const size_t element = DTypeSize(x.dtype());
    const size_t run = static_cast<size_t>(sizes[k] * in_strides[k]) * element;
    const char* src = static_cast<const char*>(x.raw_data()) + in_offset * element;
    char* dst = static_cast<char*>(out.raw_data());
    // Odometer over axes 0..k-1 of the output.
    std::vector<int64_t> index(k, 0);
    while (true) {
      std::memcpy(dst, src, run);
      dst += run;
      int d = k - 1;
      for (; d >= 0; --d) {
        src += in_strides[d] * element;
        if (++index[d] < sizes[d]) break;
        src -= in_strides[d] * sizes[d] * element;
        index[d] = 0;
      }
      if (d < 0) return;
    }
  }

 private:
  const std::vector<int64_t> begin_;
  const std::vector<int64_t> size_;
};

// Input: x [n, ...]. Output: part `index` of `parts` of x's rows, cut as evenly as
// possible with the larger parts first (graph/ops.h): one contiguous run.
template <typename T>
class EvenSplitPartKernel : public Kernel {
 public:
  explicit EvenSplitPartKernel(const Node& node)
      : Kernel(node), index_(node.attr<int64_t>("index")), parts_(node.attr<int64_t>("parts")) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    if (x.rank() < 1) {
      ctx->Fail(Code::kInvalidArgument, "EvenSplitPart needs an input of rank >= 1, got " +
                                            x.shape().ToString());
      return;
    }
    const int64_t rows = x.dim(0);
    const int64_t base = rows / parts_;
    const int64_t extra = rows % parts_;
    const int64_t begin = index_ * base + std::min(index_, extra);
    const int64_t size = base + (index_ < extra ? 1 : 0);
    if (size == rows) {
      ctx->set_output(0, x);
      return;
    }
    std::vector<int64_t> dims = x.shape().dims();
    dims[0] = size;
    Tensor& out = ctx->allocate_output_for_overwrite(0, Shape(dims));  // one memcpy fills it
    if (out.NumElements() == 0) return;
    const size_t row_bytes = static_cast<size_t>(x.NumElements() / rows) * DTypeSize(x.dtype());
    std::memcpy(out.raw_data(), static_cast<const char*>(x.raw_data()) + begin * row_bytes,
                size * row_bytes);
  }

 private:
  const int64_t index_;
  const int64_t parts_;
};

const CpuKernelRegistrations<ConcatV2Kernel, float, double, int32_t, int64_t, bool> reg_concat(
    "ConcatV2");
const CpuKernelRegistrations<SliceKernel, float, double, int32_t, int64_t, bool> reg_slice(
    "Slice");
const CpuKernelRegistrations<EvenSplitPartKernel, float, double, int32_t, int64_t, bool>
    reg_even_split_part("EvenSplitPart");

}  // namespace
}  // namespace cpu
}  // namespace actorflow
