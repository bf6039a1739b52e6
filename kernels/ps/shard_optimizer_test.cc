// The shard's update rules against the graph optimizers they stand in for: the same
// gradients fed for several steps through training/optimizers/optimizer.h in a DirectSession
// must give the same variable values, in float32 and float64. And their slots as
// tensors: exported after some updates and imported into a fresh optimizer, they
// continue bit for bit.
#include "kernels/ps/shard_optimizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "graph/ops.h"
#include "graph/scope.h"
#include "kernels/direct_session.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/variables.h"

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
  auto session = NewDirectSession(root.graph()).value();
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

bool BitIdentical(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

std::unique_ptr<ShardOptimizer> Optimizer(const std::string& rule) {
  auto created = ShardOptimizer::Create(rule, 0.1);
  EXPECT_TRUE(created.ok()) << created.status();
  return std::move(created).value();
}

class ShardOptimizerSlotsTest : public ::testing::TestWithParam<std::tuple<std::string, DType>> {};

TEST_P(ShardOptimizerSlotsTest, ImportedSlotsContinueBitForBit) {
  const auto& [rule, dtype] = GetParam();
  auto original = Optimizer(rule);
  Tensor var = Make(dtype, kInitial);
  original->AddVariable("w", var);
  for (size_t step = 0; step + 1 < kGrads.size(); ++step) {
    original->Apply("w", &var, Make(dtype, kGrads[step]));
    original->FinishUpdate();
  }
  std::map<std::string, Tensor> slots = original->ExportSlots();
  std::vector<std::string> expected_names;
  for (const std::string& suffix : ShardOptimizer::SlotSuffixes(rule)) {
    expected_names.push_back("w/" + suffix);
  }
  std::vector<std::string> names;
  for (const auto& [name, slot] : slots) names.push_back(name);
  std::sort(expected_names.begin(), expected_names.end());
  EXPECT_EQ(names, expected_names);
  std::map<std::string, Tensor> frozen;  // the export's bytes, to see it is not written
  for (const auto& [name, slot] : slots) frozen[name] = slot.DeepCopy();

  auto restored = Optimizer(rule);
  Tensor copy = var.DeepCopy();
  restored->AddVariable("w", copy);
  ASSERT_TRUE(restored->ImportSlots(slots).ok());
  // Fresh slots do not give the same step: the import is what makes it exact.
  auto fresh = Optimizer(rule);
  Tensor fresh_var = var.DeepCopy();
  fresh->AddVariable("w", fresh_var);

  const Tensor next = Make(dtype, kGrads.back());
  original->Apply("w", &var, next);
  original->FinishUpdate();
  restored->Apply("w", &copy, next);
  restored->FinishUpdate();
  fresh->Apply("w", &fresh_var, next);
  EXPECT_TRUE(BitIdentical(var, copy)) << rule;
  EXPECT_FALSE(BitIdentical(var, fresh_var)) << rule;
  for (const auto& [name, slot] : slots) {
    EXPECT_TRUE(BitIdentical(slot, frozen.at(name))) << name << " changed after the export";
  }
}

INSTANTIATE_TEST_SUITE_P(Rules, ShardOptimizerSlotsTest,
                         ::testing::Combine(::testing::Values("momentum", "adam", "adagrad"),
                                            ::testing::Values(DType::kFloat32, DType::kFloat64)));

TEST(ShardOptimizerSlotsTest, SlotSuffixesNameEachRulesSlots) {
  EXPECT_TRUE(ShardOptimizer::SlotSuffixes("sgd").empty());
  EXPECT_EQ(ShardOptimizer::SlotSuffixes("momentum"), std::vector<std::string>{"Momentum"});
  EXPECT_EQ(ShardOptimizer::SlotSuffixes("adagrad"), std::vector<std::string>{"Adagrad"});
  EXPECT_EQ(ShardOptimizer::SlotSuffixes("adam"),
            (std::vector<std::string>{"Adam_m", "Adam_v", "Adam_beta1_power", "Adam_beta2_power"}));
  EXPECT_TRUE(Optimizer("sgd")->ExportSlots().empty());
  std::string var;
  EXPECT_TRUE(ShardOptimizer::SplitSlotName("dnn/w/Adam_m", ShardOptimizer::SlotSuffixes("adam"),
                                            &var));
  EXPECT_EQ(var, "dnn/w");
  EXPECT_FALSE(ShardOptimizer::SplitSlotName("dnn/w", ShardOptimizer::SlotSuffixes("adam"), &var));
}

TEST(ShardOptimizerSlotsTest, ASlotUnlikeItsVariableIsRejectedNamingIt) {
  auto adam = Optimizer("adam");
  adam->AddVariable("w", Make(DType::kFloat32, kInitial));
  std::map<std::string, Tensor> slots = adam->ExportSlots();
  slots["w/Adam_v"] = Tensor::FromVector<float>({1, 2, 3});  // [3], not [2,2]
  Status s = adam->ImportSlots(slots);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("'w/Adam_v'"), std::string::npos) << s;

  slots = adam->ExportSlots();
  slots["w/Adam_beta1_power"] = Tensor::Scalar<double>(0.5);  // float64 for a float32 var
  s = adam->ImportSlots(slots);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("'w/Adam_beta1_power'"), std::string::npos) << s;

  slots = adam->ExportSlots();
  slots.erase("w/Adam_m");
  s = adam->ImportSlots(slots);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("'w/Adam_m'"), std::string::npos) << s;

  auto momentum = Optimizer("momentum");
  momentum->AddVariable("w", Make(DType::kFloat32, kInitial));
  s = momentum->ImportSlots({{"v/Momentum", Make(DType::kFloat32, kInitial)}});
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("'v/Momentum'"), std::string::npos) << s;
}

