// CPU kernels of the reductions Sum, Mean, Max, Min (over a set of axes) and ArgMax
// (over one axis, the first index of the maximum).
//
// A reduction first coalesces the input: dimensions of size 1 are dropped and
// neighbouring dimensions that are both reduced or both kept merge. The result is
// walked as
//   [R]           one contiguous reduction to a scalar,
//   [K, R]        rows reduced along the last axis, each a contiguous loop,
//   [R, K] / [K, R, K]  outer/reduce/inner: each reduced slice is combined into the
//                 output row with a contiguous, vectorizable loop,
//   anything else an odometer over the input's rows with the same two inner loops.
// Contiguous sums use RowSum (row_ops.h): independent lanes with a double total per
// block for floats, both faster and more accurate than one running float sum.
//
// Empty reductions give the identity: 0 for Sum, NaN for a float Mean (an integer Mean
// fails with InvalidArgument), -inf/+inf for float Max/Min and lowest/max for integers.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "graph/checked_size.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/row_ops.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

// Reducer policies: Identity(), Combine(acc, value), Row(p, n) = the reduction of a
// contiguous run, Finalize(out, n, count) after all values were combined (false when
// the result is undefined).
template <typename T>
struct SumReducer {
  static T Identity() { return T(0); }
  static T Combine(T a, T b) { return WrapAdd(a, b); }
  static T Row(const T* __restrict p, int64_t n) { return RowSum(p, n); }
  static bool Finalize(T*, int64_t, int64_t) { return true; }
};

template <typename T>
struct MeanReducer : SumReducer<T> {
  static bool Finalize(T* out, int64_t n, int64_t count) {
    // Floats: a count of 0 gives 0/0 = NaN, the mean of nothing. Integers have no
    // such value.
    if (std::is_integral_v<T> && count == 0) return n == 0;
    const T c = static_cast<T>(count);
    for (int64_t i = 0; i < n; ++i) out[i] /= c;
    return true;
  }
};

// Max/Min propagate NaN: once a NaN is combined in, it stays.
template <typename T, bool kMax>
struct ExtremumReducer {
  static T Identity() {
    if constexpr (std::is_floating_point_v<T>) {
      return kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    } else {
      return kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    }
  }
  static T Combine(T a, T b) {
    const bool keep_a = kMax ? a > b : a < b;
    if constexpr (std::is_floating_point_v<T>) {
      return (keep_a | (a != a)) ? a : b;  // `|`: no branch, so the select vectorizes
    } else {
      return keep_a ? a : b;
    }
  }
  static T Row(const T* __restrict p, int64_t n) {
    constexpr int kLanes = 16;  // hides the compare-and-select latency
    T lanes[kLanes];
    for (int l = 0; l < kLanes; ++l) lanes[l] = Identity();
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      // Kept as a loop: GCC vectorizes it, but not the select chain that full
      // unrolling would leave.
#pragma GCC unroll 1
      for (int l = 0; l < kLanes; ++l) lanes[l] = Combine(lanes[l], p[i + l]);
    }
    for (; i < n; ++i) lanes[0] = Combine(lanes[0], p[i]);
    T acc = lanes[0];
    for (int l = 1; l < kLanes; ++l) acc = Combine(acc, lanes[l]);
    return acc;
  }
  static bool Finalize(T*, int64_t, int64_t) { return true; }
};
template <typename T> using MaxReducer = ExtremumReducer<T, true>;
template <typename T> using MinReducer = ExtremumReducer<T, false>;

// dst[j] = Combine(dst[j], src[j]) for j < n.
template <typename R, typename T>
inline void CombineInto(T* __restrict dst, const T* __restrict src, int64_t n) {
  for (int64_t j = 0; j < n; ++j) dst[j] = R::Combine(dst[j], src[j]);
}

