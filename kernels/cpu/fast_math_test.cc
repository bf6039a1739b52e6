#include "kernels/cpu/fast_math.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

namespace actorflow {
namespace cpu {
namespace {

// Calls fn(x) for x from lo to hi in steps of about 1e-4 * |x| (at least 1e-7), which
// covers every binade densely.
template <typename Fn>
void Sweep(float lo, float hi, Fn&& fn) {
  for (float x = lo; x < hi; x += std::fmax(std::fabs(x) * 1e-4f, 1e-7f)) fn(x);
}

TEST(FastExpTest, WithinOneUlpOfDoublePrecisionExpWhereTheResultIsNormal) {
  double worst = 0;
  Sweep(-87.3f, 88.72f, [&](float x) {
    const double want = std::exp(static_cast<double>(x));
    worst = std::fmax(worst, std::fabs(FastExp(x) - want) / want);
  });
  EXPECT_LT(worst, FLT_EPSILON);
}

TEST(FastExpTest, DenormalResultsAreWithinTheSmallestDenormal) {
  Sweep(-104.0f, -87.3f, [&](float x) {
    const double want = std::exp(static_cast<double>(x));
    ASSERT_LE(std::fabs(FastExp(x) - want), 1.5e-45) << "x = " << x;
  });
}

TEST(FastExpTest, SpecialValues) {
  EXPECT_EQ(FastExp(0.0f), 1.0f);
  EXPECT_EQ(FastExp(INFINITY), INFINITY);
  EXPECT_EQ(FastExp(89.0f), INFINITY);
  EXPECT_EQ(FastExp(-INFINITY), 0.0f);
  EXPECT_EQ(FastExp(-200.0f), 0.0f);
  EXPECT_TRUE(std::isnan(FastExp(NAN)));
  EXPECT_TRUE(std::isfinite(FastExp(88.72f)));
}

TEST(FastTanhTest, WithinAFewUlpOfDoublePrecisionTanh) {
  double worst = 0;
  Sweep(-12.0f, 12.0f, [&](float x) {
    const double want = std::tanh(static_cast<double>(x));
    const double err = std::fabs(FastTanh(x) - want);
    worst = std::fmax(worst, want == 0 ? err : err / std::fabs(want));
  });
  EXPECT_LT(worst, 4 * FLT_EPSILON);
}

TEST(FastTanhTest, SpecialValuesAndOddSymmetry) {
  EXPECT_EQ(FastTanh(0.0f), 0.0f);
  EXPECT_EQ(FastTanh(INFINITY), 1.0f);
  EXPECT_EQ(FastTanh(-INFINITY), -1.0f);
  EXPECT_EQ(FastTanh(1e-30f), 1e-30f);
  EXPECT_TRUE(std::isnan(FastTanh(NAN)));
  for (float x : {0.001f, 0.3f, 1.0f, 2.5f, 7.0f}) EXPECT_EQ(FastTanh(-x), -FastTanh(x));
}

}  // namespace
}  // namespace cpu
}  // namespace actorflow