TEST(ShardOptimizerSlotsTest, ARejectedImportChangesNothingAndNoSlotsKeepsFreshOnes) {
  auto momentum = Optimizer("momentum");
  momentum->AddVariable("a", Make(DType::kFloat32, kInitial));
  momentum->AddVariable("b", Make(DType::kFloat32, kInitial));
  Status s = momentum->ImportSlots({{"a/Momentum", Make(DType::kFloat32, {1, 1, 1, 1})},
                                    {"b/Momentum", Tensor::FromVector<float>({1})}});
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(momentum->ExportSlots().at("a/Momentum").ElementAsDouble(0), 0.0);
  ASSERT_TRUE(momentum->ImportSlots({{"a/Momentum", Make(DType::kFloat32, {1, 1, 1, 1})}}).ok());
  EXPECT_EQ(momentum->ExportSlots().at("a/Momentum").ElementAsDouble(0), 1.0);
  EXPECT_EQ(momentum->ExportSlots().at("b/Momentum").ElementAsDouble(0), 0.0);  // fresh
  EXPECT_TRUE(momentum->ImportSlots({}).ok());
}

TEST(ShardOptimizerTest, RejectsUnknownRulesAndBadRates) {
  auto unknown = ShardOptimizer::Create("rmsprop", 0.1);
  EXPECT_EQ(unknown.status().code(), Code::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("sgd, momentum, adam, adagrad"), std::string::npos);
  EXPECT_EQ(ShardOptimizer::Create("sgd", 0).status().code(), Code::kInvalidArgument);
}

// An update whose result falls below float's normal range gives zero on the shard as
// in the graph's kernel (both flush denormals, kernels/denormal.h), while this
// thread's own arithmetic still keeps them.
TEST(ShardOptimizerTest, FlushesADenormalUpdateToZeroAsTheGraphKernelDoes) {
  const double var0 = 3e-38, grad0 = 2e-38;  // 3e-38 - 1.0 * 2e-38 = 1e-38 < 1.18e-38
  Scope root = Scope::NewRootScope();
  auto var = CreateVariable(root, "w", Make(DType::kFloat32, {var0, var0, var0, var0}));
  ASSERT_TRUE(var.ok());
  Output grad = Placeholder(root.WithOpName("grad"), DType::kFloat32);
  auto sgd = MakeOptimizer("sgd", 1.0);
  ASSERT_TRUE(sgd.ok());
  ASSERT_TRUE((*sgd)->ApplyGradients(root.WithOpName("train"), {{grad, *var}}, Output()).ok());
  GlobalVariablesInitializer(root.WithOpName("init"));
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = NewDirectSession(root.graph()).value();
  std::vector<Tensor> graph_out;
  ASSERT_TRUE(session->Run({}, {}, {"init"}, &graph_out).ok());
  const Tensor g = Make(DType::kFloat32, {grad0, grad0, grad0, grad0});
  ASSERT_TRUE(session->Run({{"grad", g}}, {}, {"train"}, &graph_out).ok());
  ASSERT_TRUE(session->Run({}, {"w"}, {}, &graph_out).ok());

  auto optimizer = ShardOptimizer::Create("sgd", 1.0);
  ASSERT_TRUE(optimizer.ok());
  Tensor shard_var = Make(DType::kFloat32, {var0, var0, var0, var0});
  (*optimizer)->AddVariable("w", shard_var);
  (*optimizer)->Apply("w", &shard_var, g);
  (*optimizer)->FinishUpdate();
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(graph_out[0].data<float>()[i], 0.0f);
    EXPECT_EQ(shard_var.data<float>()[i], 0.0f);
  }
  volatile float a = 3e-38f, b = 2e-38f;
  EXPECT_GT(a - b, 0.0f);
}

}  // namespace
}  // namespace actorflow
