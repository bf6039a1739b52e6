// LogUniformCandidateSampler against its distribution and expected counts,
// SigmoidCrossEntropyWithLogits by a numeric gradient check and large logits, and
// NceLoss against the loss computed here from the classes it sampled.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/ops.h"
#include "graph/sampled_ops.h"
#include "graph/scope.h"
#include "kernels/direct_session.h"
#include "kernels/gradient_check_util.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

double LogUniformP(int64_t k, int64_t range) {
  return (std::log(k + 2.0) - std::log(k + 1.0)) / std::log(range + 1.0);
}

std::vector<Tensor> RunOnce(const Scope& root, const std::vector<std::string>& fetches,
                            Status* status = nullptr) {
  EXPECT_TRUE(root.ok()) << root.status();
  auto session = NewDirectSession(root.graph());
  EXPECT_TRUE(session.ok());
  std::vector<Tensor> out;
  const Status s = (*session)->Run({}, fetches, {}, &out);
  if (status != nullptr) *status = s;
  else EXPECT_TRUE(s.ok()) << s;
  return out;
}

TEST(LogUniformCandidateSamplerTest, DrawsFollowTheLogUniformLaw) {
  constexpr int64_t kRange = 10, kDraws = 20000;
  Scope root = Scope::NewRootScope();
  const CandidateSample sample = LogUniformCandidateSampler(
      root, Tensor::FromVector<int64_t>({0, 9}, Shape{2, 1}), 1, kDraws, false, kRange, 5);
  const std::vector<Tensor> out =
      RunOnce(root, {sample.sampled.name(), sample.true_expected_count.name(),
                     sample.sampled_expected_count.name()});
  ASSERT_EQ(out.size(), 3u);
  std::map<int64_t, int64_t> histogram;
  for (int64_t i = 0; i < kDraws; ++i) ++histogram[out[0].data<int64_t>()[i]];
  for (int64_t k = 0; k < kRange; ++k) {
    const double p = LogUniformP(k, kRange);
    EXPECT_NEAR(histogram[k] / static_cast<double>(kDraws), p, 0.01) << "class " << k;
  }
  EXPECT_NEAR(out[1].data<float>()[0], kDraws * LogUniformP(0, kRange), 1e-2);
  EXPECT_NEAR(out[1].data<float>()[1], kDraws * LogUniformP(9, kRange), 1e-2);
  const int64_t first = out[0].data<int64_t>()[0];
  EXPECT_NEAR(out[2].data<float>()[0], kDraws * LogUniformP(first, kRange), 1e-2);
}

TEST(LogUniformCandidateSamplerTest, UniqueDrawsAreDistinctWithTheirInclusionOdds) {
  Scope root = Scope::NewRootScope();
  const CandidateSample sample = LogUniformCandidateSampler(
      root, Tensor::FromVector<int64_t>({3}, Shape{1, 1}), 1, 6, true, 6, 8);
  const std::vector<Tensor> out =
      RunOnce(root, {sample.sampled.name(), sample.sampled_expected_count.name()});
  ASSERT_EQ(out.size(), 2u);
  std::set<int64_t> distinct(out[0].data<int64_t>(), out[0].data<int64_t>() + 6);
  EXPECT_EQ(distinct, (std::set<int64_t>{0, 1, 2, 3, 4, 5}));
  // Every class was drawn, so each count is the odds of appearing in the same number
  // of tries: larger for likelier (smaller) classes, at most 1.
  std::map<int64_t, float> expected;
  for (int i = 0; i < 6; ++i) expected[out[0].data<int64_t>()[i]] = out[1].data<float>()[i];
  for (int64_t k = 0; k + 1 < 6; ++k) EXPECT_GT(expected[k], expected[k + 1]) << k;
  EXPECT_LE(expected[0], 1.0f);
}

