// The graph side of the normalization ops (graph/ops_nn_norm.cc): shape inference of
// FusedBatchNorm, FusedBatchNormGrad and Dropout with known, partly known and unknown
// shapes, build-time errors that name the node, and the builders made of other ops
// (AssignMovingAverage, GlobalAvgPool, Flatten, inference-mode Dropout) run through a
// DirectSession.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "graph/tensor.h"
#include "kernels/direct_session.h"

namespace actorflow {
namespace {

const DType kF = DType::kFloat32;

Output Ph(const Scope& s, const Shape& shape) { return Placeholder(s, kF, shape); }

TEST(NormShapeInferenceTest, BatchNormOutputsFollowXAndTheChannelCount) {
  Scope root = Scope::NewRootScope();
  const Output c3 = Ph(root, Shape{3});
  const Output empty = Ph(root, Shape{0});
  FusedBatchNormResult nhwc =
      FusedBatchNorm(root, Ph(root, Shape{-1, 5, 5, 3}), c3, c3, empty, empty);
  EXPECT_EQ(nhwc.y.shape(), (Shape{-1, 5, 5, 3}));
  EXPECT_EQ(nhwc.batch_mean.shape(), (Shape{3}));
  EXPECT_EQ(nhwc.batch_variance.shape(), (Shape{3}));
  // The channel count comes from scale when x does not know it.
  FusedBatchNormResult dense =
      FusedBatchNorm(root, Ph(root, Shape{8, -1}), c3, c3, c3, c3, 0.01, false);
  EXPECT_EQ(dense.y.shape(), (Shape{8, 3}));
  FusedBatchNormResult unknown =
      FusedBatchNorm(root, Ph(root, Shape::UnknownRank()), Ph(root, Shape{-1}), c3, c3, c3);
  EXPECT_TRUE(unknown.y.shape().unknown_rank());
  EXPECT_EQ(unknown.batch_mean.shape(), (Shape{3}));
  FusedBatchNormGradResult grad = FusedBatchNormGrad(root, Ph(root, Shape{2, -1, 4, 3}),
                                                     Ph(root, Shape{-1, 6, 4, -1}), c3, c3, c3,
                                                     0.001, true);
  EXPECT_EQ(grad.x_backprop.shape(), (Shape{2, 6, 4, 3}));
  EXPECT_EQ(grad.scale_backprop.shape(), (Shape{3}));
  EXPECT_EQ(grad.offset_backprop.shape(), (Shape{3}));
  DropoutResult drop = Dropout(root, Ph(root, Shape{-1, 7}), 0.5, 1);
  EXPECT_EQ(drop.output.shape(), (Shape{-1, 7}));
  EXPECT_EQ(drop.mask.shape(), (Shape{-1, 7}));
  EXPECT_EQ(drop.mask.dtype(), kF);
  EXPECT_TRUE(root.ok()) << root.status();
}

TEST(NormShapeInferenceTest, BadInputsFailTheBuildNamingTheNode) {
  struct BadCase {
    const char* what;
    const char* expected;  // part of the message
    std::function<void(const Scope& root, const Scope& named)> build;
  };
  const std::vector<BadCase> cases = {
      {"rank 3 x", "rank 2 or 4",
       [](const Scope& root, const Scope& s) {
         const Output c = Ph(root, Shape{3});
         FusedBatchNorm(s, Ph(root, Shape{2, 4, 3}), c, c, c, c);
       }},
      {"channel mismatch of x and scale", "does not match the 3 channels of x [2,4,4,3]",
       [](const Scope& root, const Scope& s) {
         const Output c = Ph(root, Shape{3});
         FusedBatchNorm(s, Ph(root, Shape{2, 4, 4, 3}), Ph(root, Shape{5}), c, c, c);
       }},
      {"channel mismatch of scale and offset", "offset [4] does not match the 3 channels of scale",
       [](const Scope& root, const Scope& s) {
         FusedBatchNorm(s, Ph(root, Shape::UnknownRank()), Ph(root, Shape{3}), Ph(root, Shape{4}),
                        Ph(root, Shape{0}), Ph(root, Shape{0}));
       }},
      {"empty statistics in inference", "mean [0]",
       [](const Scope& root, const Scope& s) {
         const Output c = Ph(root, Shape{3});
         FusedBatchNorm(s, Ph(root, Shape{2, 3}), c, c, Ph(root, Shape{0}), c, 0.001, false);
       }},
      {"negative epsilon", "epsilon",
       [](const Scope& root, const Scope& s) {
         const Output c = Ph(root, Shape{3});
         FusedBatchNorm(s, Ph(root, Shape{2, 3}), c, c, c, c, -1e-3);
       }},
      {"dtype mismatch", "dtype",
       [](const Scope& root, const Scope& s) {
         const Output c = Ph(root, Shape{3});
         FusedBatchNorm(s, Placeholder(root, DType::kFloat64, Shape{2, 3}), c, c, c, c);
       }},
      {"integer x", "float32 or float64",
       [](const Scope& root, const Scope& s) {
         const Output c = Placeholder(root, DType::kInt32, Shape{3});
         FusedBatchNorm(s, Placeholder(root, DType::kInt32, Shape{2, 3}), c, c, c, c);
       }},
      {"gradient of another shape", "same shape",
       [](const Scope& root, const Scope& s) {
         const Output c = Ph(root, Shape{3});
         FusedBatchNormGrad(s, Ph(root, Shape{2, 3}), Ph(root, Shape{4, 3}), c, c, c, 0.001, true);
       }},
      {"keep_prob 0", "keep_prob",
       [](const Scope& root, const Scope& s) { Dropout(s, Ph(root, Shape{2}), 0.0, 1); }},
      {"keep_prob above 1", "keep_prob",
       [](const Scope& root, const Scope& s) { Dropout(s, Ph(root, Shape{2}), 1.5, 1); }},
      {"keep_prob above 1 in inference", "keep_prob",
       [](const Scope& root, const Scope& s) { Dropout(s, Ph(root, Shape{2}), 1.5, 1, false); }},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.what);
    Scope root = Scope::NewRootScope();
    c.build(root, root.WithOpName("bad_node"));
    EXPECT_EQ(root.status().code(), Code::kInvalidArgument) << root.status();
    EXPECT_NE(root.status().message().find("bad_node"), std::string::npos) << root.status();
    EXPECT_NE(root.status().message().find(c.expected), std::string::npos) << root.status();
  }
}

TEST(NormShapeInferenceTest, GlobalAvgPoolAndFlattenShapes) {
  Scope root = Scope::NewRootScope();
  EXPECT_EQ(GlobalAvgPool(root, Ph(root, Shape{2, 5, 5, 3})).shape(), (Shape{2, 3}));
  EXPECT_EQ(GlobalAvgPool(root, Ph(root, Shape{-1, -1, -1, 8})).shape(), (Shape{-1, 8}));
  EXPECT_EQ(Flatten(root, Ph(root, Shape{-1, 3, 4, 5})).shape(), (Shape{-1, 60}));
  EXPECT_EQ(Flatten(root, Ph(root, Shape{6})).shape(), (Shape{6, 1}));
  EXPECT_EQ(Flatten(root, Ph(root, Shape{2, -1, 3})).shape(), (Shape{-1, -1}));
  EXPECT_TRUE(root.ok()) << root.status();
  GlobalAvgPool(root, Ph(root.WithOpName("features"), Shape{2, 3}));
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_NE(root.status().message().find("features"), std::string::npos) << root.status();
  EXPECT_NE(root.status().message().find("[N,H,W,C]"), std::string::npos) << root.status();
}

// Runs `fetch` of the graph in `root` with `feeds`.
Tensor RunOne(const Scope& root, const FeedList& feeds, const std::string& fetch,
              const std::vector<std::string>& targets = {}) {
  EXPECT_TRUE(root.ok()) << root.status();
  auto session = NewDirectSession(root.graph());
  EXPECT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  const Status s = (*session)->Run(feeds, {fetch}, targets, &out);
  EXPECT_TRUE(s.ok()) << s;
  return s.ok() ? out[0] : Tensor();
}

TEST(NormBuildersTest, GlobalAvgPoolAveragesEachChannelOfEachImage) {
  Scope root = Scope::NewRootScope();
  // 2 images of 2x2 pixels with channels (v, 10 v), v = 1..4 and 5..8.
  std::vector<float> v;
  for (int i = 1; i <= 8; ++i) v.insert(v.end(), {float(i), 10.0f * i});
  const Output y = GlobalAvgPool(root, Const(root, Tensor::FromVector(v, Shape{2, 2, 2, 2})));
  EXPECT_TRUE(TensorsEqual(RunOne(root, {}, y.name()),
                           Tensor::FromVector<float>({2.5f, 25.0f, 6.5f, 65.0f}, Shape{2, 2})));
}

TEST(NormBuildersTest, FlattenReadsTheBatchSizeAtRunTimeWhenInnerDimsAreUnknown) {
  Scope root = Scope::NewRootScope();
  const Output x = Ph(root.WithOpName("x"), Shape{-1, -1, 2});
  const Output y = Flatten(root, x);
  std::vector<float> v(3 * 4 * 2);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  const Tensor out = RunOne(root, {{"x", Tensor::FromVector(v, Shape{3, 4, 2})}}, y.name());
  EXPECT_TRUE(TensorsEqual(out, Tensor::FromVector(v, Shape{3, 8})));
}

TEST(NormBuildersTest, AssignMovingAverageMovesTheVariableTowardsTheValue) {
  Scope root = Scope::NewRootScope();
  const Output var = Variable(root.WithOpName("moving"), Shape{2}, kF);
  Assign(root.WithOpName("init"), var, Tensor::FromVector<float>({1, -2}));
  const Output update =
      AssignMovingAverage(root.WithOpName("update"), var, Tensor::FromVector<float>({3, 2}), 0.9);
  EXPECT_EQ(update.node->name(), "update");
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = NewDirectSession(root.graph()).value();
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {"update"}, {}, &out).ok());
  // 1 * 0.9 + 3 * 0.1 = 1.2; -2 * 0.9 + 2 * 0.1 = -1.6.
  EXPECT_NEAR(out[0].data<float>()[0], 1.2f, 1e-6);
  EXPECT_NEAR(out[0].data<float>()[1], -1.6f, 1e-6);
  AssignMovingAverage(root, var, Tensor::FromVector<float>({0, 0}), 1.5);
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_NE(root.status().message().find("momentum"), std::string::npos) << root.status();
}

