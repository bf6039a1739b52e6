// The shard's update rules against the graph optimizers they stand in for: the same
// gradients fed for several steps through training/optimizer.h in a DirectSession
// must give the same variable values, in float32 and float64.
#include "actors/shard_optimizer.h"

#include <gtest/gtest.h>

#include "graph/ops.h"
#include "graph/scope.h"
#include "kernels/direct_session.h"
#include "training/optimizer.h"
#include "training/variables.h"

namespace actorflow {
namespace {

const std::vector<double> kInitial = {1.0, -2.0, 0.5, 3.0};
const std::vector<std::vector<double>> kGrads = {
    {0.5, -1.0, 2.0, 0.0}, {-0.25, 0.75, 1.5, -3.0}, {1.0, 1.0, -0.5, 0.125}};

Tensor Make(DType dtype, const std::vector<double>& v) {
  Tensor t(dtype, Shape{2, 2});
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::kFloat32) {
      t.data<float>()[i] = static_cast<float>(v[i]);
    } else {
      t.data<double>()[i] = v[i];
    }
  }
  return t;
}

// The variable after each step, as the graph optimizer computes it.
std::vector<Tensor> GraphSteps(const std::string& rule, double lr, DType dtype) {
  Scope root = Scope::NewRootScope();
  auto var = CreateVariable(root, "w", Make(dtype, kInitial));
  EXPECT_TRUE(var.ok());
  Output grad = Placeholder(root.WithOpName("grad"), dtype);
  auto optimizer = MakeOptimizer(rule, lr);
  EXPECT_TRUE(optimizer.ok());
  auto train = (*optimizer)->ApplyGradients(root.WithOpName("train"), {{grad, *var}}, Output());
  EXPECT_TRUE(train.ok()) << train.status();
  GlobalVariablesInitializer(root.WithOpName("init"));
  EXPECT_TRUE(root.ok());
  auto session = NewDirectSession(root.graph());
  std::vector<Tensor> out;
  EXPECT_TRUE(session->Run({}, {}, {"init"}, &out).ok());
  std::vector<Tensor> steps;
  for (const auto& g : kGrads) {
    EXPECT_TRUE(session->Run({{"grad", Make(dtype, g)}}, {}, {"train"}, &out).ok());
    EXPECT_TRUE(session->Run({}, {"w"}, {}, &out).ok());
    steps.push_back(out[0]);
  }
  return steps;
}

class ShardOptimizerParityTest : public ::testing::TestWithParam<std::tuple<std::string, DType>> {};

TEST_P(ShardOptimizerParityTest, FollowsTheGraphOptimizerStepByStep) {
  const auto& [rule, dtype] = GetParam();
  const double lr = 0.1;
  std::vector<Tensor> expected = GraphSteps(rule, lr, dtype);
  auto optimizer = ShardOptimizer::Create(rule, lr);
  ASSERT_TRUE(optimizer.ok());
  Tensor var = Make(dtype, kInitial);
  Tensor reader = var;  // a pull still holding the buffer: it must not change
  (*optimizer)->AddVariable("w", var);
  for (size_t step = 0; step < kGrads.size(); ++step) {
    (*optimizer)->Apply("w", &var, Make(dtype, kGrads[step]));
    (*optimizer)->FinishUpdate();
    ASSERT_EQ(expected.size(), kGrads.size());
    for (int64_t i = 0; i < var.NumElements(); ++i) {
      EXPECT_NEAR(var.ElementAsDouble(i), expected[step].ElementAsDouble(i),
                  dtype == DType::kFloat32 ? 1e-6 : 1e-12)
          << rule << " step " << step << " element " << i;
    }
  }
  EXPECT_EQ(reader.ElementAsDouble(0), kInitial[0]);
}

INSTANTIATE_TEST_SUITE_P(Rules, ShardOptimizerParityTest,
                         ::testing::Combine(::testing::Values("sgd", "momentum", "adam", "adagrad"),
                                            ::testing::Values(DType::kFloat32, DType::kFloat64)));

TEST(ShardOptimizerTest, RejectsUnknownRulesAndBadRates) {
  auto unknown = ShardOptimizer::Create("rmsprop", 0.1);
  EXPECT_EQ(unknown.status().code(), Code::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("sgd, momentum, adam, adagrad"), std::string::npos);
  EXPECT_EQ(ShardOptimizer::Create("sgd", 0).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace actorflow
