// Optimizers end to end through a DirectSession: each one minimizes (x - 3)^2, linear
// regression recovers its weights, the global step counts train-op runs, and the
// errors for an unknown optimizer, nothing to train and no gradient.

#include "training/optimizers/optimizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "graph/ops.h"
#include "kernels/direct_session.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

// Runs `target` `steps` times.
void RunSteps(Session* session, const std::string& target, int steps, const FeedList& feeds = {}) {
  for (int i = 0; i < steps; ++i) {
    Status s = session->Run(feeds, {}, {target}, nullptr);
    ASSERT_TRUE(s.ok()) << "step " << i << ": " << s;
  }
}

double FetchScalar(Session* session, const std::string& name) {
  std::vector<Tensor> out;
  Status s = session->Run({}, {name}, {}, &out);
  EXPECT_TRUE(s.ok()) << s;
  return s.ok() ? out[0].ElementAsDouble(0) : NAN;
}

struct QuadraticCase {
  std::string name;
  std::function<std::unique_ptr<Optimizer>()> make;
  DType dtype;
  int steps;
  double tolerance;
};

void PrintTo(const QuadraticCase& c, std::ostream* os) { *os << c.name; }

class QuadraticTest : public ::testing::TestWithParam<QuadraticCase> {};

TEST_P(QuadraticTest, MinimizingXMinusThreeSquaredConvergesToThree) {
  const QuadraticCase& c = GetParam();
  Scope root = Scope::NewRootScope();
  const Tensor zero = c.dtype == DType::kFloat32 ? Tensor::Scalar(0.0f) : Tensor::Scalar(0.0);
  const Tensor three = c.dtype == DType::kFloat32 ? Tensor::Scalar(3.0f) : Tensor::Scalar(3.0);
  auto x = CreateVariable(root, "x", zero);
  ASSERT_TRUE(x.ok()) << x.status();
  auto loss = Square(root.WithOpName("loss"), Sub(root, *x, three));
  std::unique_ptr<Optimizer> optimizer = c.make();
  auto train = optimizer->Minimize(root.WithOpName("train"), loss, Output());
  ASSERT_TRUE(train.ok()) << train.status();
  EXPECT_EQ(train->node->name(), "train");
  EXPECT_EQ(train->node->op(), "NoOp");
  GlobalVariablesInitializer(root.WithOpName("init"));
  ASSERT_TRUE(root.ok()) << root.status();

  auto session = NewDirectSession(root.graph()).value();
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  const double initial_loss = FetchScalar(session.get(), "loss");
  RunSteps(session.get(), "train", c.steps);
  EXPECT_NEAR(FetchScalar(session.get(), "x"), 3.0, c.tolerance);
  EXPECT_LT(FetchScalar(session.get(), "loss"), initial_loss * 1e-3);
}

INSTANTIATE_TEST_SUITE_P(
    EveryOptimizer, QuadraticTest,
    ::testing::Values(
        QuadraticCase{"sgd", [] { return std::make_unique<GradientDescentOptimizer>(0.1); },
                      DType::kFloat32, 100, 1e-4},
        QuadraticCase{"sgd_float64", [] { return std::make_unique<GradientDescentOptimizer>(0.1); },
                      DType::kFloat64, 100, 1e-8},
        QuadraticCase{"momentum", [] { return std::make_unique<MomentumOptimizer>(0.05, 0.9); },
                      DType::kFloat32, 300, 1e-3},
        QuadraticCase{"nesterov",
                      [] { return std::make_unique<MomentumOptimizer>(0.05, 0.9, true); },
                      DType::kFloat32, 300, 1e-3},
        QuadraticCase{"adam", [] { return std::make_unique<AdamOptimizer>(0.1); }, DType::kFloat32,
                      500, 1e-2},
        QuadraticCase{"adam_float64", [] { return std::make_unique<AdamOptimizer>(0.1); },
                      DType::kFloat64, 500, 1e-2},
        QuadraticCase{"adagrad", [] { return std::make_unique<AdagradOptimizer>(1.0); },
                      DType::kFloat32, 300, 1e-3}),
    [](const ::testing::TestParamInfo<QuadraticCase>& info) { return info.param.name; });

