// PackedGemm's blocking: the depth is cut into blocks of 256 so that a panel's block
// (256 x 32 floats, 32 KiB) stays in the core's L1 cache while every 8-row block of A
// multiplies it; C's 8 x 32 tile lives in 16 vector registers over a depth block and
// is added to memory once per block.
#include "kernels/cpu/packed_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace actorflow {
namespace cpu {
namespace {

constexpr int64_t kPanel = kPackedPanelColumns;
constexpr int64_t kDepthBlock = 256;
constexpr int kRowBlock = 8;

// C's tile [rows, columns <= 32] (+)= A's rows [rows, kc] x a panel's depth block.
// `a` is the rows' depth block interleaved, [kc, rows]: A's rows lie a multiple of
// 4 KiB apart in a weight-sized product (2048 floats), so reading 8 of them side by
// side would map them onto one L1 set and evict each other and the panel.
// `next`, when not null, is the depth block the next call will read (kc x 32 floats):
// the block brings it into L2 while it computes (a weight matrix lies in L3 or memory,
// and the hardware prefetcher stops at the jump from one panel to the next).
using BlockFn = void (*)(int64_t kc, const float* a, const float* panel, float* c,
                         int64_t ldc, bool accumulate, int columns, const float* next);

template <int kRows>
__attribute__((target("avx512f"))) void Avx512Block(int64_t kc, const float* a,
                                                    const float* panel, float* c, int64_t ldc,
                                                    bool accumulate, int columns,
                                                    const float* next) {
  __m512 lo[kRows];
  __m512 hi[kRows];
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
    lo[i] = _mm512_setzero_ps();
    hi[i] = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < kc; ++p) {
    if (next != nullptr) {
      _mm_prefetch(reinterpret_cast<const char*>(next + p * kPanel), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(next + p * kPanel + 16), _MM_HINT_T1);
    }
    const __m512 b0 = _mm512_loadu_ps(panel + p * kPanel);
    const __m512 b1 = _mm512_loadu_ps(panel + p * kPanel + 16);
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) {
      const __m512 ai = _mm512_set1_ps(a[p * kRows + i]);
      lo[i] = _mm512_fmadd_ps(ai, b0, lo[i]);
      hi[i] = _mm512_fmadd_ps(ai, b1, hi[i]);
    }
  }
  const __mmask16 low_mask =
      columns >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << columns) - 1);
  const __mmask16 high_mask =
      columns >= 32   ? __mmask16{0xFFFF}
      : columns <= 16 ? __mmask16{0}
                      : static_cast<__mmask16>((1u << (columns - 16)) - 1);
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
    float* row = c + i * ldc;
    if (accumulate) {
      lo[i] = _mm512_add_ps(lo[i], _mm512_maskz_loadu_ps(low_mask, row));
      hi[i] = _mm512_add_ps(hi[i], _mm512_maskz_loadu_ps(high_mask, row + 16));
    }
    _mm512_mask_storeu_ps(row, low_mask, lo[i]);
    _mm512_mask_storeu_ps(row + 16, high_mask, hi[i]);
  }
}

template <int kRows>
void PortableBlock(int64_t kc, const float* a, const float* panel, float* c, int64_t ldc,
                   bool accumulate, int columns, const float* /*next*/) {
  for (int i = 0; i < kRows; ++i) {
    float sums[kPanel] = {};
    for (int64_t p = 0; p < kc; ++p) {
      const float ai = a[p * kRows + i];
      const float* b = panel + p * kPanel;
      for (int j = 0; j < kPanel; ++j) sums[j] += ai * b[j];
    }
    float* row = c + i * ldc;
    for (int j = 0; j < columns; ++j) row[j] = accumulate ? row[j] + sums[j] : sums[j];
  }
}

template <int kRows>
struct Avx512Of {
  static constexpr BlockFn fn = &Avx512Block<kRows>;
};
template <int kRows>
struct PortableOf {
  static constexpr BlockFn fn = &PortableBlock<kRows>;
};

// blocks[r] handles r + 1 rows.
template <template <int> class Family>
constexpr BlockFn kBlocks[kRowBlock] = {Family<1>::fn, Family<2>::fn, Family<3>::fn,
                                        Family<4>::fn, Family<5>::fn, Family<6>::fn,
                                        Family<7>::fn, Family<8>::fn};

void Multiply(const BlockFn* blocks, const float* a, int64_t m, int64_t k, int64_t lda,
              const float* packed, int64_t n, float* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::memset(c, 0, sizeof(float) * static_cast<size_t>(m * n));
    return;
  }
  const int64_t panels = PackedPanels(n);
  // A's depth block, each 8-row block interleaved ([kc, rows]), one after the other.
  std::vector<float> a_block(static_cast<size_t>(m * std::min(kDepthBlock, k)));
  for (int64_t k0 = 0; k0 < k; k0 += kDepthBlock) {
    const int64_t kc = std::min(kDepthBlock, k - k0);
    for (int64_t i = 0; i < m; i += kRowBlock) {
      const int64_t rows = std::min<int64_t>(kRowBlock, m - i);
      float* dst = a_block.data() + i * kc;
      for (int64_t r = 0; r < rows; ++r) {
        const float* src = a + (i + r) * lda + k0;
        for (int64_t p = 0; p < kc; ++p) dst[p * rows + r] = src[p];
      }
    }
    for (int64_t p = 0; p < panels; ++p) {
      const float* panel = packed + (p * k + k0) * kPanel;
      const float* next = p + 1 < panels ? panel + k * kPanel : nullptr;
      const int columns = static_cast<int>(std::min(kPanel, n - p * kPanel));
      for (int64_t i = 0; i < m; i += kRowBlock) {
        const int rows = static_cast<int>(std::min<int64_t>(kRowBlock, m - i));
        blocks[rows - 1](kc, a_block.data() + i * kc, panel, c + i * n + p * kPanel, n, k0 > 0,
                         columns, i == 0 ? next : nullptr);
      }
    }
  }
}

