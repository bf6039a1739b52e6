// The backward rules that live outside graph/gradient_rules.cc, declared for its rule
// table (see graph/gradients.h for what a rule must do). Internal to //graph (listed
// in its srcs, not its hdrs).
//
// Thread safety: as Scope (the rules build nodes in one scope).
#ifndef ACTORFLOW_GRAPH_GRADIENT_RULES_INTERNAL_H_
#define ACTORFLOW_GRAPH_GRADIENT_RULES_INTERNAL_H_

#include <vector>

#include "graph/graph.h"
#include "graph/scope.h"
#include "graph/status.h"

namespace actorflow {
namespace gradient_rules_internal {

// graph/gradient_rules_norm.cc: FusedBatchNorm (training and inference) and Dropout.
Status FusedBatchNormGradRule(const Scope& s, const Node& op, const std::vector<Output>& dy,
                              std::vector<Output>* dx);
Status DropoutGradRule(const Scope& s, const Node& op, const std::vector<Output>& dy,
                       std::vector<Output>* dx);

}  // namespace gradient_rules_internal
}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_GRADIENT_RULES_INTERNAL_H_
