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
// Nodes added by the rules get ids above the original graph's and are never visited.
#include "graph/gradients.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "graph/ops.h"

namespace actorflow {
namespace {

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
  // and returns the summed gradient of each x.
  StatusOr<std::vector<Output>> Build(const std::vector<Output>& grad_ys) {
    for (size_t i = 0; i < ys_.size(); ++i) {
      const Output& y = ys_[i];
      Output seed = grad_ys.empty()
                        ? OnesLike(NodeScope(*y.node, "ones"), y)
                        : grad_ys[i];
      if (!scope_.ok()) return scope_.status();
      pending_[KeyOf(y)].push_back(seed);
    }
    MarkBetween();
    for (int id = num_nodes_ - 1; id >= first_x_; --id) {
      if (!downstream_[id] || !needed_[id]) continue;
      AF_RETURN_IF_ERROR(Backprop(*graph_.node(id)));
    }
    std::vector<Output> result;
    for (const Output& x : xs_) {
      if (!IsFloating(x.dtype())) {
        result.emplace_back();
        continue;
      }
      AF_ASSIGN_OR_RETURN(Output g, SummedGradient(KeyOf(x)));
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

  // The sum of the gradients queued for an endpoint (invalid when none); the sum
  // replaces the queue so that it is built once.
  StatusOr<Output> SummedGradient(const EndpointKey& key) {
    auto it = pending_.find(key);
    if (it == pending_.end() || it->second.empty()) return Output();
    std::vector<Output>& grads = it->second;
    if (grads.size() > 1) {
      const Scope s = NodeScope(*graph_.node(key.first), "grad");
      Output sum = grads[0];
      for (size_t i = 1; i < grads.size(); ++i) sum = Add(s, sum, grads[i]);
      if (!s.ok()) return s.status();
      grads = {sum};
    }
    return grads[0];
  }

  Status Backprop(const Node& node) {
    std::vector<Output> grad_outputs;
    bool any = false;
    for (int k = 0; k < node.num_outputs(); ++k) {
      AF_ASSIGN_OR_RETURN(Output g, SummedGradient({node.id(), k}));
      any = any || g.valid();
      grad_outputs.push_back(g);
    }
    if (!any) return Status::OK();
    const GradientFn* rule = FindGradientFn(node.op());
    if (rule == nullptr) return Status::OK();  // not differentiable: the gradient stops
    std::vector<Output> grad_inputs(node.num_inputs());
    const Scope s = NodeScope(node, "grad");
    Status status = (*rule)(s, node, grad_outputs, &grad_inputs);
    if (status.ok()) status = s.status();
    if (!status.ok()) return status.WithContext("gradient of " + node.Describe());
    if (static_cast<int>(grad_inputs.size()) != node.num_inputs()) {
      return Internal("gradient of " + node.Describe() + ": the rule returned " +
                      std::to_string(grad_inputs.size()) + " input gradients for " +
                      std::to_string(node.num_inputs()) + " inputs");
    }
    for (int i = 0; i < node.num_inputs(); ++i) {
      const Output& g = grad_inputs[i];
      if (!g.valid() || !CarriesGradient(node, i) || !Relevant(node.input(i))) continue;
      const Endpoint& e = node.input(i);
      if (g.dtype() != e.node->output_dtype(e.index)) {
        return Internal("gradient of " + node.Describe() + ": input " + std::to_string(i) +
                        " got a " + DTypeName(g.dtype()) + " gradient for a " +
                        DTypeName(e.node->output_dtype(e.index)) + " input");
      }
      pending_[KeyOf(e)].push_back(g);
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
  std::map<EndpointKey, std::vector<Output>> pending_;
};

}  // namespace

StatusOr<std::vector<Output>> Gradients(const Scope& scope, const std::vector<Output>& ys,
                                        const std::vector<Output>& xs,
                                        const std::vector<Output>& grad_ys) {
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
  if (xs.empty()) return std::vector<Output>();
  GradientBuilder builder(scope, ys, xs);
  return builder.Build(grad_ys);
}

}  // namespace actorflow