TEST(NormBuildersTest, InferenceDropoutIsTheIdentityWithAMaskOfOnes) {
  Scope root = Scope::NewRootScope();
  const Tensor x = Tensor::FromVector<float>({1, -2, 3, 4}, Shape{2, 2});
  const DropoutResult d = Dropout(root.WithOpName("drop"), Const(root, x), 0.25, 3, false);
  EXPECT_EQ(d.output.node->op(), "Identity");
  EXPECT_EQ(d.output.node->name(), "drop");
  EXPECT_TRUE(TensorsEqual(RunOne(root, {}, d.output.name()), x));
  EXPECT_TRUE(TensorsEqual(RunOne(root, {}, d.mask.name()),
                           Tensor::FromVector<float>({1, 1, 1, 1}, Shape{2, 2})));
}

TEST(NormBuildersTest, InferenceBatchNormUsesTheGivenStatistics) {
  Scope root = Scope::NewRootScope();
  const Tensor x = Tensor::FromVector<float>({1, 10, 3, 30}, Shape{2, 2});
  const FusedBatchNormResult bn = FusedBatchNorm(
      root, Const(root, x), Tensor::FromVector<float>({2, 1}), Tensor::FromVector<float>({0, 1}),
      Tensor::FromVector<float>({1, 10}), Tensor::FromVector<float>({4, 100}), 0.0, false);
  // (x - mean) / sqrt(variance) * scale + offset per channel.
  EXPECT_TRUE(TensorsEqual(RunOne(root, {}, bn.y.name()),
                           Tensor::FromVector<float>({0, 1, 2, 3}, Shape{2, 2})));
  EXPECT_TRUE(TensorsEqual(RunOne(root, {}, bn.batch_variance.name()),
                           Tensor::FromVector<float>({4, 100})));
}

}  // namespace
}  // namespace actorflow