// Combines every element of `in` (coalesced `dims`, `reduced` flags, no dimension of
// size 1, no dimension of size 0) into `out`, which holds the kept dimensions in order
// and starts at R::Identity().
template <typename R, typename T>
void ReduceInto(const T* in, const std::vector<int64_t>& dims, const std::vector<bool>& reduced,
                T* out) {
  const int rank = static_cast<int>(dims.size());
  int num_reduced_groups = 0;
  for (bool r : reduced) num_reduced_groups += r ? 1 : 0;
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  if (num_reduced_groups == 0) {  // every reduced axis had size 1
    std::memcpy(out, in, static_cast<size_t>(total) * sizeof(T));
    return;
  }
  if (num_reduced_groups == 1) {
    int64_t outer = 1;
    int64_t size = 1;
    int64_t inner = 1;
    bool seen = false;
    for (int i = 0; i < rank; ++i) {
      if (reduced[i]) {
        size = dims[i];
        seen = true;
      } else {
        (seen ? inner : outer) *= dims[i];
      }
    }
    if (inner == 1) {  // [outer, size]: contiguous rows
      for (int64_t o = 0; o < outer; ++o) out[o] = R::Row(in + o * size, size);
      return;
    }
    for (int64_t o = 0; o < outer; ++o) {  // [outer, size, inner]
      const T* slab = in + o * size * inner;
      T* dst = out + o * inner;
      for (int64_t r = 0; r < size; ++r) CombineInto<R>(dst, slab + r * inner, inner);
    }
    return;
  }
  // General: odometer over the rows of the last dimension; out_strides are 0 along
  // reduced dimensions.
  std::vector<int64_t> out_strides(rank, 0);
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    if (!reduced[i]) {
      out_strides[i] = stride;
      stride *= dims[i];
    }
  }
  const int64_t inner = dims[rank - 1];
  const bool last_reduced = reduced[rank - 1];
  const int64_t rows = total / inner;
  std::vector<int64_t> index(rank - 1, 0);
  int64_t out_offset = 0;
  for (int64_t row = 0; row < rows; ++row) {
    const T* src = in + row * inner;
    if (last_reduced) {
      out[out_offset] = R::Combine(out[out_offset], R::Row(src, inner));
    } else {
      CombineInto<R>(out + out_offset, src, inner);
    }
    for (int d = rank - 2; d >= 0; --d) {
      out_offset += out_strides[d];
      if (++index[d] < dims[d]) break;
      out_offset -= out_strides[d] * dims[d];
      index[d] = 0;
    }
  }
}

// Input: x [any shape]. Output: x's shape without the reduced axes (as 1s with
// keep_dims). Attr axis: absent = all axes; an int or a list; an empty list reduces
// nothing.
template <typename T, typename R>
class ReductionKernel : public Kernel {
 public:
  explicit ReductionKernel(const Node& node) : Kernel(node) {
    auto it = node.attrs().find("axis");
    if (it != node.attrs().end()) {
      all_axes_ = false;
      if (it->second.Is<int64_t>()) {
        axes_.push_back(it->second.Get<int64_t>());
      } else if (it->second.Is<std::vector<int64_t>>()) {
        axes_ = it->second.Get<std::vector<int64_t>>();
      }
    }
    auto kd = node.attrs().find("keep_dims");
    keep_dims_ = kd != node.attrs().end() && kd->second.Is<bool>() && kd->second.Get<bool>();
  }

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const int rank = x.rank();
    std::vector<bool> reduce(rank, all_axes_);
    for (int64_t a : axes_) {
      int axis;
      if (!NormalizeAxis(a, rank, &axis)) {
        ctx->Fail(Code::kInvalidArgument, "reduction axis " + std::to_string(a) +
                                              " is out of range for shape " +
                                              x.shape().ToString());
        return;
      }
      if (reduce[axis]) {
        ctx->Fail(Code::kInvalidArgument, "duplicate reduction axis " + std::to_string(a) +
                                              " in " + IntListToString(axes_));
        return;
      }
      reduce[axis] = true;
    }
    std::vector<int64_t> out_dims;
    std::vector<int64_t> dims;  // coalesced
    std::vector<bool> reduced;
    // An empty input may have other dims whose product overflows: `count` then
    // saturates (it ends at 0 when a reduced dim is 0, and is unused when the output
    // is empty), and the coalesced dims, used only to read a non-empty input, are not
    // formed.
    const bool empty_input = x.NumElements() == 0;
    int64_t count = 1;
    for (int i = 0; i < rank; ++i) {
      const int64_t d = x.dim(i);
      if (reduce[i]) {
        if (!CheckedMul(count, d, &count)) count = std::numeric_limits<int64_t>::max();
        if (keep_dims_) out_dims.push_back(1);
      } else {
        out_dims.push_back(d);
      }
      if (d == 1 || empty_input) continue;
      if (!dims.empty() && reduced.back() == reduce[i]) {
        dims.back() *= d;
      } else {
        dims.push_back(d);
        reduced.push_back(reduce[i]);
      }
    }
    // An empty input can have huge other dims: the reduced shape is checked.
    Tensor* allocated = AllocateCheckedOutput(ctx, 0, Shape(std::move(out_dims)));
    if (allocated == nullptr) return;
    Tensor& out = *allocated;
    T* o = out.data<T>();
    const int64_t n = out.NumElements();
    const T identity = R::Identity();
    for (int64_t i = 0; i < n; ++i) o[i] = identity;
    if (x.NumElements() > 0) ReduceInto<R>(x.data<T>(), dims, reduced, o);
    if (!R::Finalize(o, n, count)) {
      ctx->Fail(Code::kInvalidArgument, "integer mean of an empty reduction of shape " +
                                            x.shape().ToString() + " is undefined");
    }
  }

 private:
  bool all_axes_ = true;
  std::vector<int64_t> axes_;
  bool keep_dims_ = false;
};

