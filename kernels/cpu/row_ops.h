// Loops over one contiguous row, shared by the reduction, softmax and cross-entropy
// kernels: sum, maximum and shifted exponentials. Reductions run in independent
// lanes so that the compiler can keep several vector accumulators in flight (a single
// running accumulator serializes on the add latency and cannot be vectorized without
// reassociation).
//
// Thread safety: pure functions.
#ifndef ACTORFLOW_KERNELS_CPU_ROW_OPS_H_
#define ACTORFLOW_KERNELS_CPU_ROW_OPS_H_

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/fast_math.h"

namespace actorflow {
namespace cpu {

// The sum of p [n]; 0 when n = 0. Integers wrap. Floats are summed in lanes over
// blocks of 4096 elements and the block totals in double, which keeps the error of
// long rows near that of a pairwise sum.
template <typename T>
T RowSum(const T* __restrict p, int64_t n) {
  constexpr int kLanes = 8;
  constexpr int64_t kBlock = 4096;
  using Total = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  if (n < kLanes) {
    // A row narrower than the lanes (a softmax over a few classes) would fill only
    // lane 0 anyway: the same sum, without the lanes' setup and reduction.
    T lane = 0;
    for (int64_t i = 0; i < n; ++i) lane = WrapAdd(lane, p[i]);
    return lane;
  }
  Total total = 0;
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t end = start + kBlock < n ? start + kBlock : n;
    T lanes[kLanes] = {};
    int64_t i = start;
    for (; i + kLanes <= end; i += kLanes) {
      for (int l = 0; l < kLanes; ++l) lanes[l] = WrapAdd(lanes[l], p[i + l]);
    }
    for (; i < end; ++i) lanes[0] = WrapAdd(lanes[0], p[i]);
    Total block = 0;
    for (int l = 0; l < kLanes; ++l) block = WrapAdd(block, static_cast<Total>(lanes[l]));
    total = WrapAdd(total, block);
  }
  return static_cast<T>(total);
}

// The maximum of the floats p [n]; -inf when n = 0. NaNs are skipped (a softmax row
// with a NaN is NaN either way, through exp(NaN - max)).
template <typename T>
T RowMax(const T* __restrict p, int64_t n) {
  constexpr int kLanes = 16;
  if (n < kLanes) {  // as RowSum: lane 0 alone, the same maximum
    T m = -INFINITY;
    for (int64_t i = 0; i < n; ++i) m = p[i] > m ? p[i] : m;
    return m;
  }
  T lanes[kLanes];
  for (int l = 0; l < kLanes; ++l) lanes[l] = -INFINITY;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    // Kept as a loop: GCC vectorizes it, but not the select chain that full unrolling
    // would leave.
#pragma GCC unroll 1
    for (int l = 0; l < kLanes; ++l) lanes[l] = p[i + l] > lanes[l] ? p[i + l] : lanes[l];
  }
  for (; i < n; ++i) lanes[0] = p[i] > lanes[0] ? p[i] : lanes[0];
  T m = lanes[0];
  for (int l = 1; l < kLanes; ++l) m = lanes[l] > m ? lanes[l] : m;
  return m;
}

// out[j] = exp(in[j] - shift) for j < n; float32 uses the vectorizable FastExp.
template <typename T>
void ExpShifted(const T* __restrict in, T shift, T* __restrict out, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    for (int64_t j = 0; j < n; ++j) out[j] = FastExp(in[j] - shift);
  } else {
    for (int64_t j = 0; j < n; ++j) out[j] = std::exp(in[j] - shift);
  }
}

}  // namespace cpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CPU_ROW_OPS_H_
