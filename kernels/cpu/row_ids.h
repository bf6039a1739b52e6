// Row ids of the sparse kernels (Gather, UnsortedSegmentSum, Scatter*, SparseApply*):
// reading int32/int64 ids, checking them against a table's rows before any row is
// touched, and grouping repeated ids so that their rows can be summed first.
//
// Thread safety: pure functions.
#ifndef ACTORFLOW_KERNELS_CPU_ROW_IDS_H_
#define ACTORFLOW_KERNELS_CPU_ROW_IDS_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"

namespace actorflow {
namespace cpu {

// Every element of `ids` (int32 or int64, any shape) widened to int64.
inline std::vector<int64_t> ReadRowIds(const Tensor& ids) {
  std::vector<int64_t> out(ids.NumElements());
  if (ids.dtype() == DType::kInt32) {
    const int32_t* p = ids.data<int32_t>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = p[i];
  } else {
    const int64_t* p = ids.data<int64_t>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = p[i];
  }
  return out;
}

// OK when every id lies in [0, rows); otherwise InvalidArgument naming the first id
// outside and its position: "<what>[3] = 12 is not in [0, 10)".
inline Status CheckRowIds(const std::vector<int64_t>& ids, int64_t rows, const std::string& what) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= rows) {
      return InvalidArgument(what + "[" + std::to_string(i) + "] = " + std::to_string(ids[i]) +
                             " is not in [0, " + std::to_string(rows) + ")");
    }
  }
  return Status::OK();
}

// The product of shape's dims after the first: the elements of one row.
inline int64_t RowSize(const Shape& shape) {
  int64_t n = 1;
  for (int i = 1; i < shape.rank(); ++i) n *= shape.dim(i);
  return n;
}

// Repeated ids grouped: distinct[k] is the k-th distinct id in order of first
// occurrence and slot[i] the k of ids[i].
struct GroupedRowIds {
  std::vector<int64_t> distinct;
  std::vector<int64_t> slot;
  bool has_repeats() const { return distinct.size() != slot.size(); }
};

inline GroupedRowIds GroupRowIds(const std::vector<int64_t>& ids) {
  GroupedRowIds grouped;
  grouped.slot.resize(ids.size());
  std::unordered_map<int64_t, int64_t> seen;
  seen.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    auto [it, inserted] = seen.emplace(ids[i], static_cast<int64_t>(grouped.distinct.size()));
    if (inserted) grouped.distinct.push_back(ids[i]);
    grouped.slot[i] = it->second;
  }
  return grouped;
}

}  // namespace cpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CPU_ROW_IDS_H_
