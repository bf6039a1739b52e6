#include "training/estimators/layer_classes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "graph/ops.h"
#include "graph/status_testing.h"
#include "kernels/direct_session.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Tensor Filled(const Shape& shape, const std::vector<float>& values) {
  Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    t.data<float>()[i] = values[static_cast<size_t>(i) % values.size()];
  }
  return t;
}

TEST(LayerClassesTest, ASecondCallReusesTheVariablesUnderItsOwnOps) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{-1, 6, 6, 2});
  layers::Conv2D conv("conv", {.filters = 4, .kernel_size = 3, .seed = 3});
  ASSERT_OK_AND_ASSIGN(Output a, conv(root, x, /*training=*/true));
  ASSERT_OK_AND_ASSIGN(Output b, conv(root, x, /*training=*/false));
  ASSERT_EQ(conv.variables().size(), 2u);
  EXPECT_EQ(conv.variables()[0].node->name(), "conv/kernel");
  EXPECT_EQ(conv.variables()[0].shape().ToString(), Shape({3, 3, 2, 4}).ToString());
  EXPECT_EQ(a.shape().ToString(), Shape({-1, 6, 6, 4}).ToString());
  EXPECT_NE(a.node, b.node);
  EXPECT_THAT(root.graph()->GetCollection(kTrainableVariablesCollection),
              ElementsAre("conv/kernel", "conv/bias"));
  GlobalVariablesInitializer(root.WithOpName("init"));
  ASSERT_OK(root.status());

  ASSERT_OK_AND_ASSIGN(auto session, NewDirectSession(root.graph(), SessionOptions()));
  ASSERT_OK(session->Run({}, {}, {"init"}, nullptr));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({{"x", Filled(Shape{2, 6, 6, 2}, {0.5f, -1.f, 2.f})}},
                         {a.name(), b.name()}, {}, &out));
  ASSERT_EQ(out[0].NumElements(), out[1].NumElements());
  for (int64_t i = 0; i < out[0].NumElements(); ++i) {
    EXPECT_EQ(out[0].data<float>()[i], out[1].data<float>()[i]) << i;
  }
}

TEST(LayerClassesTest, ShapesTheLayerWasNotBuiltForAreRefusedByName) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root, DType::kFloat32, Shape{-1, 4, 4, 2});
  auto y = Placeholder(root, DType::kFloat32, Shape{-1, 4, 4, 3});
  auto flat = Placeholder(root, DType::kFloat32, Shape{-1, 8});
  layers::Conv2D conv("conv", {.filters = 2});
  ASSERT_OK(conv(root, x).status());
  Status other = conv(root, y).status();
  EXPECT_EQ(other.code(), Code::kInvalidArgument);
  EXPECT_THAT(other.message(), HasSubstr("conv: built for inputs with 2"));
  EXPECT_THAT(conv(root, flat).status().message(), HasSubstr("expected float32 [N, H, W, C]"));
  layers::BatchNormalization bn("bn", {.momentum = 1.5});
  EXPECT_THAT(bn(root, x, true).status().message(), HasSubstr("momentum must be in [0, 1]"));
  EXPECT_THAT(layers::Dropout(1.0, 1)(root, x, true).status().message(),
              HasSubstr("rate must be in [0, 1)"));
}

// x [4, 1, 1, 2] with channel 0 = {1, 2, 3, 4}, channel 1 = {10, 10, 10, 10}.
Tensor BatchOfTwoChannels() {
  Tensor t(DType::kFloat32, Shape{4, 1, 1, 2});
  const float values[] = {1, 10, 2, 10, 3, 10, 4, 10};
  for (int i = 0; i < 8; ++i) t.data<float>()[i] = values[i];
  return t;
}

TEST(LayerClassesTest, BatchNormalizationTrainsOnBatchStatisticsAndInfersOnMovingOnes) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{-1, 1, 1, 2});
  layers::BatchNormalization bn("bn", {.momentum = 0.9, .epsilon = 0.001});
  ASSERT_OK_AND_ASSIGN(Output train, bn(root, x, /*training=*/true));
  ASSERT_OK_AND_ASSIGN(Output infer, bn(root, x, /*training=*/false));
  EXPECT_THAT(root.graph()->GetCollection(kTrainableVariablesCollection),
              ElementsAre("bn/gamma", "bn/beta"));
  const std::vector<Output> updates = UpdateOps(*root.graph());
  ASSERT_EQ(updates.size(), 2u);
  GlobalVariablesInitializer(root.WithOpName("init"));
  ASSERT_OK(root.status());
  ASSERT_OK_AND_ASSIGN(auto session, NewDirectSession(root.graph(), SessionOptions()));
  ASSERT_OK(session->Run({}, {}, {"init"}, nullptr));

  std::vector<Tensor> out;
  ASSERT_OK(session->Run({{"x", BatchOfTwoChannels()}}, {train.name(), infer.name()},
                         {updates[0].node->name(), updates[1].node->name()}, &out));
  // Channel 0: mean 2.5, biased variance 1.25 -> (x - 2.5) / sqrt(1.25 + epsilon).
  EXPECT_NEAR(out[0].data<float>()[0], (1 - 2.5) / std::sqrt(1.251), 1e-5);
  EXPECT_NEAR(out[0].data<float>()[6], (4 - 2.5) / std::sqrt(1.251), 1e-5);
  EXPECT_NEAR(out[0].data<float>()[1], 0.0, 1e-5);  // a constant channel
  // Inference before any update read the initial moving averages: mean 0, variance 1.
  EXPECT_NEAR(out[1].data<float>()[0], 1.0 / std::sqrt(1.001), 1e-5);

  ASSERT_OK(session->Run({}, {"bn/moving_mean", "bn/moving_variance"}, {}, &out));
  // moving = 0.9 * initial + 0.1 * batch; the variance is the unbiased 5/3.
  EXPECT_NEAR(out[0].data<float>()[0], 0.1 * 2.5, 1e-5);
  EXPECT_NEAR(out[0].data<float>()[1], 0.1 * 10, 1e-5);
  EXPECT_NEAR(out[1].data<float>()[0], 0.9 + 0.1 * 5.0 / 3.0, 1e-5);
  EXPECT_NEAR(out[1].data<float>()[1], 0.9, 1e-5);
  ASSERT_OK(session->Run({{"x", BatchOfTwoChannels()}}, {infer.name()}, {}, &out));
  EXPECT_NEAR(out[0].data<float>()[0], (1 - 0.25) / std::sqrt(0.9 + 0.5 / 3.0 + 0.001), 1e-5);
}

