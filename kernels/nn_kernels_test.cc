// CPU neural-network kernels (MatMul, BiasAdd, activations, Softmax, LogSoftmax, the
// softmax cross-entropies) against the reference kernels, in float32 and float64.
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "graph/tensor.h"
#include "kernels/kernels_test_util.h"

namespace actorflow {
namespace {

class NnKernelTest : public ::testing::TestWithParam<DType> {
 protected:
  DType dtype() const { return GetParam(); }
  Tensor Random(const Shape& shape, double lo = -1.0, double hi = 1.0) {
    return random_.Uniform(dtype(), shape, lo, hi);
  }
  RandomTensors random_{13};
};

INSTANTIATE_TEST_SUITE_P(Floating, NnKernelTest, ::testing::ValuesIn(kFloatDTypes),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

// ---- MatMul ----------------------------------------------------------------------

struct MatMulSize {
  int64_t m, k, n;
};

TEST_P(NnKernelTest, MatMulMatchesReferenceForAllTransposes) {
  const std::vector<MatMulSize> sizes = {{1, 1, 1},   {2, 3, 4},  {64, 33, 17}, {17, 64, 1},
                                         {1, 64, 33}, {0, 3, 4},  {3, 0, 4},    {3, 4, 0},
                                         {0, 0, 0},   {5, 1, 7},  {31, 31, 31}};
  for (const MatMulSize& s : sizes) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        const Tensor a = Random(ta ? Shape{s.k, s.m} : Shape{s.m, s.k});
        const Tensor b = Random(tb ? Shape{s.n, s.k} : Shape{s.k, s.n});
        EXPECT_TRUE(MatchesReference(
            {"MatMul", {{"transpose_a", ta}, {"transpose_b", tb}}, {a, b}}));
      }
    }
  }
}

TEST_P(NnKernelTest, MatMulInnerDimensionMismatchIsInvalidArgument) {
  EXPECT_TRUE(FailsWith({"MatMul", {}, {Random(Shape{2, 3}), Random(Shape{4, 5})}},
                        Code::kInvalidArgument, "MatMul shape mismatch"));
  EXPECT_TRUE(FailsWith({"MatMul", {{"transpose_a", true}}, {Random(Shape{2, 3}), Random(Shape{3, 5})}},
                        Code::kInvalidArgument, "MatMul shape mismatch"));
}

// ---- BiasAdd ---------------------------------------------------------------------

TEST_P(NnKernelTest, BiasAddMatchesReference) {
  const std::vector<Shape> shapes = {Shape{2, 3}, Shape{4, 2, 5}, Shape{5},
                                     Shape{0, 3}, Shape{33, 17},  Shape{2, 3, 4, 1}};
  for (const Shape& shape : shapes) {
    const Tensor bias = Random(Shape{shape.dim(shape.rank() - 1)});
    EXPECT_TRUE(MatchesReference({"BiasAdd", {}, {Random(shape), bias}}));
  }
}

TEST_P(NnKernelTest, BiasAddRejectsAMismatchedBias) {
  EXPECT_TRUE(FailsWith({"BiasAdd", {}, {Random(Shape{2, 3}), Random(Shape{4})}},
                        Code::kInvalidArgument));
}

// ---- Activations -----------------------------------------------------------------

TEST_P(NnKernelTest, ActivationsMatchReference) {
  const std::vector<Shape> shapes = {Shape{}, Shape{7}, Shape{2, 3}, Shape{0, 3}, Shape{3, 17}};
  for (const char* op : {"Relu", "Sigmoid", "Tanh"}) {
    for (const Shape& shape : shapes) {
      EXPECT_TRUE(MatchesReference({op, {}, {Random(shape, -6.0, 6.0)}}));
    }
    // Saturating and exactly-zero inputs.
    EXPECT_TRUE(MatchesReference(
        {op, {}, {MakeTensor(dtype(), Shape{6}, {-100.0, -20.0, 0.0, 1e-8, 20.0, 100.0})}}));
  }
}

TEST_P(NnKernelTest, ReluPassesNaNThroughAndInfinitiesAsTheyAre) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  auto run = RunKernel({"Relu", {}, {MakeTensor(dtype(), Shape{4}, {nan, inf, -inf, -2.0})}});
  ASSERT_TRUE(run.ok() && run->status.ok());
  const Tensor& y = run->outputs[0];
  EXPECT_TRUE(std::isnan(y.ElementAsDouble(0)));  // not a confident 0
  EXPECT_EQ(y.ElementAsDouble(1), inf);
  EXPECT_EQ(y.ElementAsDouble(2), 0.0);
  EXPECT_EQ(y.ElementAsDouble(3), 0.0);
}

