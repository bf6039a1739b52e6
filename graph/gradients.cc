// Gradients(): the backward walk. The rules themselves live in gradient_rules.cc.
//
// The walk relies on the graph's invariant that node ids are a topological order:
//  1. forward pass (ids ascending from the first x): a node is "downstream" when a
//     float data input comes from an x or from a downstream node;
//  2. backward pass (ids descending): a node is "needed" when it is a y's node or
//     feeds a needed downstream node; the nodes between xs and ys are downstream and
//     needed;
//  3. backward pass again over those nodes: every consumer of a node has a larger id,
//     so when a node is reached all gradients of its outputs are known; they are
//     summed, the node's rule runs and its input gradients are queued.
// Gradients are queued dense or as IndexedSlices: Gather's sparse rule makes slices of
// its params, Identity hands them on, and summing makes them dense anywhere else.
// Nodes added by the rules get ids above the original graph's and are never visited.
#include "graph/gradients.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "graph/gradient_rules_internal.h"
#include "graph/ops.h"
#include "graph/sparse_ops.h"

namespace actorflow {
namespace {

using gradient_rules_internal::FindSparseGradientFn;
using gradient_rules_internal::SparseGradientFn;
using EndpointKey = std::pair<int, int>;  // (node id, output index)

EndpointKey KeyOf(const Endpoint& e) { return {e.node->id(), e.index}; }
EndpointKey KeyOf(const Output& o) { return {o.node->id(), o.index}; }

Status CheckOutputs(const Graph& graph, const std::vector<Output>& outputs,
                    const std::string& what) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Output& o = outputs[i];
    if (!o.valid()) {
      return InvalidArgument("Gradients: " + what + "[" + std::to_string(i) +
                             "] is an invalid Output (from a failed op?)");
    }
    if (o.node->id() >= graph.num_nodes() || graph.node(o.node->id()) != o.node) {
      return InvalidArgument("Gradients: " + what + "[" + std::to_string(i) + "] '" + o.name() +
                             "' belongs to another graph than the scope's");
    }
  }
  return Status::OK();
}

class GradientBuilder {
 public:
  GradientBuilder(const Scope& scope, const std::vector<Output>& ys,
                  const std::vector<Output>& xs)
      : graph_(*scope.graph()),
        scope_(scope.NewSubScope("gradients")),
        ys_(ys),
        xs_(xs),
        num_nodes_(graph_.num_nodes()),
        downstream_(num_nodes_, false),
        needed_(num_nodes_, false) {
    for (const Output& x : xs_) {
      x_keys_.push_back(KeyOf(x));
      first_x_ = std::min(first_x_, x.node->id());
    }
  }

  // Seeds the gradient of each y, marks the nodes between xs and ys, runs their rules
  // and returns the summed gradient of each x (sparse where `keep_slices` allows).
  StatusOr<std::vector<Gradient>> Build(const std::vector<Output>& grad_ys, bool keep_slices) {
    for (size_t i = 0; i < ys_.size(); ++i) {
      const Output& y = ys_[i];
      Output seed = grad_ys.empty()
                        ? OnesLike(NodeScope(*y.node, "ones"), y)
                        : grad_ys[i];
      if (!scope_.ok()) return scope_.status();
      pending_[KeyOf(y)].push_back(Gradient{seed, {}});
    }
    MarkBetween();
    for (int id = num_nodes_ - 1; id >= first_x_; --id) {
      if (!downstream_[id] || !needed_[id]) continue;
      AF_RETURN_IF_ERROR(Backprop(*graph_.node(id)));
    }
    std::vector<Gradient> result;
    for (const Output& x : xs_) {
      if (!IsFloating(x.dtype())) {
        result.emplace_back();
        continue;
      }
      AF_ASSIGN_OR_RETURN(Gradient g, SummedGradient(KeyOf(x), keep_slices));
      result.push_back(g);
    }
    return result;
  }

 private:
  bool IsX(const EndpointKey& key) const {
    return std::find(x_keys_.begin(), x_keys_.end(), key) != x_keys_.end();
  }

  // Data inputs of `node` that can carry a gradient: not refs, float dtype.
  static bool CarriesGradient(const Node& node, int i) {
    if (node.IsRefInput(i)) return false;
    const Endpoint& e = node.input(i);
    return IsFloating(e.node->output_dtype(e.index));
  }

  // True when gradients arriving at this endpoint matter: it is an x or an output of
  // a node downstream of an x.
  bool Relevant(const Endpoint& e) const {
    return downstream_[e.node->id()] || IsX(KeyOf(e));
  }

