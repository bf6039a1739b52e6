// A float GEMM whose right operand is packed once and reused by many products: a
// pipeline's micro-batches multiply the same weight matrix M times per step, a few
// dozen rows at a time. OpenBLAS's sgemm packs the whole right operand on every call,
// a copy the size of the weights whatever the rows, so a 32-row product against a
// 2048 x 2048 matrix runs at about half the speed of a 256-row one; packing once per
// step and sharing the panels removes that copy from every product but the first.
//
// Panel layout of a right operand B [K, N]: ceil(N / 32) panels, panel p holding
// columns [32p, 32p + 32) of every row of B, row after row (K x 32 floats), the
// columns past N zero. The product reads a panel's rows in order, 32 columns at a
// time, into two 16-float vector registers.
//
// The products run on one thread (the calling device's), with AVX-512 where the CPU
// has it and portable loops elsewhere; both give the same sums up to float rounding.
#ifndef ACTORFLOW_KERNELS_CPU_PACKED_GEMM_H_
#define ACTORFLOW_KERNELS_CPU_PACKED_GEMM_H_

#include <cstdint>

namespace actorflow {
namespace cpu {

inline constexpr int64_t kPackedPanelColumns = 32;

// Panels of a right operand with n columns: ceil(n / 32).
inline int64_t PackedPanels(int64_t n) {
  return (n + kPackedPanelColumns - 1) / kPackedPanelColumns;
}

// Writes the panels of B [k, n] into `packed` (PackedPanels(n) * k * 32 floats). With
// `transposed`, `b` holds B's transpose, [n, k] row-major (a weight used as W^T).
void PackRightOperand(const float* b, int64_t k, int64_t n, bool transposed, float* packed);

// C [m, n] = A [m, k] x B, B packed by PackRightOperand; A's rows are `lda` floats
// apart, C's n. Every element of C is written (k = 0 gives zeros).
void PackedGemm(const float* a, int64_t m, int64_t k, int64_t lda, const float* packed,
                int64_t n, float* c);

// The same product with the portable loops whatever the CPU (to check one path
// against the other).
void PackedGemmPortable(const float* a, int64_t m, int64_t k, int64_t lda, const float* packed,
                        int64_t n, float* c);

// Whether PackedGemm uses the AVX-512 path on this CPU.
bool PackedGemmHasAvx512();

}  // namespace cpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CPU_PACKED_GEMM_H_
