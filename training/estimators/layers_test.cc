#include "training/estimators/layers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "graph/ops.h"
#include "graph/status_testing.h"
#include "kernels/direct_session.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

// relu(x kernel + bias) computed by hand from the variables' values, against the
// layer's output: x [2, 3], 4 units.
TEST(DenseTest, ComputesActivationOfXTimesKernelPlusBias) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{-1, 3});
  std::vector<Output> variables;
  ASSERT_OK_AND_ASSIGN(Output y, Dense(root.NewSubScope("hidden"), x, 4, Activation::kRelu,
                                       /*seed=*/7, &variables));
  ASSERT_EQ(variables.size(), 2u);
  EXPECT_EQ(variables[0].node->name(), "hidden/kernel");
  EXPECT_EQ(variables[1].node->name(), "hidden/bias");
  EXPECT_EQ(y.shape().ToString(), Shape({-1, 4}).ToString());
  GlobalVariablesInitializer(root.WithOpName("init"));
  ASSERT_OK(root.status());

  ASSERT_OK_AND_ASSIGN(auto session, NewDirectSession(root.graph(), SessionOptions()));
  ASSERT_OK(session->Run({}, {}, {"init"}, nullptr));
  // A non-zero bias, so that its addition is checked too.
  ASSERT_OK(session->Run({{"hidden/bias", Tensor::FromVector<float>({0.5f, -0.5f, 0.25f, 0.f})}},
                         {}, {"hidden/bias/Assign"}, nullptr));
  const std::vector<float> xs = {1, -2, 0.5f, 3, 0, -1};
  Tensor xt = Tensor::FromVector<float>(xs);
  ASSERT_OK_AND_ASSIGN(xt, xt.Reshaped(Shape{2, 3}));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({{"x", xt}}, {y.name(), "hidden/kernel", "hidden/bias"}, {}, &out));
  const float* w = out[1].data<float>();
  const float* b = out[2].data<float>();
  for (int n = 0; n < 2; ++n) {
    for (int u = 0; u < 4; ++u) {
      double z = b[u];
      for (int f = 0; f < 3; ++f) z += xs[n * 3 + f] * w[f * 4 + u];
      EXPECT_NEAR(out[0].data<float>()[n * 4 + u], std::max(0.0, z), 1e-5) << n << "," << u;
    }
  }
}

TEST(DenseTest, VariablesAreTrainableAndInitialized) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root, DType::kFloat32, Shape{-1, 2});
  ASSERT_OK(Dense(root.NewSubScope("d"), x, 3).status());
  const auto& trainable = root.graph()->GetCollection(kTrainableVariablesCollection);
  EXPECT_THAT(trainable, ::testing::ElementsAre("d/kernel", "d/bias"));
}

TEST(DenseTest, RejectsAnInputWithoutAKnownFeatureCountAndBadUnits) {
  Scope root = Scope::NewRootScope();
  auto unknown = Placeholder(root.WithOpName("u"), DType::kFloat32, Shape{-1, -1});
  Status s = Dense(root.NewSubScope("a"), unknown, 3).status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'u"));
  auto x = Placeholder(root, DType::kFloat32, Shape{-1, 2});
  s = Dense(root.NewSubScope("b"), x, 0).status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("units"));
}

TEST(DenseTest, TwoLayersOfOneNameAreABuilderError) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root, DType::kFloat32, Shape{-1, 2});
  ASSERT_OK(Dense(root.NewSubScope("same"), x, 3).status());
  Status s = Dense(root.NewSubScope("same"), x, 3).status();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("same/kernel"));
}

TEST(ActivationTest, ParsesTheModelSpecNames) {
  ASSERT_OK_AND_ASSIGN(Activation a, ParseActivation("tanh"));
  EXPECT_EQ(a, Activation::kTanh);
  EXPECT_THAT(ParseActivation("gelu").status().message(), HasSubstr("gelu"));
}

}  // namespace
}  // namespace actorflow
