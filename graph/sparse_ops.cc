#include "graph/sparse_ops.h"

#include <string>
#include <utility>
#include <vector>

#include "graph/ops.h"

namespace actorflow {
namespace {

using ops_internal::Single;

}  // namespace

Output Gather(const Scope& scope, const Input& params, const Input& indices) {
  return Single(scope, "Gather", {params, indices});
}

UniqueResult Unique(const Scope& scope, const Input& x, DType out_idx) {
  const Node* node = scope.AddNode("Unique", {x}, {{"out_idx", out_idx}});
  if (node == nullptr) return {};
  return {Output(node, 0), Output(node, 1)};
}

Output UnsortedSegmentSum(const Scope& scope, const Input& data, const Input& segment_ids,
                          const Input& num_segments) {
  return Single(scope, "UnsortedSegmentSum", {data, segment_ids, num_segments});
}

Output DenseFromSlices(const Scope& scope, const IndexedSlices& slices) {
  // dense_shape[0] as a scalar: a 1-element slice reshaped to rank 0.
  const Output first = Slice(scope, slices.dense_shape, {0}, {1});
  const Output rows = Reshape(scope, first, Tensor::FromVector<int32_t>({}, Shape{0}));
  return UnsortedSegmentSum(scope, slices.values, slices.indices, rows);
}

Output DynamicStitch(const Scope& scope, const std::vector<Output>& indices,
                     const std::vector<Output>& data) {
  if (!scope.ok()) return Output();
  if (indices.size() != data.size() || indices.empty()) {
    scope.UpdateStatus(InvalidArgument("DynamicStitch takes as many data tensors as index "
                                       "tensors, at least one: got " +
                                       std::to_string(indices.size()) + " and " +
                                       std::to_string(data.size())));
    return Output();
  }
  std::vector<Input> inputs(indices.begin(), indices.end());
  inputs.insert(inputs.end(), data.begin(), data.end());
  return Single(scope, "DynamicStitch", inputs);
}

PartitionedRowIds PartitionRowIds(const Scope& scope, const Input& ids, int64_t num_rows,
                                  int64_t num_parts, const std::string& strategy) {
  const Node* node = scope.AddNode(
      "PartitionRowIds", {ids},
      {{"num_rows", num_rows}, {"num_parts", num_parts}, {"strategy", strategy}});
  PartitionedRowIds result;
  if (node == nullptr) return result;
  for (int64_t p = 0; p < num_parts; ++p) {
    result.local_ids.emplace_back(node, static_cast<int>(2 * p));
    result.positions.emplace_back(node, static_cast<int>(2 * p + 1));
  }
  return result;
}

namespace {

// OK when every part has a static shape [rows_p, d...] with one row shape and the
// rows the strategy gives part p of their total; the total in *num_rows.
Status CheckEmbeddingParts(const std::vector<Output>& params, const std::string& strategy,
                           int64_t* num_rows) {
  if (params.empty()) return InvalidArgument("EmbeddingLookup: no params");
  if (strategy != "mod" && strategy != "div") {
    return InvalidArgument("EmbeddingLookup: partition strategy '" + strategy +
                           "': use \"mod\" or \"div\"");
  }
  *num_rows = 0;
  for (size_t p = 0; p < params.size(); ++p) {
    const Output& part = params[p];
    if (!part.valid()) return InvalidArgument("EmbeddingLookup: params[" + std::to_string(p) +
                                              "] is an invalid Output");
    const Shape& shape = part.shape();
    if (!shape.IsFullyDefined() || shape.rank() < 1) {
      return InvalidArgument("EmbeddingLookup: part '" + part.name() + "' has shape " +
                             shape.ToString() + "; parts need static shapes of rank >= 1");
    }
    const Shape& first = params[0].shape();
    if (part.dtype() != params[0].dtype() ||
        std::vector<int64_t>(shape.dims().begin() + 1, shape.dims().end()) !=
            std::vector<int64_t>(first.dims().begin() + 1, first.dims().end())) {
      return InvalidArgument("EmbeddingLookup: part '" + part.name() + "' " +
                             DTypeName(part.dtype()) + shape.ToString() + " has other rows "
                             "than part '" + params[0].name() + "' " +
                             DTypeName(params[0].dtype()) + first.ToString());
    }
    *num_rows += shape.dim(0);
  }
  const int64_t parts = static_cast<int64_t>(params.size());
  for (int64_t p = 0; p < parts; ++p) {
    // mod: the ids p, p + parts, ...; div: the even split, larger parts first.
    const int64_t want = strategy == "mod"
                             ? (*num_rows - p + parts - 1) / parts
                             : *num_rows / parts + (p < *num_rows % parts ? 1 : 0);
    if (params[p].shape().dim(0) != want) {
      return InvalidArgument("EmbeddingLookup: part '" + params[p].name() + "' has " +
                             std::to_string(params[p].shape().dim(0)) + " rows, but the \"" +
                             strategy + "\" strategy gives part " + std::to_string(p) + " of " +
                             std::to_string(parts) + " " + std::to_string(want) + " of the " +
                             std::to_string(*num_rows) + " rows");
    }
  }
  return Status::OK();
}

// A Gather of `part`'s rows beside it (its device, colocated).
Output GatherBeside(const Scope& scope, const Output& part, const Output& ids) {
  return Gather(scope.WithDevice(part.node->requested_device()).ColocateWith(part), part, ids);
}

}  // namespace

Output EmbeddingLookup(const Scope& scope, const std::vector<Output>& params, const Input& ids,
                       const std::string& partition_strategy) {
  if (!scope.ok()) return Output();
  int64_t num_rows = 0;
  const Status parts_ok = CheckEmbeddingParts(params, partition_strategy, &num_rows);
  if (!parts_ok.ok()) {
    scope.UpdateStatus(parts_ok);
    return Output();
  }
  const Scope s = scope.NewSubScope("embedding_lookup");
  const Output id_tensor = Identity(s, ids);
  const Output flat = Reshape(s, id_tensor, Tensor::FromVector<int32_t>({-1}));
  const UniqueResult unique = Unique(s, flat);
  Output rows;
  if (params.size() == 1) {
    rows = GatherBeside(s, params[0], unique.y);
  } else {
    const PartitionedRowIds split = PartitionRowIds(
        s, unique.y, num_rows, static_cast<int64_t>(params.size()), partition_strategy);
    if (!s.ok()) return Output();
    std::vector<Output> part_rows;
    for (size_t p = 0; p < params.size(); ++p) {
      part_rows.push_back(GatherBeside(s, params[p], split.local_ids[p]));
    }
    rows = DynamicStitch(s, split.positions, part_rows);
  }
  const Output looked_up = Gather(s, rows, unique.idx);  // [n, d...]
  const Shape& id_shape = id_tensor.shape();
  if (!id_shape.unknown_rank() && id_shape.rank() == 1) return looked_up;
  // Back to [ids..., d...].
  const Output row_shape = Slice(s, ShapeOf(s, looked_up), {1}, {-1});
  return Reshape(s, looked_up, ConcatV2(s, {ShapeOf(s, id_tensor), row_shape}, 0));
}

Output EmbeddingLookupSparse(const Scope& scope, const std::vector<Output>& params,
                             const Input& ids, const Input& segment_ids,
                             const Input& num_segments, const std::string& combiner,
                             const std::string& partition_strategy) {
  if (!scope.ok()) return Output();
  if (combiner != "sum" && combiner != "mean" && combiner != "sqrtn") {
    scope.UpdateStatus(InvalidArgument("EmbeddingLookupSparse: combiner '" + combiner +
                                       "': use \"sum\", \"mean\" or \"sqrtn\""));
    return Output();
  }
  const Output embedded = EmbeddingLookup(scope, params, ids, partition_strategy);
  if (!scope.ok()) return Output();
  const Scope s = scope.NewSubScope("embedding_lookup_sparse");
  const Output segments = Identity(s, segment_ids);
  const Output sum = UnsortedSegmentSum(s, embedded, segments, num_segments);
  if (combiner == "sum") return sum;
  const DType dtype = params[0].dtype();
  const Output ones = OnesLike(s, Cast(s, segments, dtype));
  Output counts = UnsortedSegmentSum(s, ones, segments, num_segments);  // [num_segments]
  counts = Maximum(s, counts, Cast(s, Tensor::Scalar<int32_t>(1), dtype));
  counts = Reshape(s, combiner == "mean" ? counts : Sqrt(s, counts),
                   Tensor::FromVector<int32_t>({-1, 1}));
  return Div(s, sum, counts);
}

Output ScatterAdd(const Scope& scope, const Input& ref, const Input& indices,
                  const Input& updates) {
  return Single(scope, "ScatterAdd", {ref, indices, updates});
}

Output ScatterSub(const Scope& scope, const Input& ref, const Input& indices,
                  const Input& updates) {
  return Single(scope, "ScatterSub", {ref, indices, updates});
}

Output ScatterUpdate(const Scope& scope, const Input& ref, const Input& indices,
                     const Input& updates) {
  return Single(scope, "ScatterUpdate", {ref, indices, updates});
}

Output SparseApplyGradientDescent(const Scope& scope, const Input& var, const Input& alpha,
                                  const Input& grad, const Input& indices) {
  return Single(scope, "SparseApplyGradientDescent", {var, alpha, grad, indices});
}

Output SparseApplyAdagrad(const Scope& scope, const Input& var, const Input& accum,
                          const Input& lr, const Input& grad, const Input& indices) {
  return Single(scope, "SparseApplyAdagrad", {var, accum, lr, grad, indices});
}

Output SparseApplyAdam(const Scope& scope, const Input& var, const Input& m, const Input& v,
                       const Input& beta1_power, const Input& beta2_power, const Input& lr,
                       const Input& beta1, const Input& beta2, const Input& epsilon,
                       const Input& grad, const Input& indices) {
  return Single(scope, "SparseApplyAdam",
                {var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, indices});
}

Output SparseApplyFtrl(const Scope& scope, const Input& var, const Input& accum,
                       const Input& linear, const Input& grad, const Input& indices,
                       const Input& lr, const Input& l1, const Input& l2, const Input& lr_power) {
  return Single(scope, "SparseApplyFtrl",
                {var, accum, linear, grad, indices, lr, l1, l2, lr_power});
}

}  // namespace actorflow
