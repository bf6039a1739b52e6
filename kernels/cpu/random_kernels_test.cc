#include "kernels/cpu/random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/tensor.h"
#include "kernels/kernel.h"
#include "kernels/resource.h"

namespace actorflow {
namespace cpu {
namespace {

TEST(RandomStreamTest, SameSeedGivesTheSameSequenceAndOtherSeedsDiffer) {
  RandomStream a(42), b(42), c(43);
  int differing = 0;
  for (int i = 0; i < 100; ++i) {
    const double va = a.UniformDouble();
    EXPECT_EQ(va, b.UniformDouble());
    differing += va != c.UniformDouble();
  }
  EXPECT_GT(differing, 90);
}

TEST(RandomStreamTest, UniformFloatIsInUnitIntervalOnA24BitGrid) {
  RandomStream s(7);
  for (int i = 0; i < 10000; ++i) {
    const float u = s.UniformFloat();
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    const double scaled = static_cast<double>(u) * (1 << 24);
    ASSERT_EQ(scaled, std::floor(scaled));
  }
}

// ---- kernels ----

struct Moments {
  double mean = 0;
  double stddev = 0;
  double min = INFINITY;
  double max = -INFINITY;
};

Moments ComputeMoments(const Tensor& t) {
  Moments m;
  const int64_t n = t.NumElements();
  for (int64_t i = 0; i < n; ++i) m.mean += t.ElementAsDouble(i);
  m.mean /= n;
  for (int64_t i = 0; i < n; ++i) {
    const double v = t.ElementAsDouble(i);
    m.stddev += (v - m.mean) * (v - m.mean);
    m.min = std::min(m.min, v);
    m.max = std::max(m.max, v);
  }
  m.stddev = std::sqrt(m.stddev / n);
  return m;
}

class RandomKernelTest : public ::testing::Test {
 protected:
  const Node* AddRandom(const std::string& op, DType dtype, Shape shape, int64_t seed,
                        AttrMap extra = {}) {
    AttrMap attrs = std::move(extra);
    attrs["shape"] = std::move(shape);
    attrs["dtype"] = dtype;
    attrs["seed"] = seed;
    auto node = graph_.AddNode(NodeDef{graph_.UniqueName(op), op, {}, attrs, ""});
    EXPECT_TRUE(node.ok()) << node.status();
    return node.ok() ? *node : nullptr;
  }

  std::unique_ptr<Kernel> Create(const Node* node) {
    auto kernel = KernelRegistry::Global().CreateKernel(*node, kDeviceCpu);
    EXPECT_TRUE(kernel.ok()) << kernel.status();
    return kernel.ok() ? std::move(kernel).value() : nullptr;
  }

  Tensor Run(Kernel* kernel) {
    KernelContext ctx(&kernel->node(), {}, &resources_, /*step_id=*/1);
    kernel->Compute(&ctx);
    EXPECT_TRUE(ctx.status().ok()) << ctx.status();
    return ctx.outputs()[0];
  }

  Graph graph_;
  ResourceManager resources_;
};

TEST_F(RandomKernelTest, KernelsWithTheSameSeedDrawTheSameSequence) {
  for (const char* op : {"RandomUniform", "RandomNormal", "TruncatedNormal"}) {
    const Node* n1 = AddRandom(op, DType::kFloat32, Shape{5, 7}, 123);
    const Node* n2 = AddRandom(op, DType::kFloat32, Shape{5, 7}, 123);
    auto k1 = Create(n1);
    auto k2 = Create(n2);
    Tensor first = Run(k1.get());
    EXPECT_TRUE(TensorsEqual(first, Run(k2.get()))) << op;
    Tensor second = Run(k1.get());
    EXPECT_FALSE(TensorsEqual(first, second)) << op << ": each Compute draws new values";
    EXPECT_TRUE(TensorsEqual(second, Run(k2.get()))) << op;
  }
}

TEST_F(RandomKernelTest, UniformHasTheMomentsOfItsRangeAndStaysBelowMaxval) {
  const Node* node = AddRandom("RandomUniform", DType::kFloat64, Shape{200000}, 1,
                               {{"minval", -2.0}, {"maxval", 4.0}});
  Tensor t = Run(Create(node).get());
  ASSERT_EQ(t.dtype(), DType::kFloat64);
  Moments m = ComputeMoments(t);
  EXPECT_NEAR(m.mean, 1.0, 0.03);
  EXPECT_NEAR(m.stddev, 6.0 / std::sqrt(12.0), 0.02);
  EXPECT_GE(m.min, -2.0);
  EXPECT_LT(m.max, 4.0);
}

TEST_F(RandomKernelTest, NormalHasTheRequestedMeanAndStddev) {
  const Node* node = AddRandom("RandomNormal", DType::kFloat32, Shape{100001}, 5,
                               {{"mean", 3.0}, {"stddev", 2.0}});
  Tensor t = Run(Create(node).get());
  Moments m = ComputeMoments(t);
  EXPECT_NEAR(m.mean, 3.0, 0.03);
  EXPECT_NEAR(m.stddev, 2.0, 0.03);
  EXPECT_LT(m.min, 3.0 - 2 * 2.0);  // tails beyond 2 stddev exist
}

TEST_F(RandomKernelTest, TruncatedNormalStaysWithinTwoStddevs) {
  const Node* node = AddRandom("TruncatedNormal", DType::kFloat64, Shape{100000}, 9,
                               {{"mean", -1.0}, {"stddev", 0.5}});
  Tensor t = Run(Create(node).get());
  Moments m = ComputeMoments(t);
  EXPECT_GE(m.min, -1.0 - 2 * 0.5);
  EXPECT_LE(m.max, -1.0 + 2 * 0.5);
  EXPECT_NEAR(m.mean, -1.0, 0.01);
  // The standard normal truncated to [-2, 2] has stddev 0.8796.
  EXPECT_NEAR(m.stddev, 0.5 * 0.8796, 0.01);
}

TEST_F(RandomKernelTest, EmptyShapeGivesAnEmptyTensor) {
  const Node* node = AddRandom("RandomNormal", DType::kFloat32, Shape{0, 3}, 0);
  Tensor t = Run(Create(node).get());
  EXPECT_EQ(t.shape(), (Shape{0, 3}));
}

}  // namespace
}  // namespace cpu
}  // namespace actorflow