// y = X w + b for w = [2, -3, 0.5], b = 1 on 64 random rows of X [64,3].
class LinearRegressionTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LinearRegressionTest, RecoversTheWeightsOfSyntheticData) {
  const std::vector<float> true_w = {2.0f, -3.0f, 0.5f};
  const float true_b = 1.0f;
  const int n = 64;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> xs(n * 3), ys(n);
  for (int i = 0; i < n; ++i) {
    ys[i] = true_b;
    for (int j = 0; j < 3; ++j) {
      xs[i * 3 + j] = uniform(rng);
      ys[i] += xs[i * 3 + j] * true_w[j];
    }
  }

  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{-1, 3});
  auto y = Placeholder(root.WithOpName("y"), DType::kFloat32, Shape{-1, 1});
  auto w = CreateVariable(root, "w", Tensor::FromVector<float>({0, 0, 0}, {3, 1}));
  auto b = CreateVariable(root, "b", Tensor::FromVector<float>({0}));
  ASSERT_TRUE(w.ok() && b.ok());
  auto prediction = Add(root, MatMul(root, x, *w), *b);  // [?,1]
  auto loss = Mean(root.WithOpName("loss"), Square(root, Sub(root, prediction, y)));
  auto optimizer = MakeOptimizer(GetParam(), GetParam() == "adagrad" ? 0.5 : 0.1);
  ASSERT_TRUE(optimizer.ok()) << optimizer.status();
  auto step = CreateGlobalStep(root);
  ASSERT_TRUE(step.ok());
  auto train = (*optimizer)->Minimize(root.WithOpName("train"), loss, *step);
  ASSERT_TRUE(train.ok()) << train.status();
  GlobalVariablesInitializer(root.WithOpName("init"));
  ASSERT_TRUE(root.ok()) << root.status();

  auto session = NewDirectSession(root.graph()).value();
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  const FeedList feeds = {{"x", Tensor::FromVector<float>(xs, {n, 3})},
                          {"y", Tensor::FromVector<float>(ys, {n, 1})}};
  RunSteps(session.get(), "train", 600, feeds);

  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run(feeds, {"w", "b", "loss", "global_step"}, {}, &out).ok());
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(out[0].data<float>()[j], true_w[j], 1e-2) << "w" << j;
  EXPECT_NEAR(out[1].data<float>()[0], true_b, 1e-2);
  EXPECT_LT(out[2].data<float>()[0], 1e-4);
  EXPECT_EQ(out[3].data<int64_t>()[0], 600);
}

