// Symbolic automatic differentiation in TensorFlow's style: Gradients() adds to the
// graph the nodes that compute d(sum of ys)/d(x) for each x, built from one backward
// rule per differentiable op (all of them in graph/gradient_rules.cc).
//
//   Scope root = Scope::NewRootScope();
//   auto w = Variable(root.WithOpName("w"), Shape{784, 10}, DType::kFloat32);
//   auto loss = Mean(root, SparseSoftmaxCrossEntropyWithLogits(root, logits, labels).loss);
//   auto grads = Gradients(root, {loss}, {w});   // grads->at(0): float32 [784,10]
//
// What flows where:
// - Gradients flow backwards along data edges that carry float32/float64 tensors, and
//   only through nodes that lie between the xs and the ys. Ref inputs (Assign's
//   variable) and control edges carry none; integer and bool tensors carry none.
// - An op without a rule (comparisons, ArgMax, Shape, Fill, ZerosLike/OnesLike, random
//   ops, Assign, ...) stops the gradient: its inputs receive nothing from it.
// - Several gradients reaching one tensor are summed with Add.
// - Each rule's nodes are named "gradients/<node>_grad/..." and requested on the
//   forward node's device, so that placement keeps the backward pass beside the
//   forward pass.
// - Broadcasting and reductions are undone at run time (SumToShapeOf,
//   BroadcastToShapeOf), so shapes may be unknown when the graph is built.
//
// Thread safety: as Scope (one building thread per graph).
#ifndef ACTORFLOW_GRAPH_GRADIENTS_H_
#define ACTORFLOW_GRAPH_GRADIENTS_H_

#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/scope.h"
#include "graph/sparse_ops.h"
#include "graph/status.h"

namespace actorflow {

// Adds nodes computing d(sum of ys)/d(x) for each x, every one dense (a Gather's
// row gradient made dense; GradientsWithSlices keeps it sparse). grad_ys (optional) are the
// initial gradients of ys (default OnesLike(y)). For an x that no y depends on,
// the returned Output is invalid (node == nullptr), like TensorFlow's None.
//
// Every returned gradient has its x's dtype and, at run time, its x's shape. An
// integer or bool x gets an invalid Output (no gradient flows through integers).
// Errors: InvalidArgument for an invalid Output in ys/xs/grad_ys, a non-float y,
// grad_ys of the wrong count or dtype, or an Output from another graph; a rule's error
// (e.g. Unimplemented for a gradient arriving at a cross-entropy's backprop output),
// naming the node; or the scope's first error when it has already failed.
StatusOr<std::vector<Output>> Gradients(const Scope& scope, const std::vector<Output>& ys,
                                        const std::vector<Output>& xs,
                                        const std::vector<Output>& grad_ys = {});

// The gradient of one x, as GradientsWithSlices returns it: dense (an Output of x's
// dtype and runtime shape) or, for a tensor that reaches the ys only through the
// params of Gather ops (and Identity), IndexedSlices naming the rows of x it touches.
// At most one of the two is valid; neither when no y depends on x.
struct Gradient {
  Output dense;
  IndexedSlices slices;
  bool valid() const { return dense.valid() || slices.valid(); }
  bool sparse() const { return slices.valid(); }
};

// Gradients() that keeps row gradients sparse, as TensorFlow 1.x's IndexedSlices: the
// gradient of a Gather's params is the gathered rows' gradient with their ids, never
// a dense tensor of the params' shape. Slices pass through Identity; several slices
// reaching one tensor are concatenated (rows and ids, ids as int64 when their dtypes
// differ). Where slices meet a dense gradient, or reach an input of any other op, they
// are made dense (DenseFromSlices) and summed. Same arguments and errors as Gradients().
StatusOr<std::vector<Gradient>> GradientsWithSlices(const Scope& scope,
                                                    const std::vector<Output>& ys,
                                                    const std::vector<Output>& xs,
                                                    const std::vector<Output>& grad_ys = {});

// A backward rule. `op` is the forward node; grad_outputs has one entry per output of
// op, the gradient of the sum of ys with respect to that output (an invalid Output
// when none flows to it). On return grad_inputs has one entry per data input of op
// (invalid where the input gets no gradient, e.g. an integer index), each with the
// input's dtype and runtime shape. Nodes are built in `scope` (the rule's name scope
// and device); a builder error recorded in the scope is picked up by the caller.
using GradientFn = std::function<Status(const Scope& scope, const Node& op,
                                        const std::vector<Output>& grad_outputs,
                                        std::vector<Output>* grad_inputs)>;

// The rule of `op`, or nullptr when the op is not differentiable.
const GradientFn* FindGradientFn(const std::string& op);

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_GRADIENTS_H_