  void MarkBetween() {
    for (int id = first_x_; id < num_nodes_; ++id) {
      const Node& node = *graph_.node(id);
      for (int i = 0; i < node.num_inputs(); ++i) {
        if (CarriesGradient(node, i) && Relevant(node.input(i))) {
          downstream_[id] = true;
          break;
        }
      }
    }
    for (const Output& y : ys_) needed_[y.node->id()] = true;
    for (int id = num_nodes_ - 1; id >= first_x_; --id) {
      if (!needed_[id] || !downstream_[id]) continue;
      const Node& node = *graph_.node(id);
      for (int i = 0; i < node.num_inputs(); ++i) {
        if (CarriesGradient(node, i)) needed_[node.input(i).node->id()] = true;
      }
    }
  }

  // "gradients/<node>_<suffix>/" on the node's requested device.
  Scope NodeScope(const Node& node, const std::string& suffix) const {
    return scope_.NewSubScope(node.name() + "_" + suffix).WithDevice(node.requested_device());
  }

  // Several slices of one tensor as one: rows and ids concatenated (ids as int64 when
  // their dtypes differ).
  static IndexedSlices ConcatSlices(const Scope& s, const std::vector<Gradient>& grads) {
    bool same_index_dtype = true;
    for (const Gradient& g : grads) {
      same_index_dtype = same_index_dtype &&
                         g.slices.indices.dtype() == grads[0].slices.indices.dtype();
    }
    std::vector<Input> values;
    std::vector<Input> indices;
    for (const Gradient& g : grads) {
      values.push_back(g.slices.values);
      indices.push_back(same_index_dtype ? g.slices.indices
                                         : Cast(s, g.slices.indices, DType::kInt64));
    }
    return {ConcatV2(s, values, 0), ConcatV2(s, indices, 0), grads[0].slices.dense_shape};
  }

  // The sum of the gradients queued for an endpoint (invalid when none); the sum
  // replaces the queue so that it is built once. Sparse only when every queued
  // gradient is sparse and `keep_slices`.
  StatusOr<Gradient> SummedGradient(const EndpointKey& key, bool keep_slices) {
    auto it = pending_.find(key);
    if (it == pending_.end() || it->second.empty()) return Gradient();
    std::vector<Gradient>& grads = it->second;
    bool all_sparse = true;
    for (const Gradient& g : grads) all_sparse = all_sparse && g.sparse();
    if (grads.size() == 1 && (keep_slices || !all_sparse)) return grads[0];
    const Scope s = NodeScope(*graph_.node(key.first), "grad");
    Gradient sum;
    if (all_sparse && keep_slices) {
      sum.slices = ConcatSlices(s, grads);
    } else {
      for (const Gradient& g : grads) {
        const Output dense = g.sparse() ? DenseFromSlices(s, g.slices) : g.dense;
        sum.dense = sum.dense.valid() ? Add(s, sum.dense, dense) : dense;
      }
    }
    if (!s.ok()) return s.status();
    grads = {sum};
    return sum;
  }

  // Queues gradient g of node's input i, when it matters there.
  Status Queue(const Node& node, int i, const Gradient& g) {
    if (!g.valid() || !CarriesGradient(node, i) || !Relevant(node.input(i))) {
      return Status::OK();
    }
    const Endpoint& e = node.input(i);
    const DType dtype = g.sparse() ? g.slices.values.dtype() : g.dense.dtype();
    if (dtype != e.node->output_dtype(e.index)) {
      return Internal("gradient of " + node.Describe() + ": input " + std::to_string(i) +
                      " got a " + DTypeName(dtype) + " gradient for a " +
                      DTypeName(e.node->output_dtype(e.index)) + " input");
    }
    pending_[KeyOf(e)].push_back(g);
    return Status::OK();
  }

