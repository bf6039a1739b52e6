// Single-precision exp and tanh written to be auto-vectorized: branch-free, no calls,
// only arithmetic, float<->int conversions, shifts and selects. The libm versions are
// scalar calls, which makes Exp, Sigmoid, Tanh, Softmax and the cross-entropies several
// times slower than the memory traffic they need.
//
// Accuracy (checked against double-precision libm in fast_math_test.cc): FastExp within
// a few ulp where the result is a normal float; FastTanh within a few ulp as well.
// Special values: FastExp(NaN) = NaN, FastExp(x) = +inf above log(FLT_MAX),
// FastExp(-inf) = 0; FastTanh(NaN) = NaN, FastTanh(+-inf) = +-1.
//
// GCC vectorizes the selects below only with -fno-trapping-math (set for
// //kernels:cpu_kernels); without it the results are the same, only scalar.
//
// Thread safety: pure functions.
#ifndef ACTORFLOW_KERNELS_CPU_FAST_MATH_H_
#define ACTORFLOW_KERNELS_CPU_FAST_MATH_H_

#include <cmath>
#include <cstdint>
#include <cstring>

namespace actorflow {
namespace cpu {

inline float BitsToFloat(int32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// exp(x) = 2^n * exp(r) with n = round(x / ln 2) and |r| <= ln(2)/2; exp(r) from a
// degree-6 polynomial (Cephes expf), ln 2 split in two so that r is exact. 2^n is
// applied as two factors 2^(n/2) * 2^(n - n/2), each a normal float, so results near
// FLT_MAX and in the denormal range come out right.
inline float FastExp(float x) {
  constexpr float kMaxX = 88.72283905206835f;  // log(FLT_MAX)
  constexpr float kMinX = -104.0f;             // exp(kMinX) rounds to 0
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  float xc = x < kMaxX ? x : kMaxX;      // NaN becomes kMaxX here, and NaN again below
  xc = xc > kMinX ? xc : kMinX;
  const float n = (xc * kLog2e + kRound) - kRound;
  const float r = (xc - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t ni = static_cast<int32_t>(n);  // in [-150, 128]
  const int32_t n1 = ni >> 1;
  const int32_t n2 = ni - n1;
  const float y = p * BitsToFloat((n1 + 127) << 23) * BitsToFloat((n2 + 127) << 23);
  const float out = x > kMaxX ? __builtin_inff() : y;
  return x != x ? x : out;
}

// tanh(x) as an odd/even rational function of x on [-9, 9] (beyond which tanh rounds to
// +-1 in single precision); the same approximation as Eigen's fast tanh.
inline float FastTanh(float x) {
  const float xc = x > 9.0f ? 9.0f : (x < -9.0f ? -9.0f : x);
  const float x2 = xc * xc;
  float p = -2.76076847742355e-16f;
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  p = p * xc;
  float q = 1.19825839466702e-06f;
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  const float ratio = p / q;
  // tanh(x) = x to single precision for tiny |x|; NaN stays NaN through the ratio.
  return std::fabs(xc) < 0.0004f ? xc : ratio;
}

}  // namespace cpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CPU_FAST_MATH_H_
