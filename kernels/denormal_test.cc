// Kernels run with denormal floats flushed to zero (kernels/denormal.h), and the
// thread that ran them gets its own floating-point mode back.
#include "kernels/denormal.h"

#include <gtest/gtest.h>

#include <cfenv>

#include "graph/ops.h"
#include "graph/scope.h"
#include "kernels/direct_session.h"

namespace actorflow {
namespace {

// 1e-30 * 1e-10 = 1e-40, below float's smallest normal number (1.18e-38).
constexpr float kSmall = 1e-30f;
constexpr float kTiny = 1e-10f;
constexpr float kDenormal = 1e-40f;

// Computed at run time, in the calling thread's mode.
float Product(float a, float b) {
  volatile float x = a;
  volatile float y = b;
  return x * y;
}

float Sum(float a, float b) {
  volatile float x = a;
  volatile float y = b;
  return x + y;
}

TEST(ScopedFlushDenormalTest, FlushesResultsAndInputsOnlyWhileInScope) {
  ASSERT_GT(Product(kSmall, kTiny), 0.0f) << "this thread flushes denormals before the test";
  {
    ScopedFlushDenormal flush;
    EXPECT_EQ(Product(kSmall, kTiny), 0.0f);  // a denormal result becomes zero
    EXPECT_EQ(Sum(kDenormal, 0.0f), 0.0f);    // a denormal input counts as zero
    {
      ScopedFlushDenormal inner;
      EXPECT_EQ(Product(kSmall, kTiny), 0.0f);
    }
    // The inner scope found the mode set and left it so.
    EXPECT_EQ(Product(kSmall, kTiny), 0.0f);
  }
  EXPECT_GT(Product(kSmall, kTiny), 0.0f);
  EXPECT_GT(Sum(kDenormal, 0.0f), 0.0f);
}

TEST(ScopedFlushDenormalTest, KeepsTheExceptionFlagsRaisedInside) {
  std::feclearexcept(FE_ALL_EXCEPT);
  {
    ScopedFlushDenormal flush;
    volatile float big = 1e38f;
    volatile float overflowed = big * big;
    (void)overflowed;
  }
  EXPECT_TRUE(std::fetestexcept(FE_OVERFLOW));
  std::feclearexcept(FE_ALL_EXCEPT);
}

TEST(ScopedFlushDenormalTest, AStepFlushesItsKernelsResultsAndNotItsCallers) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32);
  auto y = Placeholder(root.WithOpName("y"), DType::kFloat32);
  Mul(root.WithOpName("product"), x, y);
  Add(root.WithOpName("sum"), x, y);
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = NewDirectSession(root.graph()).value();
  std::vector<Tensor> out;

  ASSERT_TRUE(session->Run({{"x", Tensor::Scalar(kSmall)}, {"y", Tensor::Scalar(kTiny)}},
                           {"product"}, {}, &out)
                  .ok());
  EXPECT_EQ(out[0].data<float>()[0], 0.0f);
  ASSERT_TRUE(session->Run({{"x", Tensor::Scalar(kDenormal)}, {"y", Tensor::Scalar(0.0f)}},
                           {"sum"}, {}, &out)
                  .ok());
  EXPECT_EQ(out[0].data<float>()[0], 0.0f);
  // A fed value a step only passes on keeps its bits: only arithmetic flushes.
  ASSERT_TRUE(session->Run({{"x", Tensor::Scalar(kDenormal)}}, {"x"}, {}, &out).ok());
  EXPECT_GT(out[0].data<float>()[0], 0.0f);

  // The caller's thread computes as before the step.
  EXPECT_GT(Product(kSmall, kTiny), 0.0f);
}

}  // namespace
}  // namespace actorflow