TEST(LogUniformCandidateSamplerTest, ATrueClassOutsideTheRangeIsNamed) {
  Scope root = Scope::NewRootScope();
  const CandidateSample sample = LogUniformCandidateSampler(
      root, Tensor::FromVector<int64_t>({2, 12}, Shape{2, 1}), 1, 3, false, 10, 1);
  Status s;
  RunOnce(root, {sample.sampled.name()}, &s);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("true_classes[1] = 12 is not in [0, 10)"));
  Scope too_many = Scope::NewRootScope();
  LogUniformCandidateSampler(too_many, Tensor::FromVector<int64_t>({2}, Shape{1, 1}), 1, 11,
                             true, 10, 1);
  EXPECT_THAT(too_many.status().message(), HasSubstr("not that many"));
}

double Softplus(double x) { return std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.0); }

TEST(SigmoidCrossEntropyTest, MatchesItsDefinitionAndItsNumericGradient) {
  gradient_check::Rng rng(4);
  const std::vector<Tensor> inputs = {rng.AwayFromZero(Shape{2, 3}, 0.1, 3)};
  const Tensor targets = Tensor::FromVector<double>({0, 1, 0.25, 1, 0, 0.5}, Shape{2, 3});
  EXPECT_TRUE(gradient_check::GradientsMatch(
      "SigmoidCrossEntropyWithLogits", inputs,
      [&](const Scope& s, const std::vector<Output>& x) {
        return SigmoidCrossEntropyWithLogits(s, x[0], targets);
      }));
  Scope root = Scope::NewRootScope();
  const Output loss = SigmoidCrossEntropyWithLogits(
      root, Tensor::FromVector<double>({-800, 800, 2}), Tensor::FromVector<double>({1, 0, 1}));
  const std::vector<Tensor> out = RunOnce(root, {loss.name()});
  EXPECT_DOUBLE_EQ(out[0].data<double>()[0], 800.0);  // no overflow
  EXPECT_DOUBLE_EQ(out[0].data<double>()[1], 800.0);
  EXPECT_NEAR(out[0].data<double>()[2], Softplus(-2), 1e-12);
}

TEST(NceLossTest, MatchesTheLossOfTheSampledClasses) {
  constexpr int64_t kClasses = 7, kDim = 3, kSampled = 4;
  Scope root = Scope::NewRootScope();
  std::vector<float> w(kClasses * kDim), b(kClasses);
  for (int64_t i = 0; i < kClasses * kDim; ++i) w[i] = 0.1f * static_cast<float>(i % 5) - 0.2f;
  for (int64_t k = 0; k < kClasses; ++k) b[k] = 0.05f * static_cast<float>(k);
  const Output weights = Const(root, Tensor::FromVector(w, Shape{kClasses, kDim}));
  const Output biases = Const(root, Tensor::FromVector(b));
  const std::vector<float> x = {0.5f, -1, 2, 1, 0.25f, -0.5f};
  const std::vector<int64_t> labels = {6, 2};
  const NceLossResult nce =
      NceLoss(root, {weights}, {biases}, Tensor::FromVector(labels, Shape{2, 1}),
              Tensor::FromVector(x, Shape{2, kDim}), kSampled, kClasses, 3);
  std::string sampler;
  for (int id = 0; id < root.graph()->num_nodes(); ++id) {
    if (root.graph()->node(id)->op() == "LogUniformCandidateSampler") {
      sampler = root.graph()->node(id)->name();
    }
  }
  ASSERT_FALSE(sampler.empty());
  const std::vector<Tensor> out =
      RunOnce(root, {nce.loss.name(), sampler + ":0", sampler + ":1", sampler + ":2"});
  ASSERT_EQ(out.size(), 4u);
  for (int e = 0; e < 2; ++e) {
    auto logit = [&](int64_t k, double expected_count) {
      double dot = b[k];
      for (int64_t c = 0; c < kDim; ++c) dot += x[e * kDim + c] * w[k * kDim + c];
      return dot - std::log(expected_count);
    };
    double want = Softplus(-logit(labels[e], out[2].data<float>()[e]));
    for (int j = 0; j < kSampled; ++j) {
      want += Softplus(logit(out[1].data<int64_t>()[j], out[3].data<float>()[j]));
    }
    EXPECT_NEAR(out[0].data<float>()[e], want, 1e-4) << "example " << e;
  }
}

}  // namespace
}  // namespace actorflow
