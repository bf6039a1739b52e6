// CPU kernels of the stateless sparse ops (graph/sparse_ops.h): Gather (every dtype),
// Unique (int32, int64), UnsortedSegmentSum (float32, float64, int32, int64), and
// DynamicStitch and PartitionRowIds (registered by their ids' dtype, int32 and int64;
// DynamicStitch moves data of every dtype).
// Every id is checked against its table before a row is read or written.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/row_ids.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

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
      for (int64_t j = 0; j < row; ++j) to[j] = WrapAdd(to[j], from[j]);
    }
  }
};

// Inputs: indices_0..N-1 (the kernel's dtype), data_0..N-1 (data_i [indices_i...,
// d...]). Output: merged [max id + 1, d...] with merged[indices_i[j]] = data_i[j]; a
// later input wins a repeated id; rows no id names are zeros.
template <typename TIndex>
class DynamicStitchKernel : public Kernel {
 public:
  explicit DynamicStitchKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const int n = ctx->node().num_inputs() / 2;
    const Tensor& first = ctx->input(n);
    const int first_rank = ctx->input(0).rank();
    if (first.rank() < first_rank) {
      return ctx->Fail(Code::kInvalidArgument, "data 0 " + first.shape().ToString() +
                                                   " must start with its indices' shape " +
                                                   ctx->input(0).shape().ToString());
    }
    const std::vector<int64_t> row_dims(first.shape().dims().begin() + first_rank,
                                        first.shape().dims().end());
    int64_t row = 1;
    for (int64_t d : row_dims) row *= d;
    std::vector<std::vector<int64_t>> ids(n);
    int64_t rows = 0;
    for (int i = 0; i < n; ++i) {
      const Tensor& indices = ctx->input(i);
      const Tensor& data = ctx->input(n + i);
      std::vector<int64_t> want = indices.shape().dims();
      want.insert(want.end(), row_dims.begin(), row_dims.end());
      if (data.shape() != Shape(want) || data.dtype() != first.dtype()) {
        return ctx->Fail(Code::kInvalidArgument,
                         "data " + std::to_string(i) + " " + data.DebugString() + " for indices " +
                             indices.shape().ToString() + ": expected " + DTypeName(first.dtype()) +
                             Shape(want).ToString());
      }
      ids[i] = ReadRowIds(indices);
      for (size_t j = 0; j < ids[i].size(); ++j) {
        if (ids[i][j] < 0) {
          return ctx->Fail(Code::kInvalidArgument,
                           "indices " + std::to_string(i) + "[" + std::to_string(j) +
                               "] = " + std::to_string(ids[i][j]) + " is negative");
        }
        rows = std::max(rows, ids[i][j] + 1);
      }
    }
    std::vector<int64_t> dims = {rows};
    dims.insert(dims.end(), row_dims.begin(), row_dims.end());
    Tensor* out = AllocateCheckedOutput(ctx, 0, Shape(std::move(dims)));  // zero-filled
    if (out == nullptr) return;
    const int64_t bytes = row * static_cast<int64_t>(DTypeSize(first.dtype()));
    char* dst = static_cast<char*>(out->raw_data());
    for (int i = 0; i < n; ++i) {
      const char* src = static_cast<const char*>(ctx->input(n + i).raw_data());
      for (size_t j = 0; j < ids[i].size(); ++j) {
        std::memcpy(dst + ids[i][j] * bytes, src + j * bytes, bytes);
      }
    }
  }
};

// Input: ids (any shape). Outputs, for each part p of num_parts: the local ids of the
// ids part p holds and their positions in the flattened ids. "mod": id lives in part
// id % num_parts at row id / num_parts; "div": parts hold contiguous runs of rows, as
// even as possible with the first num_rows % num_parts parts one row larger.
template <typename T>
class PartitionRowIdsKernel : public Kernel {
 public:
  explicit PartitionRowIdsKernel(const Node& node)
      : Kernel(node),
        rows_(node.attr<int64_t>("num_rows")),
        parts_(node.attr<int64_t>("num_parts")),
        mod_(node.attr<std::string>("strategy") == "mod") {}

  void Compute(KernelContext* ctx) override {
    const std::vector<int64_t> ids = ReadRowIds(ctx->input(0));
    const Status valid = CheckRowIds(ids, rows_, "ids");
    if (!valid.ok()) return ctx->Fail(Code::kInvalidArgument, valid.message());
    const int64_t per_part = rows_ / parts_;
    const int64_t larger = rows_ % parts_;  // parts with per_part + 1 rows
    std::vector<std::vector<T>> local(parts_);
    std::vector<std::vector<int32_t>> positions(parts_);
    for (size_t i = 0; i < ids.size(); ++i) {
      int64_t part = 0;
      int64_t row = 0;
      if (mod_) {
        part = ids[i] % parts_;
        row = ids[i] / parts_;
      } else if (ids[i] < larger * (per_part + 1)) {
        part = ids[i] / (per_part + 1);
        row = ids[i] % (per_part + 1);
      } else {
        part = larger + (ids[i] - larger * (per_part + 1)) / per_part;
        row = (ids[i] - larger * (per_part + 1)) % per_part;
      }
      local[part].push_back(static_cast<T>(row));
      positions[part].push_back(static_cast<int32_t>(i));
    }
    for (int64_t p = 0; p < parts_; ++p) {
      ctx->set_output(static_cast<int>(2 * p), Tensor::FromVector(local[p]));
      ctx->set_output(static_cast<int>(2 * p + 1), Tensor::FromVector(positions[p]));
    }
  }

 private:
  int64_t rows_;
  int64_t parts_;
  bool mod_;
};

const CpuKernelRegistrations<GatherKernel, float, double, int32_t, int64_t, bool> reg_gather(
    "Gather");
const CpuKernelRegistrations<UniqueKernel, int32_t, int64_t> reg_unique("Unique");
const CpuKernelRegistrations<UnsortedSegmentSumKernel, float, double, int32_t, int64_t>
    reg_unsorted_segment_sum("UnsortedSegmentSum");
const CpuKernelRegistrations<DynamicStitchKernel, int32_t, int64_t> reg_dynamic_stitch(
    "DynamicStitch");
const CpuKernelRegistrations<PartitionRowIdsKernel, int32_t, int64_t> reg_partition_row_ids(
    "PartitionRowIds");

}  // namespace
}  // namespace cpu
}  // namespace actorflow
