// The backward rules of the sparse ops (graph/sparse_ops.h). Gather's gradient with
// respect to its params is the incoming gradient's rows with their ids, as
// IndexedSlices (graph/gradients.h keeps it sparse where it can); its dense rule is
// the same slices made dense.
#include <cstdint>
#include <vector>

#include "graph/gradient_rules_internal.h"
#include "graph/ops.h"
#include "graph/sparse_ops.h"

namespace actorflow {
namespace gradient_rules_internal {
namespace {

// out = params[indices]: d params = the rows of g, at ids `indices`. Indices of rank
// other than 1 are flattened, and g's rows with them ([-1, params[1:]]).
Status GatherSlicesRule(const Scope& s, const Node& op, const Output& dy, IndexedSlices* dx0) {
  const Output params = In(op, 0);
  const Output indices = In(op, 1);
  // A static shape, when there is one, spares reading the whole table for its shape
  // (params on another task would otherwise travel just for that).
  if (params.shape().IsFullyDefined()) {
    dx0->dense_shape = Const(s, Tensor::FromVector<int64_t>(params.shape().dims()));
  } else {
    dx0->dense_shape = ShapeOf(s, params, DType::kInt64);
  }
  if (!indices.shape().unknown_rank() && indices.shape().rank() == 1) {
    dx0->values = dy;
    dx0->indices = indices;
    return Status::OK();
  }
  const Output row_shape = Slice(s, dx0->dense_shape, {1}, {-1});
  const Output values_shape =
      ConcatV2(s, {Const(s, Tensor::FromVector<int64_t>({-1})), row_shape}, 0);
  dx0->values = Reshape(s, dy, values_shape);
  dx0->indices = Reshape(s, indices, Tensor::FromVector<int64_t>({-1}));
  return Status::OK();
}

}  // namespace

Status GatherGradRule(const Scope& s, const Node& op, const std::vector<Output>& dy,
                      std::vector<Output>* dx) {
  IndexedSlices slices;
  AF_RETURN_IF_ERROR(GatherSlicesRule(s, op, dy[0], &slices));
  (*dx)[0] = DenseFromSlices(s, slices);
  return Status::OK();
}

// out[s] = sum of data's rows with id s: d data = g's row at each row's id.
Status UnsortedSegmentSumGradRule(const Scope& s, const Node& op,
                                  const std::vector<Output>& dy, std::vector<Output>* dx) {
  (*dx)[0] = Gather(s, dy[0], In(op, 1));
  return Status::OK();
}

// merged[indices_i[j]] = data_i[j]: d data_i = g's rows at indices_i; the indices get
// none.
Status DynamicStitchGradRule(const Scope& s, const Node& op, const std::vector<Output>& dy,
                             std::vector<Output>* dx) {
  const int n = op.num_inputs() / 2;
  for (int i = 0; i < n; ++i) (*dx)[n + i] = Gather(s, dy[0], In(op, i));
  return Status::OK();
}

const SparseGradientFn* FindSparseGradientFn(const std::string& op) {
  static const SparseGradientFn* gather = new SparseGradientFn(GatherSlicesRule);
  return op == "Gather" ? gather : nullptr;
}

}  // namespace gradient_rules_internal
}  // namespace actorflow
