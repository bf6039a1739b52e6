// Reference sparse ops: Gather, Unique, UnsortedSegmentSum, DynamicStitch and
// PartitionRowIds, element by element
// through multi-indices (the stateful Scatter*/SparseApply* ops are checked against
// the dense ops instead, in kernels/sparse_update_kernels_test.cc).
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/reference/reference_util.h"

namespace actorflow {
namespace reference {
namespace {

const std::vector<DType> kIndexDTypes = {DType::kInt32, DType::kInt64};

Status IdOutside(const RefCall& call, const std::string& what, int64_t flat, int64_t id,
                 int64_t rows) {
  return InvalidArgument(call.op + ": " + what + "[" + std::to_string(flat) + "] = " +
                         std::to_string(id) + " is not in [0, " + std::to_string(rows) + ")");
}

// params [N, d...], indices [i...] -> out[i..., d...] = params[indices[i...], d...].
StatusOr<std::vector<Tensor>> Gather(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 2));
  const Tensor& params = call.inputs[0];
  const Tensor& indices = call.inputs[1];
  AF_RETURN_IF_ERROR(CheckDType(call, indices, kIndexDTypes, "indices"));
  if (params.rank() < 1) return InvalidArgument("Gather: params must have rank >= 1");
  for (int64_t i = 0; i < indices.NumElements(); ++i) {
    const int64_t id = GetInt(indices, i);
    if (id < 0 || id >= params.dim(0)) return IdOutside(call, "indices", i, id, params.dim(0));
  }
  std::vector<int64_t> dims = indices.shape().dims();
  for (int i = 1; i < params.rank(); ++i) dims.push_back(params.dim(i));
  Tensor out(params.dtype(), Shape(dims));
  const int r = indices.rank();
  ForEachIndex(out.shape(), [&](const std::vector<int64_t>& j, int64_t flat) {
    const std::vector<int64_t> id_index(j.begin(), j.begin() + r);
    std::vector<int64_t> from = {GetInt(indices, Ravel(id_index, indices.shape()))};
    from.insert(from.end(), j.begin() + r, j.end());
    CopyElement(params, Ravel(from, params.shape()), &out, flat);
  });
  return std::vector<Tensor>{out};
}

// x [n] -> y (distinct values, first occurrence first), idx [n] (out_idx).
StatusOr<std::vector<Tensor>> Unique(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  const Tensor& x = call.inputs[0];
  AF_RETURN_IF_ERROR(CheckDType(call, x, kIndexDTypes, "x"));
  if (x.rank() != 1) return InvalidArgument("Unique: x must be a vector");
  DType out_idx = DType::kInt32;
  if (HasAttr(call, "out_idx")) {
    AF_ASSIGN_OR_RETURN(out_idx, GetAttr<DType>(call, "out_idx"));
  }
  std::vector<int64_t> distinct;
  std::vector<int64_t> position(x.NumElements());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    const int64_t v = GetInt(x, i);
    int64_t k = 0;
    while (k < static_cast<int64_t>(distinct.size()) && distinct[k] != v) ++k;
    if (k == static_cast<int64_t>(distinct.size())) distinct.push_back(v);
    position[i] = k;
  }
  Tensor y(x.dtype(), Shape{static_cast<int64_t>(distinct.size())});
  for (size_t k = 0; k < distinct.size(); ++k) SetInt(&y, k, distinct[k]);
  Tensor idx(out_idx, x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) SetInt(&idx, i, position[i]);
  return std::vector<Tensor>{y, idx};
}

// data [ids..., d...], segment_ids [ids...], num_segments -> out[s, d...] = the sum of
// data[i..., d...] over every i... with segment_ids[i...] == s.
StatusOr<std::vector<Tensor>> UnsortedSegmentSum(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 3));
  const Tensor& data = call.inputs[0];
  const Tensor& ids = call.inputs[1];
  AF_RETURN_IF_ERROR(CheckDType(call, ids, kIndexDTypes, "segment_ids"));
  AF_RETURN_IF_ERROR(CheckDType(call, call.inputs[2], kIndexDTypes, "num_segments"));
  AF_RETURN_IF_ERROR(CheckDType(
      call, data, {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}, "data"));
  if (call.inputs[2].rank() != 0) return InvalidArgument("num_segments must be a scalar");
  const int64_t segments = GetInt(call.inputs[2], 0);
  if (segments < 0) return InvalidArgument("num_segments must be >= 0");
  const int r = ids.rank();
  if (r > data.rank()) return InvalidArgument("segment_ids must be a prefix of data's shape");
  for (int i = 0; i < r; ++i) {
    if (ids.dim(i) != data.dim(i)) {
      return InvalidArgument("segment_ids must be a prefix of data's shape");
    }
  }
  for (int64_t i = 0; i < ids.NumElements(); ++i) {
    const int64_t id = GetInt(ids, i);
    if (id < 0 || id >= segments) return IdOutside(call, "segment_ids", i, id, segments);
  }
  std::vector<int64_t> dims = {segments};
  for (int i = r; i < data.rank(); ++i) dims.push_back(data.dim(i));
  Tensor out(data.dtype(), Shape(dims));
  const bool floating = IsFloating(data.dtype());
  std::vector<double> sums(out.NumElements(), 0.0);
  std::vector<int64_t> int_sums(out.NumElements(), 0);
  ForEachIndex(data.shape(), [&](const std::vector<int64_t>& j, int64_t flat) {
    const std::vector<int64_t> id_index(j.begin(), j.begin() + r);
    std::vector<int64_t> to = {GetInt(ids, Ravel(id_index, ids.shape()))};
    to.insert(to.end(), j.begin() + r, j.end());
    const int64_t at = Ravel(to, out.shape());
    if (floating) {
      sums[at] += GetDouble(data, flat);
    } else {
      int_sums[at] = WrapAdd(int_sums[at], GetInt(data, flat));
    }
  });
  for (int64_t i = 0; i < out.NumElements(); ++i) {
    if (floating) {
      SetDouble(&out, i, sums[i]);
    } else {
      SetInt(&out, i, int_sums[i]);
    }
  }
  return std::vector<Tensor>{out};
}