// Input: x [outer, size, inner] around `axis` (rank >= 1). Output: int64 (or int32)
// [outer, inner], the first index of the maximum along the axis.
template <typename T>
class ArgMaxKernel : public Kernel {
 public:
  explicit ArgMaxKernel(const Node& node) : Kernel(node), axis_(node.attr<int64_t>("axis")) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    int axis;
    if (x.rank() < 1 || !NormalizeAxis(axis_, x.rank(), &axis)) {
      ctx->Fail(Code::kInvalidArgument, "ArgMax axis " + std::to_string(axis_) +
                                            " is out of range for shape " +
                                            x.shape().ToString());
      return;
    }
    std::vector<int64_t> out_dims;
    int64_t outer = 1;
    int64_t inner = 1;
    for (int i = 0; i < x.rank(); ++i) {
      if (i == axis) continue;
      out_dims.push_back(x.dim(i));
      (i < axis ? outer : inner) *= x.dim(i);
    }
    const int64_t size = x.dim(axis);
    Tensor* allocated = AllocateCheckedOutput(ctx, 0, Shape(std::move(out_dims)));
    if (allocated == nullptr) return;
    Tensor& out = *allocated;
    if (out.NumElements() == 0) return;
    if (size == 0) {
      ctx->Fail(Code::kInvalidArgument,
                "ArgMax over an empty axis " + std::to_string(axis_) + " of shape " +
                    x.shape().ToString());
      return;
    }
    if (out.dtype() == DType::kInt32) {
      Run(x.data<T>(), outer, size, inner, out.data<int32_t>());
    } else {
      Run(x.data<T>(), outer, size, inner, out.data<int64_t>());
    }
  }

 private:
  template <typename I>
  static void Run(const T* in, int64_t outer, int64_t size, int64_t inner, I* out) {
    if (inner == 1) {
      for (int64_t o = 0; o < outer; ++o) {
        const T* row = in + o * size;
        T best = row[0];
        int64_t best_index = 0;
        for (int64_t r = 1; r < size; ++r) {
          if (row[r] > best) {
            best = row[r];
            best_index = r;
          }
        }
        out[o] = static_cast<I>(best_index);
      }
      return;
    }
    // Scan the reduced axis slice by slice, keeping a running best per inner index.
    std::vector<T> best(inner);
    for (int64_t o = 0; o < outer; ++o) {
      const T* slab = in + o * size * inner;
      I* __restrict dst = out + o * inner;
      T* __restrict b = best.data();
      for (int64_t j = 0; j < inner; ++j) {
        b[j] = slab[j];
        dst[j] = 0;
      }
      for (int64_t r = 1; r < size; ++r) {
        const T* __restrict src = slab + r * inner;
        const I ri = static_cast<I>(r);
        for (int64_t j = 0; j < inner; ++j) {
          const bool better = src[j] > b[j];
          b[j] = better ? src[j] : b[j];
          dst[j] = better ? ri : dst[j];
        }
      }
    }
  }

  const int64_t axis_;
};

template <typename T> using SumKernel = ReductionKernel<T, SumReducer<T>>;
template <typename T> using MeanKernel = ReductionKernel<T, MeanReducer<T>>;
template <typename T> using MaxKernel = ReductionKernel<T, MaxReducer<T>>;
template <typename T> using MinKernel = ReductionKernel<T, MinReducer<T>>;

const CpuKernelRegistrations<SumKernel, float, double, int32_t, int64_t> reg_sum("Sum");
const CpuKernelRegistrations<MeanKernel, float, double, int32_t, int64_t> reg_mean("Mean");
const CpuKernelRegistrations<MaxKernel, float, double, int32_t, int64_t> reg_max("Max");
const CpuKernelRegistrations<MinKernel, float, double, int32_t, int64_t> reg_min("Min");
const CpuKernelRegistrations<ArgMaxKernel, float, double, int32_t, int64_t> reg_arg_max("ArgMax");

}  // namespace
}  // namespace cpu
}  // namespace actorflow