TEST(LayerClassesTest, DropoutDropsOnlyWhenTraining) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{-1, 1000});
  layers::Dropout dropout(0.4, /*seed=*/9);
  ASSERT_OK_AND_ASSIGN(Output infer, dropout(root, x, /*training=*/false));
  EXPECT_EQ(infer.node, x.node);  // inference adds nothing
  ASSERT_OK_AND_ASSIGN(Output train, dropout(root, x, /*training=*/true));
  ASSERT_OK(root.status());
  ASSERT_OK_AND_ASSIGN(auto session, NewDirectSession(root.graph(), SessionOptions()));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({{"x", Filled(Shape{1, 1000}, {1.f})}}, {train.name()}, {}, &out));
  int kept = 0;
  for (int i = 0; i < 1000; ++i) {
    const float v = out[0].data<float>()[i];
    if (v != 0.0f) {
      EXPECT_NEAR(v, 1.0 / 0.6, 1e-5);
      ++kept;
    }
  }
  EXPECT_GT(kept, 540);  // 600 expected; 5 standard deviations is about 77
  EXPECT_LT(kept, 660);
}

// A tiny conv + batch norm + dense network on two classes of 4x4 images (bright
// top half or bright bottom half) learns them: the loss falls and inference is right.
TEST(LayerClassesTest, AConvNetWithBatchNormLearns) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{-1, 4, 4, 1});
  auto labels = Placeholder(root.WithOpName("labels"), DType::kInt32, Shape{-1});
  layers::Conv2D conv("conv", {.filters = 4, .kernel_size = 3, .seed = 5});
  layers::BatchNormalization bn("bn");
  layers::Dense logits("logits", {.units = 2, .seed = 6});
  auto forward = [&](bool training) -> StatusOr<Output> {
    AF_ASSIGN_OR_RETURN(Output h, conv(root, x, training));
    AF_ASSIGN_OR_RETURN(h, bn(root, h, training));
    AF_ASSIGN_OR_RETURN(h, layers::MaxPooling2D(root, Relu(root, h), 2, 2));
    return logits(root, Flatten(root, h), training);
  };
  ASSERT_OK_AND_ASSIGN(Output train_logits, forward(true));
  ASSERT_OK_AND_ASSIGN(Output infer_logits, forward(false));
  Output loss = Mean(root, SparseSoftmaxCrossEntropyWithLogits(root, train_logits, labels).loss);
  Output predicted = ArgMax(root, infer_logits, 1);
  ASSERT_OK_AND_ASSIGN(auto adam, MakeOptimizer("adam", 0.05));
  ASSERT_OK_AND_ASSIGN(Output step, adam->Minimize(root, loss));
  std::vector<Output> deps = UpdateOps(*root.graph());
  deps.push_back(step);
  NoOp(root.WithOpName("train").WithControlDependencies(deps));
  GlobalVariablesInitializer(root.WithOpName("init"));
  ASSERT_OK(root.status());

  Tensor images(DType::kFloat32, Shape{8, 4, 4, 1});
  Tensor classes(DType::kInt32, Shape{8});
  for (int n = 0; n < 8; ++n) {
    classes.data<int32_t>()[n] = n % 2;
    for (int p = 0; p < 16; ++p) {
      const bool top = p < 8;
      images.data<float>()[n * 16 + p] = (top == (n % 2 == 0)) ? 1.0f + 0.1f * n : 0.0f;
    }
  }
  ASSERT_OK_AND_ASSIGN(auto session, NewDirectSession(root.graph(), SessionOptions()));
  ASSERT_OK(session->Run({}, {}, {"init"}, nullptr));
  std::vector<Tensor> out;
  const FeedList feeds = {{"x", images}, {"labels", classes}};
  ASSERT_OK(session->Run(feeds, {loss.name()}, {}, &out));
  const double first = out[0].ElementAsDouble(0);
  for (int i = 0; i < 60; ++i) ASSERT_OK(session->Run(feeds, {}, {"train"}, nullptr));
  ASSERT_OK(session->Run(feeds, {loss.name(), predicted.name()}, {}, &out));
  EXPECT_LT(out[0].ElementAsDouble(0), first / 4);
  for (int n = 0; n < 8; ++n) EXPECT_EQ(out[1].ElementAsDouble(n), n % 2) << n;
}

}  // namespace
}  // namespace actorflow
