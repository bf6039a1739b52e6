// CPU kernels of the stateless sparse ops (graph/sparse_ops.h): Gather (every dtype),
// Unique (int32, int64) and UnsortedSegmentSum (float32, float64, int32, int64).
// Every id is checked against its table before a row is read or written.
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/row_ids.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

// a + b; integers wrap around (two's complement) instead of overflowing.
template <typename T>
T WrappingAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

// Inputs: params [N, d...], indices [i...] (int). Output: [i..., d...].
template <typename T>
class GatherKernel : public Kernel {
 public:
  explicit GatherKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& params = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    if (params.rank() < 1) {
      return ctx->Fail(Code::kInvalidArgument,
                       "params must have rank >= 1, got " + params.shape().ToString());
    }
    const std::vector<int64_t> ids = ReadRowIds(indices);
    const Status valid = CheckRowIds(ids, params.dim(0), "indices");
    if (!valid.ok()) return ctx->Fail(Code::kInvalidArgument, valid.message());
    std::vector<int64_t> dims = indices.shape().dims();
    dims.insert(dims.end(), params.shape().dims().begin() + 1, params.shape().dims().end());
    Tensor* out = AllocateCheckedOutput(ctx, 0, Shape(std::move(dims)), /*overwrite=*/true);
    if (out == nullptr) return;
    const int64_t row = RowSize(params.shape());
    const T* src = params.data<T>();
    T* dst = out->data<T>();
    for (size_t i = 0; i < ids.size(); ++i) {
      std::memcpy(dst + i * row, src + ids[i] * row, row * sizeof(T));
    }
  }
};

// Input: x [n] (int). Outputs: y [k] (x's distinct values, first occurrence first),
// idx [n] (out_idx).
template <typename T>
class UniqueKernel : public Kernel {
 public:
  explicit UniqueKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    if (x.rank() != 1) {
      return ctx->Fail(Code::kInvalidArgument, "x must be a vector, got " + x.shape().ToString());
    }
    const std::vector<int64_t> values = ReadRowIds(x);
    const GroupedRowIds grouped = GroupRowIds(values);
    Tensor& y = ctx->allocate_output_for_overwrite(
        0, Shape{static_cast<int64_t>(grouped.distinct.size())});
    for (size_t k = 0; k < grouped.distinct.size(); ++k) {
      y.data<T>()[k] = static_cast<T>(grouped.distinct[k]);
    }
    Tensor& idx = ctx->allocate_output_for_overwrite(1, x.shape());
    for (size_t i = 0; i < grouped.slot.size(); ++i) {
      if (idx.dtype() == DType::kInt32) {
        idx.data<int32_t>()[i] = static_cast<int32_t>(grouped.slot[i]);
      } else {
        idx.data<int64_t>()[i] = grouped.slot[i];
      }
    }
  }
};

// Inputs: data [ids..., d...], segment_ids [ids...] (int), num_segments (int scalar).
// Output: [num_segments, d...], rows summed by id in input order.
template <typename T>
class UnsortedSegmentSumKernel : public Kernel {
 public:
  explicit UnsortedSegmentSumKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    const Tensor& segment_ids = ctx->input(1);
    const Tensor& num_segments = ctx->input(2);
    if (num_segments.rank() != 0) {
      return ctx->Fail(Code::kInvalidArgument, "num_segments must be a scalar, got " +
                                                   num_segments.shape().ToString());
    }
    const int64_t segments = ReadRowIds(num_segments)[0];
    if (segments < 0) {
      return ctx->Fail(Code::kInvalidArgument,
                       "num_segments is " + std::to_string(segments) + ": it must be >= 0");
    }
    const Shape& ids_shape = segment_ids.shape();
    bool prefix = ids_shape.rank() <= data.rank();
    for (int i = 0; prefix && i < ids_shape.rank(); ++i) prefix = ids_shape.dim(i) == data.dim(i);
    if (!prefix) {
      return ctx->Fail(Code::kInvalidArgument, "segment_ids " + ids_shape.ToString() +
                                                   " must be a prefix of data's shape " +
                                                   data.shape().ToString());
    }
    const std::vector<int64_t> ids = ReadRowIds(segment_ids);
    const Status valid = CheckRowIds(ids, segments, "segment_ids");
    if (!valid.ok()) return ctx->Fail(Code::kInvalidArgument, valid.message());
    std::vector<int64_t> dims = {segments};
    dims.insert(dims.end(), data.shape().dims().begin() + ids_shape.rank(),
                data.shape().dims().end());
    Tensor* out = AllocateCheckedOutput(ctx, 0, Shape(std::move(dims)));  // zero-filled
    if (out == nullptr) return;
    int64_t row = 1;
    for (int i = ids_shape.rank(); i < data.rank(); ++i) row *= data.dim(i);
    const T* src = data.data<T>();
    T* dst = out->data<T>();
    for (size_t i = 0; i < ids.size(); ++i) {
      T* to = dst + ids[i] * row;
      const T* from = src + i * row;
      for (int64_t j = 0; j < row; ++j) to[j] = WrappingAdd(to[j], from[j]);
    }
  }
};

const CpuKernelRegistrations<GatherKernel, float, double, int32_t, int64_t, bool> reg_gather(
    "Gather");
const CpuKernelRegistrations<UniqueKernel, int32_t, int64_t> reg_unique("Unique");
const CpuKernelRegistrations<UnsortedSegmentSumKernel, float, double, int32_t, int64_t>
    reg_unsorted_segment_sum("UnsortedSegmentSum");

}  // namespace
}  // namespace cpu
}  // namespace actorflow