  Status Backprop(const Node& node) {
    // Identity hands slices on unchanged; Gather makes them; every other rule is dense.
    const bool passes_slices = node.op() == "Identity";
    std::vector<Output> grad_outputs;
    Gradient passed;
    bool any = false;
    for (int k = 0; k < node.num_outputs(); ++k) {
      AF_ASSIGN_OR_RETURN(Gradient g, SummedGradient({node.id(), k}, passes_slices));
      any = any || g.valid();
      if (g.sparse()) passed = g;
      grad_outputs.push_back(g.dense);
    }
    if (!any) return Status::OK();
    if (passed.sparse()) return Queue(node, 0, passed);
    const Scope s = NodeScope(node, "grad");
    if (const SparseGradientFn* sparse_rule = FindSparseGradientFn(node.op())) {
      IndexedSlices slices;
      Status status = (*sparse_rule)(s, node, grad_outputs[0], &slices);
      if (status.ok()) status = s.status();
      if (!status.ok()) return status.WithContext("gradient of " + node.Describe());
      return Queue(node, 0, Gradient{Output(), slices});
    }
    const GradientFn* rule = FindGradientFn(node.op());
    if (rule == nullptr) return Status::OK();  // not differentiable: the gradient stops
    std::vector<Output> grad_inputs(node.num_inputs());
    Status status = (*rule)(s, node, grad_outputs, &grad_inputs);
    if (status.ok()) status = s.status();
    if (!status.ok()) return status.WithContext("gradient of " + node.Describe());
    if (static_cast<int>(grad_inputs.size()) != node.num_inputs()) {
      return Internal("gradient of " + node.Describe() + ": the rule returned " +
                      std::to_string(grad_inputs.size()) + " input gradients for " +
                      std::to_string(node.num_inputs()) + " inputs");
    }
    for (int i = 0; i < node.num_inputs(); ++i) {
      AF_RETURN_IF_ERROR(Queue(node, i, Gradient{grad_inputs[i], {}}));
    }
    return Status::OK();
  }

  const Graph& graph_;
  const Scope scope_;
  const std::vector<Output>& ys_;
  const std::vector<Output>& xs_;
  std::vector<EndpointKey> x_keys_;
  const int num_nodes_;
  int first_x_ = num_nodes_;  // the smallest node id of an x
  std::vector<bool> downstream_;
  std::vector<bool> needed_;
  std::map<EndpointKey, std::vector<Gradient>> pending_;
};

}  // namespace

namespace {

Status CheckGradientsArgs(const Scope& scope, const std::vector<Output>& ys,
                          const std::vector<Output>& xs, const std::vector<Output>& grad_ys) {
  if (!scope.ok()) return scope.status();
  const Graph& graph = *scope.graph();
  AF_RETURN_IF_ERROR(CheckOutputs(graph, ys, "ys"));
  AF_RETURN_IF_ERROR(CheckOutputs(graph, xs, "xs"));
  AF_RETURN_IF_ERROR(CheckOutputs(graph, grad_ys, "grad_ys"));
  if (!grad_ys.empty() && grad_ys.size() != ys.size()) {
    return InvalidArgument("Gradients: " + std::to_string(grad_ys.size()) + " grad_ys for " +
                           std::to_string(ys.size()) + " ys (give one per y, or none)");
  }
  for (size_t i = 0; i < ys.size(); ++i) {
    if (!IsFloating(ys[i].dtype())) {
      return InvalidArgument("Gradients: y '" + ys[i].name() + "' has dtype " +
                             DTypeName(ys[i].dtype()) + "; only float32/float64 can be "
                             "differentiated");
    }
    if (!grad_ys.empty() && grad_ys[i].dtype() != ys[i].dtype()) {
      return InvalidArgument("Gradients: grad_ys[" + std::to_string(i) + "] '" +
                             grad_ys[i].name() + "' has dtype " +
                             DTypeName(grad_ys[i].dtype()) + " but y '" + ys[i].name() +
                             "' has dtype " + DTypeName(ys[i].dtype()));
    }
  }
  return Status::OK();
}

}  // namespace

StatusOr<std::vector<Gradient>> GradientsWithSlices(const Scope& scope,
                                                    const std::vector<Output>& ys,
                                                    const std::vector<Output>& xs,
                                                    const std::vector<Output>& grad_ys) {
  AF_RETURN_IF_ERROR(CheckGradientsArgs(scope, ys, xs, grad_ys));
  if (xs.empty()) return std::vector<Gradient>();
  GradientBuilder builder(scope, ys, xs);
  return builder.Build(grad_ys, /*keep_slices=*/true);
}

StatusOr<std::vector<Output>> Gradients(const Scope& scope, const std::vector<Output>& ys,
                                        const std::vector<Output>& xs,
                                        const std::vector<Output>& grad_ys) {
  AF_RETURN_IF_ERROR(CheckGradientsArgs(scope, ys, xs, grad_ys));
  if (xs.empty()) return std::vector<Output>();
  GradientBuilder builder(scope, ys, xs);
  AF_ASSIGN_OR_RETURN(std::vector<Gradient> grads, builder.Build(grad_ys, /*keep_slices=*/false));
  std::vector<Output> dense;
  for (const Gradient& g : grads) dense.push_back(g.dense);
  return dense;
}

}  // namespace actorflow
