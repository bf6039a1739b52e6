// CPU kernels of BatchMatMul, LayerNorm, Gelu and Softmax over the last axis of any rank.
namespace actorflow {
namespace cpu {}  // namespace cpu
}  // namespace actorflow
