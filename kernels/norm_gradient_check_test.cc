// Numeric gradient checks of the normalization rules (graph/gradient_rules_norm.cc)
// against central differences (kernels/gradient_check_util.h, with known and unknown
// input shapes): FusedBatchNorm in training mode for every output (y through the
// batch statistics, batch_mean and the Bessel-corrected batch_variance) with respect
// to x, scale and offset; in inference mode with respect to every input; Dropout
// (each evaluation in a new session, so that every evaluation draws the same mask);
// GlobalAvgPool and Flatten; and a conv -> batch norm -> relu -> pool -> dropout stack.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/ops.h"
#include "graph/scope.h"
#include "gtest/gtest.h"
#include "kernels/gradient_check_util.h"

namespace actorflow {
namespace {

using gradient_check::CheckOptions;
using gradient_check::GradientsMatch;
using gradient_check::Rng;
using gradient_check::ShapesOf;
using V = std::vector<Output>;

// The statistics that training mode does not read.
Tensor NoStatistics() { return Tensor(DType::kFloat64, Shape{0}); }

Output Column(const Scope& s, const Output& x) { return Reshape(s, x, {-1}); }

const std::vector<Shape> kShapes = {{4, 3}, {2, 3, 3, 2}, {5, 1}, {3, 2, 2, 4}, {1, 2}};

TEST(NormGradientCheckTest, TrainingBatchNormMatchesCentralDifferencesForEveryOutput) {
  Rng rng(71);
  for (const Shape& shape : kShapes) {
    const int64_t c = shape.dim(shape.rank() - 1);
    const std::vector<Tensor> inputs = {rng.Uniform(shape), rng.Uniform({c}, 0.5, 2),
                                        rng.Uniform({c})};
    const std::string what = "FusedBatchNorm training(" + ShapesOf(inputs) + ")";
    auto bn = [](const Scope& s, const V& x) {
      return FusedBatchNorm(s, x[0], x[1], x[2], NoStatistics(), NoStatistics(), 0.001, true);
    };
    EXPECT_TRUE(GradientsMatch(what + ".y", inputs,
                               [bn](const Scope& s, const V& x) { return bn(s, x).y; }));
    // The statistics depend on x only: checked with x alone.
    const std::vector<Tensor> x_only = {inputs[0]};
    auto stats = [bn, &inputs](const Scope& s, const V& x, bool mean) {
      const FusedBatchNormResult r = bn(s, {x[0], Const(s, inputs[1]), Const(s, inputs[2])});
      return mean ? r.batch_mean : r.batch_variance;
    };
    EXPECT_TRUE(GradientsMatch(what + ".batch_mean", x_only,
                               [stats](const Scope& s, const V& x) { return stats(s, x, true); }));
    EXPECT_TRUE(GradientsMatch(what + ".batch_variance", x_only,
                               [stats](const Scope& s, const V& x) { return stats(s, x, false); }));
    // All three outputs at once: the gradients that reach x through each are summed.
    EXPECT_TRUE(GradientsMatch(what + " all outputs", inputs, [bn](const Scope& s, const V& x) {
      const FusedBatchNormResult r = bn(s, x);
      return ConcatV2(s, {Column(s, r.y), r.batch_mean, r.batch_variance}, 0);
    }));
  }
}

TEST(NormGradientCheckTest, InferenceBatchNormMatchesCentralDifferencesForEveryInput) {
  Rng rng(72);
  for (const Shape& shape : kShapes) {
    const int64_t c = shape.dim(shape.rank() - 1);
    const std::vector<Tensor> inputs = {rng.Uniform(shape), rng.Uniform({c}, 0.5, 2),
                                        rng.Uniform({c}), rng.Uniform({c}),
                                        rng.Uniform({c}, 0.2, 2)};
    const std::string what = "FusedBatchNorm inference(" + ShapesOf(inputs) + ")";
    auto bn = [](const Scope& s, const V& x) {
      return FusedBatchNorm(s, x[0], x[1], x[2], x[3], x[4], 0.01, false);
    };
    EXPECT_TRUE(GradientsMatch(what + ".y", inputs,
                               [bn](const Scope& s, const V& x) { return bn(s, x).y; }));
    // The statistics are passed through: gradients reach mean and variance both ways.
    EXPECT_TRUE(GradientsMatch(what + " all outputs", inputs, [bn](const Scope& s, const V& x) {
      const FusedBatchNormResult r = bn(s, x);
      return ConcatV2(s, {Column(s, r.y), r.batch_mean, r.batch_variance}, 0);
    }));
  }
}

TEST(NormGradientCheckTest, DropoutMatchesCentralDifferencesForAFixedDraw) {
  Rng rng(73);
  CheckOptions fresh;
  fresh.fresh_session_per_run = true;
  for (const Shape& shape : {Shape{7}, Shape{3, 4}, Shape{2, 3, 2, 2}}) {
    for (double keep_prob : {0.5, 0.8, 1.0}) {
      const std::vector<Tensor> inputs = {rng.Uniform(shape)};
      EXPECT_TRUE(GradientsMatch(
          "Dropout(" + ShapesOf(inputs) + ", keep_prob " + std::to_string(keep_prob) + ")",
          inputs,
          [keep_prob](const Scope& s, const V& x) {
            return Dropout(s, x[0], keep_prob, /*seed=*/9).output;
          },
          fresh));
    }
  }
}

TEST(NormGradientCheckTest, GlobalAvgPoolAndFlattenMatchCentralDifferences) {
  Rng rng(74);
  for (const Shape& shape : {Shape{1, 2, 2, 1}, Shape{2, 3, 4, 2}}) {
    const std::vector<Tensor> inputs = {rng.Uniform(shape)};
    EXPECT_TRUE(GradientsMatch("GlobalAvgPool(" + ShapesOf(inputs) + ")", inputs,
                               [](const Scope& s, const V& x) { return GlobalAvgPool(s, x[0]); }));
    EXPECT_TRUE(GradientsMatch("Flatten(" + ShapesOf(inputs) + ")", inputs,
                               [](const Scope& s, const V& x) { return Flatten(s, x[0]); }));
  }
}

// Gradients() through a small CNN: conv -> batch norm (training) -> relu -> global
// average pool -> dropout, with respect to the image, the filter, scale and offset.
TEST(NormGradientCheckTest, ConvBatchNormReluPoolDropoutStackMatchesCentralDifferences) {
  Rng rng(75);
  const std::vector<Tensor> inputs = {rng.Uniform({3, 5, 5, 2}), rng.Uniform({3, 3, 2, 4}),
                                      rng.Uniform({4}, 0.5, 2), rng.Uniform({4})};
  CheckOptions fresh;
  fresh.fresh_session_per_run = true;
  EXPECT_TRUE(GradientsMatch(
      "conv-batchnorm-relu-globalavgpool-dropout", inputs,
      [](const Scope& s, const V& x) {
        const Output h = Conv2D(s, x[0], x[1], {1, 1, 1, 1}, "SAME");
        const FusedBatchNormResult bn =
            FusedBatchNorm(s, h, x[2], x[3], NoStatistics(), NoStatistics());
        return Dropout(s, GlobalAvgPool(s, Relu(s, bn.y)), 0.7, 3).output;
      },
      fresh));
}

}  // namespace
}  // namespace actorflow
