// Builders of BatchMatMul, LayerNorm, Gelu and Softmax over the last axis of any rank.
#ifndef ACTORFLOW_GRAPH_MATH_OPS_H_
#define ACTORFLOW_GRAPH_MATH_OPS_H_

#include "graph/scope.h"

namespace actorflow {}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_MATH_OPS_H_
