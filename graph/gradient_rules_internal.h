// The backward rules that live outside graph/gradient_rules.cc, declared for its rule
// table (see graph/gradients.h for what a rule must do). Internal to //graph (listed
// in its srcs, not its hdrs).
//
// Thread safety: as Scope (the rules build nodes in one scope).
#ifndef ACTORFLOW_GRAPH_GRADIENT_RULES_INTERNAL_H_
#define ACTORFLOW_GRAPH_GRADIENT_RULES_INTERNAL_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/gradients.h"
#include "graph/graph.h"
#include "graph/scope.h"
#include "graph/sparse_ops.h"
#include "graph/status.h"

namespace actorflow {
namespace gradient_rules_internal {

// The rules' shorthands: input i and output k of `op`, and a scalar Const of `dtype`
// (literals would be float32/float64 by C++ type).
inline Output In(const Node& op, int i) { return Output(op.input(i).node, op.input(i).index); }
inline Output Out(const Node& op, int k = 0) { return Output(&op, k); }
Output Scalar(const Scope& s, double value, DType dtype);
// g (an output's gradient, in the output's shape) summed down to x's shape; g itself
// when both shapes are the same at build time (the rule of broadcasting binary ops).
Output Unbroadcast(const Scope& s, const Output& g, const Output& x);

// graph/gradient_rules_norm.cc: FusedBatchNorm (training and inference) and Dropout.
Status FusedBatchNormGradRule(const Scope& s, const Node& op, const std::vector<Output>& dy,
                              std::vector<Output>* dx);
Status DropoutGradRule(const Scope& s, const Node& op, const std::vector<Output>& dy,
                       std::vector<Output>* dx);

// graph/gradient_rules_sparse.cc: Gather (dense: its row gradient made dense),
// UnsortedSegmentSum and DynamicStitch.
Status GatherGradRule(const Scope& s, const Node& op, const std::vector<Output>& dy,
                      std::vector<Output>* dx);
Status UnsortedSegmentSumGradRule(const Scope& s, const Node& op,
                                  const std::vector<Output>& dy, std::vector<Output>* dx);
Status DynamicStitchGradRule(const Scope& s, const Node& op, const std::vector<Output>& dy,
                             std::vector<Output>* dx);

// A rule whose gradient of input 0 is IndexedSlices (the rows it touches) and whose
// other inputs get none: `dy` is the gradient of output 0.
using SparseGradientFn = std::function<Status(const Scope& s, const Node& op,
                                              const Output& dy, IndexedSlices* dx0)>;
// Gather's rule, or nullptr for an op without a sparse rule.
const SparseGradientFn* FindSparseGradientFn(const std::string& op);

// The sequence models' rules, each file adding its ops' rules to the table:
// graph/gradient_rules_shape.cc, gradient_rules_math.cc and gradient_rules_rnn.cc.
void AddShapeGradientRules(std::map<std::string, GradientFn>* table);
void AddMathGradientRules(std::map<std::string, GradientFn>* table);
void AddRnnGradientRules(std::map<std::string, GradientFn>* table);

}  // namespace gradient_rules_internal
}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_GRADIENT_RULES_INTERNAL_H_