// ---- Softmax, LogSoftmax ---------------------------------------------------------

TEST_P(NnKernelTest, SoftmaxAndLogSoftmaxMatchReferenceAlongTheLastAxis) {
  const std::vector<Shape> shapes = {Shape{2, 5}, Shape{7},  Shape{3, 4, 6},
                                     Shape{0, 3}, Shape{1, 1}, Shape{4, 33}};
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (const Shape& shape : shapes) {
      EXPECT_TRUE(MatchesReference({op, {}, {Random(shape, -5.0, 5.0)}}));
    }
  }
}

TEST_P(NnKernelTest, SoftmaxIsStableForLargeLogits) {
  const Tensor large = MakeTensor(dtype(), Shape{2, 3}, {1000, 1001, 1002, -1000, -1001, -1002});
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    EXPECT_TRUE(MatchesReference({op, {}, {large}}));
    auto run = RunKernel({op, {}, {large}});
    ASSERT_TRUE(run.ok() && run->status.ok());
    for (int64_t i = 0; i < run->outputs[0].NumElements(); ++i) {
      EXPECT_TRUE(std::isfinite(run->outputs[0].ElementAsDouble(i))) << op << " element " << i;
    }
  }
}

// ---- Cross-entropies -------------------------------------------------------------

TEST_P(NnKernelTest, SoftmaxCrossEntropyMatchesReference) {
  const std::string op = "SoftmaxCrossEntropyWithLogits";
  for (const auto& [n, c] : std::vector<std::pair<int64_t, int64_t>>{
           {4, 5}, {1, 1}, {1, 7}, {0, 3}, {33, 10}}) {
    // Soft labels.
    EXPECT_TRUE(MatchesReference(
        {op, {}, {Random(Shape{n, c}, -5.0, 5.0), random_.Probabilities(dtype(), n, c)}}));
    // One-hot labels.
    Tensor onehot(dtype(), Shape{n, c});
    const Tensor labels = random_.Labels(DType::kInt64, n, c);
    std::vector<double> values(n * c, 0.0);
    for (int64_t r = 0; r < n; ++r) values[r * c + labels.data<int64_t>()[r]] = 1.0;
    EXPECT_TRUE(MatchesReference(
        {op, {}, {Random(Shape{n, c}, -5.0, 5.0), MakeTensor(dtype(), Shape{n, c}, values)}}));
  }
  const Tensor large = MakeTensor(dtype(), Shape{2, 2}, {1000, -1000, -500, 500});
  EXPECT_TRUE(MatchesReference({op, {}, {large, MakeTensor(dtype(), Shape{2, 2}, {0.5, 0.5, 1, 0})}}));
}

TEST_P(NnKernelTest, SparseSoftmaxCrossEntropyMatchesReferenceForBothLabelDTypes) {
  const std::string op = "SparseSoftmaxCrossEntropyWithLogits";
  for (DType label_dtype : kIntDTypes) {
    for (const auto& [n, c] : std::vector<std::pair<int64_t, int64_t>>{
             {4, 5}, {1, 1}, {1, 7}, {0, 3}, {33, 10}}) {
      EXPECT_TRUE(MatchesReference(
          {op, {}, {Random(Shape{n, c}, -5.0, 5.0), random_.Labels(label_dtype, n, c)}}));
    }
    const Tensor large = MakeTensor(dtype(), Shape{2, 2}, {1000, -1000, -500, 500});
    EXPECT_TRUE(MatchesReference({op, {}, {large, MakeTensor(label_dtype, Shape{2}, {1, 0})}}));
  }
}

TEST_P(NnKernelTest, SparseSoftmaxCrossEntropyLabelOutOfRangeNamesNodeAndLabel) {
  const std::string op = "SparseSoftmaxCrossEntropyWithLogits";
  for (DType label_dtype : kIntDTypes) {
    const Tensor logits = Random(Shape{3, 4});
    // C itself is the first label out of range.
    EXPECT_TRUE(FailsWith({op, {}, {logits, MakeTensor(label_dtype, Shape{3}, {0, 4, 1})}},
                          Code::kInvalidArgument));
    EXPECT_TRUE(FailsWith({op, {}, {logits, MakeTensor(label_dtype, Shape{3}, {0, 1, -7})}},
                          Code::kInvalidArgument, "-7"));
    EXPECT_TRUE(FailsWith({op, {}, {logits, MakeTensor(label_dtype, Shape{3}, {1234, 1, 2})}},
                          Code::kInvalidArgument, "1234"));
  }
}

}  // namespace
}  // namespace actorflow
