// Builders of ExpandDims, Squeeze, Pack, Unpack, Split, Tile, OneHot, Select, StridedSlice (basics) and the causal mask.
#ifndef ACTORFLOW_GRAPH_SHAPE_OPS_H_
#define ACTORFLOW_GRAPH_SHAPE_OPS_H_

#include "graph/scope.h"

namespace actorflow {}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_SHAPE_OPS_H_
