// What sequence_layers.cc and attention_layers.cc share (not part of the library's
// interface): variable creation in layer_classes.cc's style and the error texts that
// name a layer and the shapes it was given.
#ifndef ACTORFLOW_TRAINING_ESTIMATORS_SEQUENCE_LAYERS_INTERNAL_H_
#define ACTORFLOW_TRAINING_ESTIMATORS_SEQUENCE_LAYERS_INTERNAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "graph/status.h"

namespace actorflow {
namespace layers {
namespace sequence_internal {

// A float32 variable `name` of the layer, appended to `variables`: truncated normal
// with `stddev` (seeded) when stddev > 0, else filled with `fill`.
StatusOr<Output> LayerVariable(const Scope& scope, const std::string& name, const Shape& shape,
                               double stddev, int64_t seed, std::vector<Output>* variables,
                               float fill = 0.0f);

// "'x:0' (float32 [?,3])": how errors name an input.
std::string Describe(const Output& x);

// OK when a later call gives the inner dim the layer was built for; InvalidArgument
// naming the layer and both dims otherwise.
Status CheckSameInput(const std::string& layer, int64_t built_for, int64_t given);

}  // namespace sequence_internal
}  // namespace layers
}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_ESTIMATORS_SEQUENCE_LAYERS_INTERNAL_H_