// dst's 8 rows (dst_stride apart) = the columns of src's 8 x 8 block (rows
// src_stride apart).
__attribute__((target("avx"))) void Transpose8x8(const float* src, int64_t src_stride,
                                                 float* dst, int64_t dst_stride) {
  __m256 row[8];
  for (int i = 0; i < 8; ++i) row[i] = _mm256_loadu_ps(src + i * src_stride);
  __m256 pairs[8];  // rows 2i and 2i + 1 interleaved, low and high halves
  for (int i = 0; i < 4; ++i) {
    pairs[2 * i] = _mm256_unpacklo_ps(row[2 * i], row[2 * i + 1]);
    pairs[2 * i + 1] = _mm256_unpackhi_ps(row[2 * i], row[2 * i + 1]);
  }
  __m256 quads[8];  // four rows' elements 0-1 / 2-3 (of each 128-bit lane)
  for (int half = 0; half < 2; ++half) {
    const int a = 4 * half;  // pairs of rows 0-3, then 4-7
    quads[a] = _mm256_shuffle_ps(pairs[a], pairs[a + 2], _MM_SHUFFLE(1, 0, 1, 0));
    quads[a + 1] = _mm256_shuffle_ps(pairs[a], pairs[a + 2], _MM_SHUFFLE(3, 2, 3, 2));
    quads[a + 2] = _mm256_shuffle_ps(pairs[a + 1], pairs[a + 3], _MM_SHUFFLE(1, 0, 1, 0));
    quads[a + 3] = _mm256_shuffle_ps(pairs[a + 1], pairs[a + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * dst_stride, _mm256_permute2f128_ps(quads[i], quads[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * dst_stride,
                     _mm256_permute2f128_ps(quads[i], quads[i + 4], 0x31));
  }
}

}  // namespace

void PackRightOperand(const float* b, int64_t k, int64_t n, bool transposed, float* packed) {
  const int64_t panels = PackedPanels(n);
  const int64_t tail = n - (panels - 1) * kPanel;  // the last panel's columns
  if (tail < kPanel) {
    float* last = packed + (panels - 1) * k * kPanel;
    std::fill(last, last + k * kPanel, 0.0f);
  }
  if (!transposed) {
    // Row after row of B (read in order), each cut into its panels' rows.
    for (int64_t r = 0; r < k; ++r) {
      const float* row = b + r * n;
      for (int64_t p = 0; p < panels; ++p) {
        const int64_t columns = p + 1 < panels ? kPanel : tail;
        std::memcpy(packed + (p * k + r) * kPanel, row + p * kPanel,
                    sizeof(float) * static_cast<size_t>(columns));
      }
    }
    return;
  }
  // B^T is [n, k]: a panel's column j is row 32p + j of `b`. 128 rows of a panel at a
  // time (16 KiB, in L1) are filled from its 32 rows of `b`, each read in order, in
  // 8 x 8 blocks transposed in registers where the CPU has AVX.
  constexpr int64_t kRowTile = 128;
  static const bool avx = __builtin_cpu_supports("avx");  // asked once per process
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t columns = p + 1 < panels ? kPanel : tail;
    float* out = packed + p * k * kPanel;
    for (int64_t r0 = 0; r0 < k; r0 += kRowTile) {
      const int64_t r1 = std::min(k, r0 + kRowTile);
      int64_t j = 0;
      for (; avx && j + 8 <= columns; j += 8) {
        const float* src = b + (p * kPanel + j) * k;
        int64_t r = r0;
        for (; r + 8 <= r1; r += 8) Transpose8x8(src + r, k, out + r * kPanel + j, kPanel);
        for (; r < r1; ++r) {
          for (int64_t jj = 0; jj < 8; ++jj) out[r * kPanel + j + jj] = src[jj * k + r];
        }
      }
      for (; j < columns; ++j) {
        const float* src = b + (p * kPanel + j) * k;
        for (int64_t r = r0; r < r1; ++r) out[r * kPanel + j] = src[r];
      }
    }
  }
}

bool PackedGemmHasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

void PackedGemm(const float* a, int64_t m, int64_t k, int64_t lda, const float* packed,
                int64_t n, float* c) {
  Multiply(PackedGemmHasAvx512() ? kBlocks<Avx512Of> : kBlocks<PortableOf>, a, m, k, lda,
           packed, n, c);
}

void PackedGemmPortable(const float* a, int64_t m, int64_t k, int64_t lda, const float* packed,
                        int64_t n, float* c) {
  Multiply(kBlocks<PortableOf>, a, m, k, lda, packed, n, c);
}

}  // namespace cpu
}  // namespace actorflow
