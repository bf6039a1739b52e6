// CPU kernels of ExpandDims, Squeeze, Pack, Unpack, Split, Tile, OneHot, Select, StridedSlice (basics) and the causal mask.
namespace actorflow {
namespace cpu {}  // namespace cpu
}  // namespace actorflow