// indices_0..N-1, data_0..N-1 -> merged[indices_i[j...], d...] = data_i[j..., d...],
// max id + 1 rows, later pairs winning, zeros elsewhere.
StatusOr<std::vector<Tensor>> DynamicStitch(const RefCall& call) {
  const int n = static_cast<int>(call.inputs.size()) / 2;
  if (n < 1 || call.inputs.size() % 2 != 0) {
    return InvalidArgument("DynamicStitch: needs N indices then N data tensors");
  }
  const Tensor& first = call.inputs[n];
  const int first_rank = call.inputs[0].rank();
  if (first.rank() < first_rank) return InvalidArgument("DynamicStitch: data 0 too small");
  std::vector<int64_t> row(first.shape().dims().begin() + first_rank, first.shape().dims().end());
  int64_t rows = 0;
  for (int i = 0; i < n; ++i) {
    const Tensor& ids = call.inputs[i];
    AF_RETURN_IF_ERROR(CheckDType(call, ids, kIndexDTypes, "indices"));
    std::vector<int64_t> want = ids.shape().dims();
    want.insert(want.end(), row.begin(), row.end());
    if (call.inputs[n + i].shape() != Shape(want) || call.inputs[n + i].dtype() != first.dtype()) {
      return InvalidArgument("DynamicStitch: data " + std::to_string(i) + " does not match");
    }
    for (int64_t j = 0; j < ids.NumElements(); ++j) {
      const int64_t id = GetInt(ids, j);
      if (id < 0) return InvalidArgument("DynamicStitch: negative index");
      rows = std::max(rows, id + 1);
    }
  }
  std::vector<int64_t> dims = {rows};
  dims.insert(dims.end(), row.begin(), row.end());
  Tensor out(first.dtype(), Shape(dims));
  for (int64_t i = 0; i < out.NumElements(); ++i) SetInt(&out, i, 0);
  for (int i = 0; i < n; ++i) {
    const Tensor& ids = call.inputs[i];
    const Tensor& data = call.inputs[n + i];
    const int r = ids.rank();
    ForEachIndex(data.shape(), [&](const std::vector<int64_t>& j, int64_t flat) {
      const std::vector<int64_t> id_index(j.begin(), j.begin() + r);
      std::vector<int64_t> to = {GetInt(ids, Ravel(id_index, ids.shape()))};
      to.insert(to.end(), j.begin() + r, j.end());
      CopyElement(data, flat, &out, Ravel(to, out.shape()));
    });
  }
  return std::vector<Tensor>{out};
}

// ids -> per part p: local ids, positions (see graph/sparse_ops.h). "div" found by
// walking the parts' row ranges.
StatusOr<std::vector<Tensor>> PartitionRowIds(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  const Tensor& ids = call.inputs[0];
  AF_RETURN_IF_ERROR(CheckDType(call, ids, kIndexDTypes, "ids"));
  AF_ASSIGN_OR_RETURN(int64_t rows, GetAttr<int64_t>(call, "num_rows"));
  AF_ASSIGN_OR_RETURN(int64_t parts, GetAttr<int64_t>(call, "num_parts"));
  AF_ASSIGN_OR_RETURN(std::string strategy, GetAttr<std::string>(call, "strategy"));
  if (parts < 1 || parts > rows) return InvalidArgument("PartitionRowIds: bad num_parts");
  std::vector<int64_t> first_row = {0};  // div: part p holds [first_row[p], first_row[p+1])
  for (int64_t p = 0; p < parts; ++p) {
    first_row.push_back(first_row.back() + rows / parts + (p < rows % parts ? 1 : 0));
  }
  std::vector<std::vector<int64_t>> local(parts);
  std::vector<std::vector<int64_t>> positions(parts);
  for (int64_t i = 0; i < ids.NumElements(); ++i) {
    const int64_t id = GetInt(ids, i);
    if (id < 0 || id >= rows) return IdOutside(call, "ids", i, id, rows);
    int64_t part = 0;
    if (strategy == "mod") {
      part = id % parts;
      local[part].push_back(id / parts);
    } else {
      while (id >= first_row[part + 1]) ++part;
      local[part].push_back(id - first_row[part]);
    }
    positions[part].push_back(i);
  }
  std::vector<Tensor> out;
  for (int64_t p = 0; p < parts; ++p) {
    const int64_t n = static_cast<int64_t>(local[p].size());
    Tensor l(ids.dtype(), Shape{n});
    Tensor pos(DType::kInt32, Shape{n});
    for (int64_t k = 0; k < n; ++k) {
      SetInt(&l, k, local[p][k]);
      SetInt(&pos, k, positions[p][k]);
    }
    out.push_back(l);
    out.push_back(pos);
  }
  return out;
}

}  // namespace

void AddSparseOps(RefTable* table) {
  (*table)["Gather"] = Gather;
  (*table)["Unique"] = Unique;
  (*table)["UnsortedSegmentSum"] = UnsortedSegmentSum;
  (*table)["DynamicStitch"] = DynamicStitch;
  (*table)["PartitionRowIds"] = PartitionRowIds;
}

}  // namespace reference
}  // namespace actorflow
