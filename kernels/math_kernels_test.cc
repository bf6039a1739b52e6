// The sequence models' math ops (graph/math_ops.h): the CPU kernels of BatchMatMul,
// LayerNorm, LayerNormGrad, Gelu and GeluGrad, and Softmax/LogSoftmax of rank 1 to 4,
// against the reference kernels in float32 and float64; the InvalidArgument errors of
// bad inputs, at graph building and (shapes unknown until run time) in the kernels;
// the shapes inference gives; and numeric checks of every backward rule.
#include <optional>
#include <string>
#include <vector>

#include "graph/math_ops.h"
#include "graph/ops.h"
#include "gtest/gtest.h"
#include "kernels/gradient_check_util.h"
#include "kernels/kernels_test_util.h"

namespace actorflow {
namespace {

class MathKernelTest : public ::testing::TestWithParam<DType> {
 protected:
  DType dtype() const { return GetParam(); }
  Tensor Random(const Shape& shape, double lo = -1.0, double hi = 1.0) {
    return random_.Uniform(dtype(), shape, lo, hi);
  }
  // float32 sums over rows and inner dims round at ~1e-7 of the terms' magnitude: an
  // absolute floor keeps outputs near 0 from failing on the relative bound.
  std::optional<Tolerance> Summing() const {
    if (dtype() == DType::kFloat32) return Tolerance{1e-5, 1e-5};
    return std::nullopt;
  }
  RandomTensors random_{31};
};

INSTANTIATE_TEST_SUITE_P(Floating, MathKernelTest, ::testing::ValuesIn(kFloatDTypes),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

// [batch..., rows, cols], or [batch..., cols, rows] when stored as its adjoint.
Shape Matrices(std::vector<int64_t> batch, int64_t rows, int64_t cols, bool adj) {
  batch.push_back(adj ? cols : rows);
  batch.push_back(adj ? rows : cols);
  return Shape(batch);
}

// The kernel of `c` fails at run time (inputs of unknown shape, so inference accepts
// them) with InvalidArgument naming the node and containing `substring`.
::testing::AssertionResult FailsAtRunTime(const KernelTestCase& c, const std::string& substring) {
  StatusOr<KernelRun> run = RunKernel(c, /*unknown_input_shapes=*/true);
  if (!run.ok()) return ::testing::AssertionFailure() << "did not build: " << run.status();
  const Status& s = run->status;
  if (s.code() != Code::kInvalidArgument ||
      s.message().find(kNodeUnderTest) == std::string::npos ||
      s.message().find(substring) == std::string::npos) {
    return ::testing::AssertionFailure() << c.ToString() << ": got " << s;
  }
  return ::testing::AssertionSuccess();
}

// ---- BatchMatMul ------------------------------------------------------------------

struct BatchCase {
  std::vector<int64_t> x_batch, y_batch;
  int64_t m, k, n;
};

TEST_P(MathKernelTest, BatchMatMulMatchesReferenceForAdjointsAndBroadcastBatches) {
  const std::vector<BatchCase> cases = {
      {{}, {}, 3, 4, 5},           {{2}, {2}, 3, 4, 5},        {{2, 3}, {2, 3}, 1, 7, 2},
      {{2, 1}, {3}, 3, 4, 2},      {{4}, {}, 5, 6, 3},         {{}, {3}, 4, 2, 5},
      {{1}, {3}, 2, 2, 2},         {{2, 1, 3}, {1, 4, 1}, 2, 3, 2},
      {{3}, {3}, 17, 33, 9},       {{2}, {2}, 3, 0, 4},        {{0}, {}, 3, 4, 5},
      {{2}, {2}, 0, 4, 5},         {{2, 2}, {}, 16, 64, 31},
  };
  for (const BatchCase& c : cases) {
    for (bool adj_x : {false, true}) {
      for (bool adj_y : {false, true}) {
        const Tensor x = Random(Matrices(c.x_batch, c.m, c.k, adj_x));
        const Tensor y = Random(Matrices(c.y_batch, c.k, c.n, adj_y));
        EXPECT_TRUE(MatchesReference(
            {"BatchMatMul", {{"adj_x", adj_x}, {"adj_y", adj_y}}, {x, y}, {}, Summing()}));
      }
    }
  }
}

TEST_P(MathKernelTest, BatchMatMulRejectsBadShapesNamingBoth) {
  const Tensor x = Random(Shape{2, 3, 4});
  EXPECT_TRUE(FailsWith({"BatchMatMul", {}, {x, Random(Shape{2, 5, 6})}},
                        Code::kInvalidArgument, "x [2,3,4] and y [2,5,6]"));
  EXPECT_TRUE(FailsWith({"BatchMatMul", {{"adj_y", true}}, {x, Random(Shape{2, 6, 5})}},
                        Code::kInvalidArgument, "inner dimensions 4 and 5"));
  EXPECT_TRUE(FailsWith({"BatchMatMul", {}, {x, Random(Shape{3, 4, 6})}},
                        Code::kInvalidArgument, "do not broadcast"));
  EXPECT_TRUE(FailsWith({"BatchMatMul", {}, {Random(Shape{4}), Random(Shape{4, 2})}},
                        Code::kInvalidArgument, "rank >= 2"));
  // The same found by the kernel, the shapes unknown at graph building.
  EXPECT_TRUE(FailsAtRunTime({"BatchMatMul", {}, {x, Random(Shape{2, 5, 6})}},
                             "x [2,3,4] and y [2,5,6] have inner dimensions 4 and 5"));
  EXPECT_TRUE(FailsAtRunTime({"BatchMatMul", {}, {x, Random(Shape{3, 4, 6})}},
                             "the batch dimensions of x [2,3,4] and y [3,4,6] do not broadcast"));
  EXPECT_TRUE(FailsAtRunTime({"BatchMatMul", {}, {Random(Shape{4}), Random(Shape{4, 2})}},
                             "rank >= 2"));
}

TEST(MathKernelErrorTest, NonFloatAndMixedDTypesAreInvalidArguments) {
  const Tensor i = MakeTensor(DType::kInt32, {2, 2}, {1, 2, 3, 4});
  const Tensor f = MakeTensor(DType::kFloat32, {2, 2}, {1, 2, 3, 4});
  const Tensor d = MakeTensor(DType::kFloat64, {2, 2}, {1, 2, 3, 4});
  const Tensor f2 = MakeTensor(DType::kFloat32, {2}, {1, 2});
  EXPECT_TRUE(FailsWith({"BatchMatMul", {}, {i, i}}, Code::kInvalidArgument, "int32"));
  EXPECT_TRUE(FailsWith({"BatchMatMul", {}, {f, d}}, Code::kInvalidArgument, "float64"));
  EXPECT_TRUE(FailsWith({"LayerNorm", {}, {i, MakeTensor(DType::kInt32, {2}, {1, 1}),
                                           MakeTensor(DType::kInt32, {2}, {0, 0})}},
                        Code::kInvalidArgument, "int32"));
  EXPECT_TRUE(FailsWith({"LayerNorm", {}, {f, MakeTensor(DType::kFloat64, {2}, {1, 1}), f2}},
                        Code::kInvalidArgument, "gamma (input 1) has dtype float64"));
  EXPECT_TRUE(FailsWith({"Gelu", {}, {i}}, Code::kInvalidArgument, "int32"));
  EXPECT_TRUE(FailsWith({"GeluGrad", {}, {f, d}}, Code::kInvalidArgument, "float64"));
}

// ---- LayerNorm ----------------------------------------------------------------------

TEST_P(MathKernelTest, LayerNormMatchesReference) {
  const std::vector<Shape> shapes = {Shape{4, 8}, Shape{2, 3, 5}, Shape{7}, Shape{0, 4},
                                     Shape{3, 1}, Shape{2, 2, 2, 65}};
  for (const Shape& shape : shapes) {
    const int64_t d = shape.dim(shape.rank() - 1);
    for (double epsilon : {1e-5, 0.0, 0.5}) {
      const Tensor gamma = Random(Shape{d}, 0.5, 2.0);
      const Tensor beta = Random(Shape{d});
      // Offset rows: the variance must not cancel against a mean large to the spread.
      for (double offset : {0.0, 100.0}) {
        const Tensor x = Random(shape, offset - 2.0, offset + 2.0);
        EXPECT_TRUE(MatchesReference(
            {"LayerNorm", {{"epsilon", epsilon}}, {x, gamma, beta}, {}, Summing()}))
            << "epsilon " << epsilon << " offset " << offset;
      }
    }
  }
}

TEST_P(MathKernelTest, LayerNormGradMatchesReference) {
  for (const Shape& shape : {Shape{4, 8}, Shape{2, 3, 5}, Shape{7}, Shape{0, 4}, Shape{3, 1}}) {
    const int64_t d = shape.dim(shape.rank() - 1);
    const Shape rows(std::vector<int64_t>(shape.dims().begin(), shape.dims().end() - 1));
    EXPECT_TRUE(MatchesReference({"LayerNormGrad",
                                  {},
                                  {Random(shape), Random(shape), Random(rows),
                                   Random(rows, 0.5, 3.0), Random(Shape{d}, 0.5, 2.0)},
                                  {},
                                  Summing()}));
  }
}

TEST_P(MathKernelTest, LayerNormRejectsFeaturesThatDoNotFit) {
  const Tensor x = Random(Shape{2, 3});
  const Tensor v3 = Random(Shape{3});
  EXPECT_TRUE(FailsWith({"LayerNorm", {}, {x, Random(Shape{4}), v3}}, Code::kInvalidArgument,
                        "gamma (input 1) [4] does not match the 3 features of x (input 0) [2,3]"));
  EXPECT_TRUE(FailsWith({"LayerNorm", {}, {x, v3, Random(Shape{1, 3})}},
                        Code::kInvalidArgument, "beta (input 2) has shape [1,3]"));
  EXPECT_TRUE(FailsWith({"LayerNorm", {}, {Random(Shape{}), v3, v3}}, Code::kInvalidArgument,
                        "x (input 0) has shape []"));
  EXPECT_TRUE(FailsWith({"LayerNorm", {}, {Random(Shape{2, 0}), Random(Shape{0}),
                                           Random(Shape{0})}},
                        Code::kInvalidArgument, "at least one feature"));
  EXPECT_TRUE(FailsWith({"LayerNorm", {{"epsilon", -1.0}}, {x, v3, v3}},
                        Code::kInvalidArgument, "epsilon"));
  EXPECT_TRUE(FailsAtRunTime({"LayerNorm", {}, {x, Random(Shape{4}), v3}},
                             "gamma [4] does not match the 3 features of x [2,3]"));
  EXPECT_TRUE(FailsAtRunTime({"LayerNorm", {}, {Random(Shape{}), v3, v3}}, "D >= 1"));
  const Tensor rows = Random(Shape{2});
  EXPECT_TRUE(FailsWith({"LayerNormGrad", {}, {x, x, Random(Shape{3}), rows, v3}},
                        Code::kInvalidArgument, "mean (input 2) [3]"));
  EXPECT_TRUE(FailsAtRunTime({"LayerNormGrad", {}, {x, x, rows, Random(Shape{2, 1}), v3}},
                             "inv_std [2,1] must be [2]"));
  EXPECT_TRUE(FailsAtRunTime({"LayerNormGrad", {}, {Random(Shape{3, 2}), x, rows, rows, v3}},
                             "dy [3,2] and x [2,3]"));
}

// ---- Gelu ---------------------------------------------------------------------------

TEST_P(MathKernelTest, GeluAndGeluGradMatchReferenceInBothForms) {
  const Tensor extremes = MakeTensor(dtype(), {8}, {-1e30, -40, -8, -1e-3, 0, 1e-3, 8, 1e30});
  for (bool approximate : {false, true}) {
    const AttrMap attrs = {{"approximate", approximate}};
    for (const Shape& shape : {Shape{3, 4}, Shape{}, Shape{0, 2}, Shape{2, 3, 5}}) {
      const Tensor x = Random(shape, -6.0, 6.0);
      EXPECT_TRUE(MatchesReference({"Gelu", attrs, {x}}));
      EXPECT_TRUE(MatchesReference({"GeluGrad", attrs, {Random(shape), x}}));
    }
    EXPECT_TRUE(MatchesReference({"Gelu", attrs, {extremes}}));
    EXPECT_TRUE(MatchesReference({"GeluGrad", attrs, {Random(Shape{8}), extremes}}));
  }
  EXPECT_TRUE(FailsWith({"GeluGrad", {}, {Random(Shape{2, 3}), Random(Shape{3})}},
                        Code::kInvalidArgument, "dy (input 0) [2,3] and x (input 1) [3]"));
  EXPECT_TRUE(FailsAtRunTime({"GeluGrad", {}, {Random(Shape{2, 3}), Random(Shape{3})}},
                             "dy [2,3] and x [3]"));
}

// ---- Softmax of any rank ----------------------------------------------------------

TEST_P(MathKernelTest, SoftmaxAndLogSoftmaxWorkAlongTheLastAxisOfAnyRank) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (const Shape& shape : {Shape{6}, Shape{2, 3, 7}, Shape{2, 2, 3, 5}, Shape{2, 0, 3}}) {
      EXPECT_TRUE(MatchesReference({op, {}, {Random(shape, -5.0, 5.0)}}));
    }
    EXPECT_TRUE(FailsWith({op, {}, {Random(Shape{})}}, Code::kInvalidArgument, "rank >= 1"));
  }
}

// ---- Inference ------------------------------------------------------------------------

TEST(MathShapeTest, InferenceBroadcastsBatchesAndKeepsUnknownDims) {
  Scope root = Scope::NewRootScope();
  const auto in = [&](const Shape& shape) { return Placeholder(root, DType::kFloat32, shape); };
  EXPECT_EQ(BatchMatMul(root, in(Shape{2, 1, 3, 4}), in(Shape{5, 4, 6})).shape(),
            Shape({2, 5, 3, 6}));
  EXPECT_EQ(BatchMatMul(root, in(Shape{-1, 4, 3}), in(Shape{7, 4}), true, true).shape(),
            Shape({-1, 3, 7}));
  EXPECT_TRUE(BatchMatMul(root, in(Shape{3, 4}), in(Shape::UnknownRank())).shape().unknown_rank());
  const LayerNormResult norm = LayerNorm(root, in(Shape{2, -1, -1}), in(Shape{8}), in(Shape{-1}));
  EXPECT_EQ(norm.y.shape(), Shape({2, -1, 8}));
  EXPECT_EQ(norm.mean.shape(), Shape({2, -1}));
  EXPECT_EQ(norm.inv_std.shape(), Shape({2, -1}));
  const LayerNormGradResult grad = LayerNormGrad(root, in(Shape::UnknownRank()), in(Shape{3, -1}),
                                                 in(Shape{-1}), in(Shape{3}), in(Shape{8}));
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(grad.dx.shape(), Shape({3, 8}));
  EXPECT_EQ(grad.dgamma.shape(), Shape({8}));
  EXPECT_EQ(grad.dbeta.shape(), Shape({8}));
  // mean [2,?] does not fit x [3,8]: the error names the input and both shapes.
  LayerNormGrad(root, in(Shape{3, 8}), in(Shape{3, 8}), norm.mean, in(Shape{3}), in(Shape{8}));
  EXPECT_FALSE(root.ok());
  EXPECT_NE(root.status().message().find("mean (input 2) [2,?]"), std::string::npos)
      << root.status();
  EXPECT_NE(root.status().message().find("x [3,8]"), std::string::npos) << root.status();
}

// ---- Gradients ------------------------------------------------------------------------

using gradient_check::GradientsMatch;
using gradient_check::Rng;
using gradient_check::ShapesOf;

TEST(MathGradientCheckTest, BatchMatMulForEveryAdjointAndBroadcastBatches) {
  Rng rng(41);
  const std::vector<BatchCase> cases = {{{}, {}, 2, 3, 4},     {{2}, {2}, 3, 2, 2},
                                        {{2, 1}, {3}, 2, 3, 2}, {{3}, {}, 2, 4, 3},
                                        {{}, {2}, 3, 2, 4},     {{1}, {2, 2}, 2, 2, 3}};
  for (const BatchCase& c : cases) {
    for (bool adj_x : {false, true}) {
      for (bool adj_y : {false, true}) {
        const std::vector<Tensor> inputs = {rng.Uniform(Matrices(c.x_batch, c.m, c.k, adj_x)),
                                            rng.Uniform(Matrices(c.y_batch, c.k, c.n, adj_y))};
        EXPECT_TRUE(GradientsMatch(
            "BatchMatMul(" + ShapesOf(inputs) + ") adj " + std::to_string(adj_x) +
                std::to_string(adj_y),
            inputs, [=](const Scope& s, const std::vector<Output>& x) {
              return BatchMatMul(s, x[0], x[1], adj_x, adj_y);
            }));
      }
    }
  }
}

TEST(MathGradientCheckTest, LayerNormWithRespectToXGammaAndBeta) {
  Rng rng(42);
  for (const Shape& shape : {Shape{5}, Shape{3, 4}, Shape{2, 3, 6}}) {
    const int64_t d = shape.dim(shape.rank() - 1);
    const std::vector<Tensor> inputs = {rng.Uniform(shape), rng.Uniform(Shape{d}, 0.5, 2),
                                        rng.Uniform(Shape{d})};
    for (double epsilon : {1e-5, 0.3}) {
      EXPECT_TRUE(GradientsMatch("LayerNorm(" + ShapesOf(inputs) + ")", inputs,
                                 [=](const Scope& s, const std::vector<Output>& x) {
                                   return LayerNorm(s, x[0], x[1], x[2], epsilon).y;
                                 }));
    }
    // Gradients reaching x through the mean and inv_std outputs too.
    EXPECT_TRUE(GradientsMatch(
        "LayerNorm statistics(" + ShapesOf(inputs) + ")", inputs,
        [](const Scope& s, const std::vector<Output>& x) {
          const LayerNormResult n = LayerNorm(s, x[0], x[1], x[2]);
          const Output stats = Add(s, Mul(s, n.mean, Const(s, 3.0)), n.inv_std);
          return Add(s, Sum(s, n.y, int64_t{-1}), stats);
        }));
    // inv_std alone depends on x only (gamma and beta get no gradient).
    EXPECT_TRUE(GradientsMatch("LayerNorm inv_std(" + ShapesOf(inputs) + ")", {inputs[0]},
                               [&](const Scope& s, const std::vector<Output>& x) {
                                 return LayerNorm(s, x[0], inputs[1], inputs[2]).inv_std;
                               }));
  }
}

TEST(MathGradientCheckTest, GeluInBothForms) {
  Rng rng(43);
  for (bool approximate : {false, true}) {
    const std::vector<Tensor> inputs = {rng.Uniform(Shape{3, 7}, -4, 4)};
    EXPECT_TRUE(GradientsMatch(std::string("Gelu approximate=") + (approximate ? "1" : "0"),
                               inputs, [=](const Scope& s, const std::vector<Output>& x) {
                                 return Gelu(s, x[0], approximate);
                               }));
  }
}

TEST(MathGradientCheckTest, SoftmaxAndLogSoftmaxOfRankFour) {
  Rng rng(44);
  const std::vector<Tensor> inputs = {rng.Uniform(Shape{2, 2, 3, 4}, -3, 3)};
  EXPECT_TRUE(GradientsMatch("Softmax(" + ShapesOf(inputs) + ")", inputs,
                             [](const Scope& s, const std::vector<Output>& x) {
                               return Softmax(s, x[0]);
                             }));
  EXPECT_TRUE(GradientsMatch("LogSoftmax(" + ShapesOf(inputs) + ")", inputs,
                             [](const Scope& s, const std::vector<Output>& x) {
                               return LogSoftmax(s, x[0]);
                             }));
}

// A Transformer attention block end to end: scores, softmax, weighted values, a
// residual LayerNorm and a GELU, differentiated with respect to every input.
TEST(MathGradientCheckTest, AttentionBlockComposes) {
  Rng rng(45);
  const std::vector<Tensor> inputs = {rng.Uniform(Shape{2, 3, 4}), rng.Uniform(Shape{4, 4}),
                                      rng.Uniform(Shape{4}, 0.5, 2), rng.Uniform(Shape{4})};
  EXPECT_TRUE(GradientsMatch("attention(" + ShapesOf(inputs) + ")", inputs,
                             [](const Scope& s, const std::vector<Output>& x) {
                               const Output q = BatchMatMul(s, x[0], x[1]);
                               const Output scores = BatchMatMul(s, q, x[0], false, true);
                               const Output attended = BatchMatMul(s, Softmax(s, scores), x[0]);
                               const Output normed =
                                   LayerNorm(s, Add(s, x[0], attended), x[2], x[3]).y;
                               return Gelu(s, normed, true);
                             }));
}

}  // namespace
}  // namespace actorflow
