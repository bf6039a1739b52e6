// The contract of Gradients() (graph/gradients.h) as a whole: a two-layer
// perceptron's gradients against central differences, which xs get no gradient,
// summing over several ys, grad_ys, total derivatives, ties, dtypes, the names and
// devices of the gradient nodes, the errors it reports, and which ops have a rule.
// The per-rule numeric checks are in gradient_rule_check_test.cc.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/gradients.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "gtest/gtest.h"
#include "kernels/direct_session.h"
#include "kernels/gradient_check_util.h"

namespace actorflow {
namespace {

using gradient_check::ErrorOf;
using gradient_check::kMaxError;
using gradient_check::Record;
using gradient_check::Rng;

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v(t.NumElements());
  for (int64_t i = 0; i < t.NumElements(); ++i) v[i] = t.ElementAsDouble(i);
  return v;
}

// Fetches `outputs` (no feeds) and returns their values.
std::vector<std::vector<double>> Fetch(const Scope& root, const std::vector<Output>& outputs) {
  auto session = NewDirectSession(root.graph()).value();
  std::vector<std::string> names;
  for (const Output& o : outputs) names.push_back(o.name());
  std::vector<Tensor> out;
  Status s = session->Run({}, names, {}, &out);
  EXPECT_TRUE(s.ok()) << s;
  std::vector<std::vector<double>> values;
  for (const Tensor& t : out) values.push_back(Values(t));
  return values;
}

TEST(GradientsTest, TwoLayerPerceptronLossMatchesCentralDifferencesInItsVariables) {
  Rng rng(20);
  Scope root = Scope::NewRootScope();
  const std::vector<Shape> shapes = {{4, 5}, {5}, {5, 3}, {3}};
  std::vector<Output> vars, values, assigns;
  for (size_t i = 0; i < shapes.size(); ++i) {
    vars.push_back(Variable(root.WithOpName("v" + std::to_string(i)), shapes[i], DType::kFloat64));
    values.push_back(
        Placeholder(root.WithOpName("value" + std::to_string(i)), DType::kFloat64, shapes[i]));
    assigns.push_back(Assign(root, vars[i], values[i]));
  }
  const Output x = Const(root, rng.Uniform({6, 4}));
  const Output labels = Const(root, Tensor::FromVector(std::vector<int32_t>{0, 2, 1, 1, 0, 2}));
  const Output hidden = Relu(root, BiasAdd(root, MatMul(root, x, vars[0]), vars[1]));
  const Output logits = Add(root, MatMul(root, hidden, vars[2]), vars[3]);
  const Output loss = Mean(root, SparseSoftmaxCrossEntropyWithLogits(root, logits, labels).loss);
  auto grads = Gradients(root, {loss}, vars);
  ASSERT_TRUE(grads.ok()) << grads.status();
  ASSERT_TRUE(root.ok()) << root.status();

  auto session = NewDirectSession(root.graph()).value();
  std::vector<Tensor> init;
  for (const Shape& shape : shapes) init.push_back(rng.Uniform(shape, -1, 1));
  auto assign_all = [&](const std::vector<Tensor>& v) {
    FeedList feeds;
    std::vector<std::string> targets;
    for (size_t i = 0; i < v.size(); ++i) {
      feeds.emplace_back(values[i].name(), v[i]);
      targets.push_back(assigns[i].node->name());
    }
    std::vector<Tensor> unused;
    ASSERT_TRUE(session->Run(feeds, {}, targets, &unused).ok());
  };
  auto loss_at = [&](const std::vector<Tensor>& v) {
    assign_all(v);
    std::vector<Tensor> out;
    EXPECT_TRUE(session->Run({}, {loss.name()}, {}, &out).ok());
    return out[0].data<double>()[0];
  };
  assign_all(init);
  std::vector<std::string> grad_names;
  for (const Output& g : *grads) grad_names.push_back(g.name());
  std::vector<Tensor> symbolic;
  ASSERT_TRUE(session->Run({}, grad_names, {}, &symbolic).ok());
  for (size_t i = 0; i < init.size(); ++i) {
    ASSERT_EQ(symbolic[i].shape(), shapes[i]);
    for (int64_t j = 0; j < init[i].NumElements(); ++j) {
      std::vector<Tensor> moved = init;
      moved[i] = init[i].DeepCopy();
      double* e = moved[i].data<double>() + j;
      const double h = 1e-6 * std::max(1.0, std::abs(*e));
      *e += h;
      const double up = loss_at(moved);
      *e -= 2 * h;
      const double down = loss_at(moved);
      const double numeric = (up - down) / (2 * h);
      const double error = ErrorOf(symbolic[i].data<double>()[j], numeric);
      Record(error, "two-layer perceptron, variable " + std::to_string(i));
      EXPECT_LE(error, kMaxError) << "variable " << i << " element " << j;
    }
  }
}

TEST(GradientsTest, AnXThatNoYDependsOnGetsAnInvalidOutput) {
  Scope root = Scope::NewRootScope();
  const Output x = Placeholder(root, DType::kFloat64, {3});
  const Output unused = Placeholder(root, DType::kFloat64, {3});
  const Output y = Sum(root, Square(root, x));
  // Through a comparison only: no gradient flows through bool tensors.
  const Output z = Sum(root, Cast(root, Greater(root, unused, 0.0), DType::kFloat64));
  auto grads = Gradients(root, {y, z}, {x, unused});
  ASSERT_TRUE(grads.ok()) << grads.status();
  EXPECT_TRUE((*grads)[0].valid());
  EXPECT_FALSE((*grads)[1].valid());
}

TEST(GradientsTest, GradientsOfSeveralYsAreSummed) {
  Scope root = Scope::NewRootScope();
  const Output x = Const(root, Tensor::FromVector(std::vector<double>{1, -2, 3}));
  const Output y0 = Sum(root, Square(root, x));    // d/dx = 2x
  const Output y1 = Sum(root, Mul(root, x, 3.0));  // d/dx = 3
  auto grads = Gradients(root, {y0, y1}, {x});
  ASSERT_TRUE(grads.ok()) << grads.status();
  EXPECT_EQ(Fetch(root, *grads)[0], (std::vector<double>{5, -1, 9}));
}

TEST(GradientsTest, GradYsScaleTheInitialGradients) {
  Scope root = Scope::NewRootScope();
  const Output x = Const(root, Tensor::FromVector(std::vector<double>{1, 2, 3}));
  const Output y = Mul(root, x, 2.0);
  const Output dy = Const(root, Tensor::FromVector(std::vector<double>{1, 10, 100}));
  auto grads = Gradients(root, {y}, {x}, {dy});
  ASSERT_TRUE(grads.ok()) << grads.status();
  EXPECT_EQ(Fetch(root, *grads)[0], (std::vector<double>{2, 20, 200}));
}

TEST(GradientsTest, AnXUpstreamOfAnotherXGetsTheTotalDerivative) {
  Scope root = Scope::NewRootScope();
  const Output a = Const(root, 3.0);
  const Output b = Square(root, a);  // b = a^2
  const Output y = Mul(root, a, b);  // y = a^3: dy/da = 27, dy/db = a = 3
  auto grads = Gradients(root, {y}, {a, b});
  ASSERT_TRUE(grads.ok()) << grads.status();
  auto values = Fetch(root, *grads);
  EXPECT_DOUBLE_EQ(values[0][0], 27);
  EXPECT_DOUBLE_EQ(values[1][0], 3);
}

TEST(GradientsTest, MaxAndMinShareTheGradientEquallyAmongTies) {
  Scope root = Scope::NewRootScope();
  const Output x = Const(root, Tensor::FromVector(std::vector<double>{3, 1, 3, -1, 2, -1}, {2, 3}));
  auto grads = Gradients(root, {Max(root, x, int64_t{1}), Min(root, x)}, {x});
  ASSERT_TRUE(grads.ok()) << grads.status();
  // Row 0's max 3 is tied (1/2 each); the global min -1 is tied (1/2 each); row 1's
  // max is the single 2.
  EXPECT_EQ(Fetch(root, *grads)[0], (std::vector<double>{0.5, 0, 0.5, 0.5, 1, 0.5}));
}

TEST(GradientsTest, MaximumGivesTiesToX) {
  Scope root = Scope::NewRootScope();
  const Output x = Const(root, Tensor::FromVector(std::vector<double>{1, 2, 3}));
  const Output y = Const(root, Tensor::FromVector(std::vector<double>{1, 5, 0}));
  auto grads = Gradients(root, {Sum(root, Maximum(root, x, y))}, {x, y});
  ASSERT_TRUE(grads.ok()) << grads.status();
  auto values = Fetch(root, *grads);
  EXPECT_EQ(values[0], (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(values[1], (std::vector<double>{0, 1, 0}));
}

TEST(GradientsTest, PowHasNoGradientInTheExponentForANonPositiveBase) {
  Scope root = Scope::NewRootScope();
  const Output x = Const(root, Tensor::FromVector(std::vector<double>{-2, 0, 2}));
  const Output p = Const(root, 2.0);
  auto grads = Gradients(root, {Sum(root, Pow(root, x, p))}, {x, p});
  ASSERT_TRUE(grads.ok()) << grads.status();
  auto values = Fetch(root, *grads);
  EXPECT_EQ(values[0], (std::vector<double>{-4, 0, 4}));
  EXPECT_DOUBLE_EQ(values[1][0], 4 * std::log(2.0));  // only x = 2 contributes
}

TEST(GradientsTest, CastBetweenFloatsReturnsTheGradientInXsDtype) {
  Scope root = Scope::NewRootScope();
  const Output x = Const(root, Tensor::FromVector(std::vector<float>{1, 2}));
  const Output w = Const(root, Tensor::FromVector(std::vector<double>{0.5, -4}));
  auto grads = Gradients(root, {Sum(root, Mul(root, Cast(root, x, DType::kFloat64), w))}, {x});
  ASSERT_TRUE(grads.ok()) << grads.status();
  ASSERT_EQ((*grads)[0].dtype(), DType::kFloat32);
  EXPECT_EQ(Fetch(root, *grads)[0], (std::vector<double>{0.5, -4}));
}

TEST(GradientsTest, NoGradientFlowsThroughIntegerCastsOrToIntegerXs) {
  Scope root = Scope::NewRootScope();
  const Output x = Const(root, Tensor::FromVector(std::vector<double>{1.5, 2.5}));
  const Output i = Const(root, 4);
  const Output y = Sum(root, Add(root, Cast(root, Cast(root, x, DType::kInt32), DType::kFloat64),
                                 Cast(root, i, DType::kFloat64)));
  auto grads = Gradients(root, {y}, {x, i});
  ASSERT_TRUE(grads.ok()) << grads.status();
  EXPECT_FALSE((*grads)[0].valid());
  EXPECT_FALSE((*grads)[1].valid());
}

TEST(GradientsTest, GradientNodesAreNamedUnderGradientsAndKeepTheForwardDevice) {
  Scope root = Scope::NewRootScope();
  const Output x = Placeholder(root.WithOpName("x"), DType::kFloat32, {2, 3});
  const Output y =
      Sum(root.WithOpName("loss"), Tanh(root.WithOpName("t").WithDevice("/job:worker/task:1"), x));
  const int before = root.graph()->num_nodes();
  auto grads = Gradients(root, {y}, {x});
  ASSERT_TRUE(grads.ok()) << grads.status();
  const Node* tanh_grad = (*grads)[0].node;
  EXPECT_EQ(tanh_grad->op(), "TanhGrad");
  EXPECT_EQ(tanh_grad->name(), "gradients/t_grad/TanhGrad");
  EXPECT_EQ(tanh_grad->requested_device(), "/job:worker/task:1");
  for (int id = before; id < root.graph()->num_nodes(); ++id) {
    EXPECT_EQ(root.graph()->node(id)->name().rfind("gradients/", 0), 0u)
        << root.graph()->node(id)->name();
  }
}

TEST(GradientsTest, RejectsIntegerYsMismatchedGradYsAndInvalidOutputs) {
  Scope root = Scope::NewRootScope();
  const Output x = Const(root, 1.0);
  const Output y = Mul(root, x, 2.0);
  EXPECT_EQ(Gradients(root, {Const(root, 3)}, {x}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Gradients(root, {y}, {x}, {y, y}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Gradients(root, {y}, {x}, {Const(root, 1.0f)}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Gradients(root, {y}, {Output()}).status().code(), Code::kInvalidArgument);
  Scope other = Scope::NewRootScope();
  EXPECT_EQ(Gradients(other, {y}, {x}).status().code(), Code::kInvalidArgument);
}

TEST(GradientsTest, DifferentiatingACrossEntropyBackpropOutputIsUnimplemented) {
  Scope root = Scope::NewRootScope();
  const Output logits = Const(root, Tensor::FromVector(std::vector<double>{1, 2, 3, 4}, {2, 2}));
  auto xent = SparseSoftmaxCrossEntropyWithLogits(root, logits,
                                                  Tensor::FromVector(std::vector<int32_t>{0, 1}));
  auto grads = Gradients(root, {Sum(root, xent.backprop)}, {logits});
  EXPECT_EQ(grads.status().code(), Code::kUnimplemented);
  EXPECT_NE(grads.status().message().find(xent.backprop.node->name()), std::string::npos)
      << grads.status();
}

// The rules build their constants in the dtype they meet: the float32 gradient of a
// function made of every rule with a constant agrees with the float64 one.
TEST(GradientsTest, Float32GradientsAgreeWithFloat64) {
  Rng rng(21);
  const Tensor x64 = rng.AwayFromZero({2, 3}, 0.2, 1.5);
  std::vector<float> values(x64.data<double>(), x64.data<double>() + 6);
  const Tensor x32 = Tensor::FromVector(values, {2, 3});
  std::vector<std::vector<double>> grads;
  for (const Tensor& value : {x32, x64}) {
    Scope root = Scope::NewRootScope();
    const DType t = value.dtype();
    const Output x = Placeholder(root.WithOpName("x"), t);  // unknown shape: Mean uses Size
    const Output two = Cast(root, Const(root, 2.0), t);
    const std::vector<Output> terms = {Sqrt(root, Abs(root, x)),
                                       Square(root, x),
                                       Pow(root, Abs(root, x), two),
                                       Pow(root, two, x),
                                       Maximum(root, x, two),
                                       Mean(root, x, int64_t{1}),
                                       Min(root, Sigmoid(root, x), int64_t{0}),
                                       Softmax(root, Tanh(root, x))};
    Output loss = Sum(root, Relu(root, x));
    for (const Output& term : terms) loss = Add(root, loss, Sum(root, term));
    auto g = Gradients(root, {loss}, {x});
    ASSERT_TRUE(g.ok()) << g.status();
    ASSERT_EQ((*g)[0].dtype(), t);
    auto session = NewDirectSession(root.graph()).value();
    std::vector<Tensor> out;
    ASSERT_TRUE(session->Run({{"x", value}}, {(*g)[0].name()}, {}, &out).ok());
    grads.push_back(Values(out[0]));
  }
  for (size_t i = 0; i < grads[1].size(); ++i) {
    EXPECT_NEAR(grads[0][i], grads[1][i], 1e-4 * std::max(1.0, std::abs(grads[1][i]))) << i;
  }
}

TEST(GradientsTest, EveryDifferentiableOpHasARuleAndOthersHaveNone) {
  for (const char* op : {"Add",
                         "Sub",
                         "Mul",
                         "Div",
                         "Neg",
                         "Pow",
                         "Exp",
                         "Log",
                         "Sqrt",
                         "Square",
                         "Abs",
                         "Maximum",
                         "Minimum",
                         "Relu",
                         "Sigmoid",
                         "Tanh",
                         "Softmax",
                         "LogSoftmax",
                         "MatMul",
                         "BiasAdd",
                         "Sum",
                         "Mean",
                         "Max",
                         "Min",
                         "Cast",
                         "Reshape",
                         "Transpose",
                         "ConcatV2",
                         "Slice",
                         "Identity",
                         "SoftmaxCrossEntropyWithLogits",
                         "SparseSoftmaxCrossEntropyWithLogits"}) {
    EXPECT_NE(FindGradientFn(op), nullptr) << op;
  }
  for (const char* op : {"Equal", "Less", "Greater", "ArgMax", "Shape", "Const", "Placeholder",
                         "Variable", "Assign", "IsVariableInitialized", "VariableShape",
                         "RandomUniform", "Fill", "ZerosLike"}) {
    EXPECT_EQ(FindGradientFn(op), nullptr) << op;
  }
}

}  // namespace
}  // namespace actorflow
