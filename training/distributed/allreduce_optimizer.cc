#include "training/distributed/allreduce_optimizer.h"

#include <utility>

#include "graph/ops.h"
#include "graph/sparse_ops.h"

namespace actorflow {
namespace {

Status CheckGroup(const CollectiveGroup& group) {
  if (group.key.empty() || group.devices.empty()) {
    return InvalidArgument("an all-reduce group needs a key and at least one device (got key '" +
                           group.key + "', " + std::to_string(group.devices.size()) +
                           " devices)");
  }
  return Status::OK();
}

// A bucket: gradients (indices into the caller's list) of one dtype.
struct Bucket {
  DType dtype = DType::kFloat32;
  std::vector<size_t> members;
  int64_t bytes = 0;
};

// Reverse variable order, one dtype per bucket, closed once it holds `limit` bytes.
std::vector<Bucket> PlanBuckets(const std::vector<Output>& gradients, int64_t limit) {
  std::vector<Bucket> buckets;
  std::vector<Bucket> open;  // at most one per dtype
  for (size_t i = gradients.size(); i-- > 0;) {
    const Output& g = gradients[i];
    Bucket* bucket = nullptr;
    for (Bucket& b : open) {
      if (b.dtype == g.dtype()) bucket = &b;
    }
    if (bucket == nullptr) {
      open.push_back(Bucket{g.dtype(), {}, 0});
      bucket = &open.back();
    }
    bucket->members.push_back(i);
    const int64_t n = g.shape().IsFullyDefined() ? g.shape().num_elements() : 0;
    bucket->bytes += n * static_cast<int64_t>(DTypeSize(g.dtype()));
    if (bucket->bytes >= limit) {
      buckets.push_back(std::move(*bucket));
      open.erase(open.begin() + (bucket - open.data()));
    }
  }
  for (Bucket& b : open) buckets.push_back(std::move(b));
  return buckets;
}

}  // namespace

AllReduceOptimizer::AllReduceOptimizer(std::unique_ptr<Optimizer> optimizer,
                                       AllReduceOptions options)
    : optimizer_(std::move(optimizer)), options_(std::move(options)) {}

StatusOr<Optimizer::GradientsAndVars> AllReduceOptimizer::ComputeGradients(
    const Scope& scope, Output loss, std::vector<Output> var_list) {
  AF_RETURN_IF_ERROR(CheckGroup(options_.group));
  if (options_.bucket_bytes < 0) {
    return InvalidArgument("bucket_bytes is " + std::to_string(options_.bucket_bytes) +
                           ": it must be >= 0");
  }
  AF_ASSIGN_OR_RETURN(Optimizer::GradientsAndVars grads,
                      optimizer_->ComputeGradients(scope, loss, std::move(var_list)));
  Scope s = scope.NewSubScope("allreduce");
  std::vector<Output> dense;
  for (auto& [g, var] : grads) {
    if (g.sparse()) g = Gradient{DenseFromSlices(s, g.slices), {}};
    if (!g.dense.shape().IsFullyDefined()) {
      return InvalidArgument("the gradient of '" + var.node->name() + "' has shape " +
                             g.dense.shape().ToString() +
                             ": bucketed all-reduce needs fully defined shapes");
    }
    dense.push_back(g.dense);
  }
  buckets_.clear();
  const std::vector<Bucket> plan = PlanBuckets(dense, options_.bucket_bytes);
  for (size_t k = 0; k < plan.size(); ++k) {
    const Bucket& bucket = plan[k];
    Scope b = s.NewSubScope("bucket_" + std::to_string(k));
    const int64_t instance = options_.first_instance_key + static_cast<int64_t>(k);
    std::vector<std::string> names;
    for (size_t i : bucket.members) names.push_back(grads[i].second.node->name());
    buckets_.push_back(names);
    if (bucket.members.size() == 1) {
      const size_t i = bucket.members.front();
      grads[i].first.dense = CollectiveAllReduce(b, dense[i], options_.group, instance, "mean",
                                                 options_.algorithm);
      continue;
    }
    std::vector<Input> flat;
    for (size_t i : bucket.members) flat.push_back(Reshape(b, dense[i], Tensor::FromVector<int64_t>({-1})));
    Output reduced = CollectiveAllReduce(b, ConcatV2(b, flat, 0), options_.group, instance,
                                         "mean", options_.algorithm);
    int64_t offset = 0;
    for (size_t i : bucket.members) {
      const Shape& shape = dense[i].shape();
      const int64_t n = shape.num_elements();
      Output part = Slice(b, reduced, {offset}, {n});
      grads[i].first.dense = Reshape(b, part, Tensor::FromVector<int64_t>(shape.dims()));
      offset += n;
    }
  }
  AF_RETURN_IF_ERROR(scope.status());
  return grads;
}

StatusOr<Output> AllReduceOptimizer::Minimize(const Scope& scope, Output loss,
                                              Output global_step, std::vector<Output> var_list) {
  AF_ASSIGN_OR_RETURN(Optimizer::GradientsAndVars grads,
                      ComputeGradients(scope, loss, std::move(var_list)));
  return optimizer_->ApplyGradientsWithSlices(scope, grads, global_step);
}

StatusOr<Output> BroadcastGlobalVariables(const Scope& scope, const CollectiveGroup& group,
                                          int64_t root_rank, int64_t first_instance_key) {
  AF_RETURN_IF_ERROR(CheckGroup(group));
  Graph* graph = scope.graph();
  Scope s = scope.NewSubScope("broadcast_variables");
  std::vector<Output> assigns;
  int64_t instance = first_instance_key;
  for (const std::string& name : graph->GetCollection(kVariablesCollection)) {
    const Node* var = graph->FindNode(name);
    if (var == nullptr) continue;
    Output value = CollectiveBroadcast(s, Identity(s, Output(var)), group, instance++, root_rank);
    assigns.push_back(Assign(s, Output(var), value));
  }
  // The caller's scope names the op (WithOpName), as for any op function.
  const Node* done = NoOp(scope.WithControlDependencies(assigns));
  AF_RETURN_IF_ERROR(scope.status());
  return Output(done);
}

}  // namespace actorflow
