#include "graph/sparse_ops.h"

#include <string>
#include <utility>
#include <vector>

#include "graph/ops.h"

namespace actorflow {
namespace {

Output Single(const Scope& scope, const std::string& op, const std::vector<Input>& inputs) {
  return Output(scope.AddNode(op, inputs, {}), 0);
}

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

}  // namespace actorflow