INSTANTIATE_TEST_SUITE_P(EveryOptimizer, LinearRegressionTest,
                         ::testing::Values("sgd", "momentum", "adam", "adagrad"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// A graph minimizing (x - 3)^2 from x = 0 with plain gradient descent (lr 0.1).
struct QuadraticGraph {
  Scope root = Scope::NewRootScope();
  Output x;
  Output loss;

  QuadraticGraph() {
    x = *CreateVariable(root, "x", 0.0f);
    loss = Square(root.WithOpName("loss"), Sub(root, x, 3.0f));
  }
};

TEST(OptimizerTest, TheGlobalStepIncrementsOncePerTrainOpRun) {
  QuadraticGraph g;
  auto step = CreateGlobalStep(g.root);
  ASSERT_TRUE(step.ok());
  GradientDescentOptimizer sgd(0.1);
  auto train = sgd.Minimize(g.root.WithOpName("train"), g.loss, *step);
  ASSERT_TRUE(train.ok()) << train.status();
  GlobalVariablesInitializer(g.root.WithOpName("init"));
  auto session = NewDirectSession(g.root.graph()).value();
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  for (int64_t i = 1; i <= 5; ++i) {
    ASSERT_TRUE(session->Run({}, {}, {"train"}, nullptr).ok());
    std::vector<Tensor> out;
    ASSERT_TRUE(session->Run({}, {"global_step"}, {}, &out).ok());
    EXPECT_EQ(out[0].data<int64_t>()[0], i);
  }
}

TEST(OptimizerTest, ALossFetchedWithTheTrainOpIsTheLossBeforeTheStep) {
  QuadraticGraph g;
  GradientDescentOptimizer sgd(0.1);
  ASSERT_TRUE(sgd.Minimize(g.root.WithOpName("train"), g.loss, Output()).ok());
  GlobalVariablesInitializer(g.root.WithOpName("init"));
  auto session = NewDirectSession(g.root.graph()).value();
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  // x: 0 -> 0.6 -> 1.08 (x -= 0.1 * 2 (x - 3)); loss (x - 3)^2 before each step.
  for (double want : {9.0, 5.76, 3.6864}) {
    std::vector<Tensor> out;
    ASSERT_TRUE(session->Run({}, {"loss"}, {"train"}, &out).ok());
    EXPECT_NEAR(out[0].data<float>()[0], want, 1e-4);
  }
  EXPECT_NEAR(FetchScalar(session.get(), "x"), 1.464, 1e-5);
}

TEST(OptimizerTest, EveryUpdateUsesGradientsOfTheValuesBeforeTheStep) {
  // loss = (a b - 6)^2 from a = 1, b = 2: r = a b - 6 = -4, dloss/da = 2 r b = -16 and
  // dloss/db = 2 r a = -8, both from the old values; so a = 1.16, b = 2.08 with lr 0.01.
  Scope root = Scope::NewRootScope();
  auto a = CreateVariable(root, "a", 1.0f);
  auto b = CreateVariable(root, "b", 2.0f);
  ASSERT_TRUE(a.ok() && b.ok());
  auto loss = Square(root.WithOpName("loss"), Sub(root, Mul(root, *a, *b), 6.0f));
  GradientDescentOptimizer sgd(0.01);
  ASSERT_TRUE(sgd.Minimize(root.WithOpName("train"), loss, Output()).ok());
  GlobalVariablesInitializer(root.WithOpName("init"));
  auto session = NewDirectSession(root.graph()).value();
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  RunSteps(session.get(), "train", 1);
  EXPECT_NEAR(FetchScalar(session.get(), "a"), 1.16, 1e-6);
  EXPECT_NEAR(FetchScalar(session.get(), "b"), 2.08, 1e-6);
}

TEST(OptimizerTest, SlotsAreNonTrainableVariablesNamedAfterTheirVariable) {
  QuadraticGraph g;
  AdamOptimizer adam(0.1);
  ASSERT_TRUE(adam.Minimize(g.root.WithOpName("train"), g.loss, Output()).ok());
  const Graph& graph = *g.root.graph();
  using Names = std::vector<std::string>;
  EXPECT_EQ(graph.GetCollection(kTrainableVariablesCollection), (Names{"x"}));
  const auto& all = graph.GetCollection(kVariablesCollection);
  for (const char* name : {"x/Adam_m", "x/Adam_v", "beta1_power", "beta2_power"}) {
    EXPECT_NE(std::find(all.begin(), all.end(), name), all.end()) << name;
  }
  auto m = adam.GetSlot(graph, g.x, "Adam_m");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->node->name(), "x/Adam_m");
  EXPECT_EQ(adam.GetSlot(graph, g.x, "Momentum").status().code(), Code::kNotFound);

  MomentumOptimizer momentum(0.1, 0.9);
  ASSERT_TRUE(momentum.Minimize(g.root.WithOpName("train2"), g.loss, Output()).ok());
  EXPECT_NE(graph.FindNode("x/Momentum"), nullptr);
}

TEST(OptimizerTest, AdamsBetaPowersAreMultipliedAfterEachStep) {
  QuadraticGraph g;
  AdamOptimizer adam(0.1, 0.9, 0.999);
  ASSERT_TRUE(adam.Minimize(g.root.WithOpName("train"), g.loss, Output()).ok());
  GlobalVariablesInitializer(g.root.WithOpName("init"));
  auto session = NewDirectSession(g.root.graph()).value();
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  RunSteps(session.get(), "train", 3);
  EXPECT_NEAR(FetchScalar(session.get(), "beta1_power"), std::pow(0.9, 4), 1e-6);
  EXPECT_NEAR(FetchScalar(session.get(), "beta2_power"), std::pow(0.999, 4), 1e-6);
  // The first Adam step moves x by lr towards 3 (m / sqrt(v) = sign(grad)): with three
  // steps of at most lr each, x lies in (0, 0.3].
  const double x = FetchScalar(session.get(), "x");
  EXPECT_GT(x, 0.0);
  EXPECT_LE(x, 0.3 + 1e-6);
}

TEST(OptimizerTest, VariablesTheLossDoesNotDependOnAreLeftAlone) {
  QuadraticGraph g;
  auto unrelated = CreateVariable(g.root, "unrelated", 5.0f);
  auto frozen = CreateVariable(g.root, "frozen", 1.0f, /*trainable=*/false);
  ASSERT_TRUE(unrelated.ok() && frozen.ok());
  // The loss depends on the non-trainable variable too; by default only trainable
  // variables are optimized.
  auto loss = Add(g.root.WithOpName("total_loss"), g.loss, Square(g.root, *frozen));
  MomentumOptimizer momentum(0.1, 0.9);
  ASSERT_TRUE(momentum.Minimize(g.root.WithOpName("train"), loss, Output()).ok());
  EXPECT_EQ(g.root.graph()->FindNode("unrelated/Momentum"), nullptr);
  EXPECT_EQ(g.root.graph()->FindNode("frozen/Momentum"), nullptr);
  GlobalVariablesInitializer(g.root.WithOpName("init"));
  auto session = NewDirectSession(g.root.graph()).value();
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  RunSteps(session.get(), "train", 3);
  EXPECT_EQ(FetchScalar(session.get(), "unrelated"), 5.0);
  EXPECT_EQ(FetchScalar(session.get(), "frozen"), 1.0);
  EXPECT_NE(FetchScalar(session.get(), "x"), 0.0);
}

TEST(OptimizerTest, AnExplicitVarListLimitsTheUpdate) {
  Scope root = Scope::NewRootScope();
  auto a = CreateVariable(root, "a", 0.0f);
  auto b = CreateVariable(root, "b", 0.0f);
  ASSERT_TRUE(a.ok() && b.ok());
  auto loss = Add(root.WithOpName("loss"), Square(root, Sub(root, *a, 1.0f)),
                  Square(root, Sub(root, *b, 2.0f)));
  GradientDescentOptimizer sgd(0.1);
  ASSERT_TRUE(sgd.Minimize(root.WithOpName("train"), loss, Output(), {*b}).ok());
  GlobalVariablesInitializer(root.WithOpName("init"));
  auto session = NewDirectSession(root.graph()).value();
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  RunSteps(session.get(), "train", 1);
  EXPECT_EQ(FetchScalar(session.get(), "a"), 0.0);
  EXPECT_NEAR(FetchScalar(session.get(), "b"), 0.4, 1e-6);
}

TEST(OptimizerTest, MakeOptimizerBuildsEachKnownOptimizer) {
  for (const char* name : {"sgd", "momentum", "adam", "adagrad"}) {
    auto optimizer = MakeOptimizer(name, 0.01);
    ASSERT_TRUE(optimizer.ok()) << name << ": " << optimizer.status();
    EXPECT_NE(*optimizer, nullptr);
  }
  EXPECT_EQ((*MakeOptimizer("sgd", 0.1))->name(), "GradientDescent");
  EXPECT_EQ((*MakeOptimizer("adam", 0.1))->name(), "Adam");
}

TEST(OptimizerTest, AnUnknownOptimizerIsInvalidArgumentListingTheValidOnes) {
  auto optimizer = MakeOptimizer("rmsprop", 0.1);
  ASSERT_FALSE(optimizer.ok());
  EXPECT_EQ(optimizer.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(optimizer.status().message(), HasSubstr("'rmsprop'")) << optimizer.status();
  EXPECT_THAT(optimizer.status().message(), HasSubstr("sgd, momentum, adam, adagrad"))
      << optimizer.status();
}

TEST(OptimizerTest, ANonPositiveLearningRateIsInvalidArgument) {
  EXPECT_EQ(MakeOptimizer("sgd", 0.0).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(MakeOptimizer("adam", -1.0).status().code(), Code::kInvalidArgument);
}

TEST(OptimizerTest, MinimizeWithNoTrainableVariablesFailsClearly) {
  Scope root = Scope::NewRootScope();
  auto frozen = CreateVariable(root, "frozen", 1.0f, /*trainable=*/false);
  ASSERT_TRUE(frozen.ok());
  auto loss = Square(root.WithOpName("loss"), *frozen);
  GradientDescentOptimizer sgd(0.1);
  const int nodes_before = root.graph()->num_nodes();
  auto train = sgd.Minimize(root.WithOpName("train"), loss, Output());
  ASSERT_FALSE(train.ok());
  EXPECT_EQ(train.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(train.status().message(), HasSubstr("no variables to optimize")) << train.status();
  EXPECT_EQ(root.graph()->num_nodes(), nodes_before);
}

TEST(OptimizerTest, MinimizeOfALossThatDependsOnNoVariableFailsNamingThem) {
  Scope root = Scope::NewRootScope();
  ASSERT_TRUE(CreateVariable(root, "w", 1.0f).ok());
  auto loss = Square(root.WithOpName("loss"), Const(root, 2.0f));
  GradientDescentOptimizer sgd(0.1);
  auto train = sgd.Minimize(root.WithOpName("train"), loss, Output());
  ASSERT_FALSE(train.ok());
  EXPECT_EQ(train.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(train.status().message(), HasSubstr("no gradients")) << train.status();
  EXPECT_THAT(train.status().message(), HasSubstr("'w'")) << train.status();
}

TEST(OptimizerTest, ApplyGradientsRejectsAMissingGradientAndANonVariable) {
  QuadraticGraph g;
  GradientDescentOptimizer sgd(0.1);
  auto missing = sgd.ApplyGradients(g.root, {{Output(), g.x}}, Output());
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("no gradient for variable 'x'"))
      << missing.status();
  auto not_a_variable = sgd.ApplyGradients(g.root, {{g.loss, g.loss}}, Output());
  ASSERT_FALSE(not_a_variable.ok());
  EXPECT_THAT(not_a_variable.status().message(), HasSubstr("'loss'")) << not_a_variable.status();
  EXPECT_EQ(sgd.ApplyGradients(g.root, {}, Output()).status().code(), Code::kInvalidArgument);
}

TEST(OptimizerTest, ApplyGradientsWithAFedGradientUpdatesTheVariable) {
  QuadraticGraph g;
  auto grad = Placeholder(g.root.WithOpName("grad"), DType::kFloat32, Shape{});
  auto step = CreateGlobalStep(g.root);
  ASSERT_TRUE(step.ok());
  GradientDescentOptimizer sgd(0.5);
  auto train = sgd.ApplyGradients(g.root.WithOpName("apply"), {{grad, g.x}}, *step);
  ASSERT_TRUE(train.ok()) << train.status();
  GlobalVariablesInitializer(g.root.WithOpName("init"));
  auto session = NewDirectSession(g.root.graph()).value();
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  Status s = session->Run({{"grad", Tensor::Scalar(4.0f)}}, {}, {"apply"}, nullptr);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(FetchScalar(session.get(), "x"), -2.0);
  EXPECT_EQ(FetchScalar(session.get(), "global_step"), 1.0);
}

// tf.train.exponential_decay: with lr 1, rate 0.5 and decay_steps 2, gradient descent
// on loss = w (gradient 1) moves w by 0.5^(t/2) at global step t.
TEST(LearningRateDecayTest, EachStepUsesTheRateOfItsGlobalStep) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    Scope root = Scope::NewRootScope();
    const Tensor zero = dtype == DType::kFloat32 ? Tensor::Scalar(0.0f) : Tensor::Scalar(0.0);
    auto w = CreateVariable(root, "w", zero);
    ASSERT_TRUE(w.ok()) << w.status();
    auto step = CreateGlobalStep(root);
    ASSERT_TRUE(step.ok()) << step.status();
    GradientDescentOptimizer sgd(1.0);
    ASSERT_TRUE(sgd.SetLearningRateDecay({2, 0.5}).ok());
    auto train = sgd.Minimize(root.WithOpName("train"), Identity(root, *w), *step);
    ASSERT_TRUE(train.ok()) << train.status();
    GlobalVariablesInitializer(root.WithOpName("init"));
    ASSERT_TRUE(root.ok()) << root.status();
    auto session = NewDirectSession(root.graph()).value();
    RunSteps(session.get(), "init", 1);
    double expected = 0;
    for (int t = 0; t < 5; ++t) {
      RunSteps(session.get(), "train", 1);
      expected -= std::pow(0.5, t / 2.0);
      EXPECT_NEAR(FetchScalar(session.get(), "w"), expected, 1e-6) << "after step " << t;
    }
    EXPECT_EQ(FetchScalar(session.get(), "global_step"), 5.0);
  }
}

TEST(LearningRateDecayTest, AdamStepsShrinkWithTheDecayedRate) {
  // Adam's first step moves each weight by lr (m/sqrt(v) = 1 after bias correction):
  // two optimizers, one decayed, train twice; the decayed one's second move is
  // decay_rate times the plain one's.
  auto second_move = [](bool decayed) {
    Scope root = Scope::NewRootScope();
    auto w = CreateVariable(root, "w", Tensor::Scalar(0.0));
    auto step = CreateGlobalStep(root);
    AdamOptimizer adam(0.1);
    if (decayed) {
      EXPECT_TRUE(adam.SetLearningRateDecay({1, 0.25}).ok());
    }
    EXPECT_TRUE(adam.Minimize(root.WithOpName("train"), Identity(root, *w), *step).ok());
    GlobalVariablesInitializer(root.WithOpName("init"));
    auto session = NewDirectSession(root.graph()).value();
    RunSteps(session.get(), "init", 1);
    RunSteps(session.get(), "train", 1);
    const double first = FetchScalar(session.get(), "w");
    RunSteps(session.get(), "train", 1);
    return std::make_pair(first, FetchScalar(session.get(), "w") - first);
  };
  const auto [plain_first, plain_second] = second_move(false);
  const auto [decayed_first, decayed_second] = second_move(true);
  EXPECT_NEAR(decayed_first, plain_first, 1e-9);  // step 0: 0.25^0 = 1
  EXPECT_NEAR(decayed_second, 0.25 * plain_second, 1e-9);
}

TEST(LearningRateDecayTest, ADecayNeedsAGlobalStepAndAValidRate) {
  GradientDescentOptimizer sgd(0.1);
  EXPECT_THAT(sgd.SetLearningRateDecay({-1, 0.5}).message(), HasSubstr("decay_steps"));
  EXPECT_THAT(sgd.SetLearningRateDecay({10, 0.0}).message(), HasSubstr("decay_rate"));
  EXPECT_THAT(sgd.SetLearningRateDecay({10, NAN}).message(), HasSubstr("decay_rate"));
  ASSERT_TRUE(sgd.SetLearningRateDecay({10, 0.5}).ok());
  Scope root = Scope::NewRootScope();
  auto w = CreateVariable(root, "w", Tensor::Scalar(0.0f));
  auto train = sgd.Minimize(root.WithOpName("train"), Identity(root, *w));
  ASSERT_FALSE(train.ok());
  EXPECT_THAT(train.status().message(), HasSubstr("no global_step"));
}

}  // namespace
}  // namespace actorflow
