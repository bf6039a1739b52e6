// Numeric gradient checks of every backward rule (graph/gradient_rules.cc), and the
// contract of Gradients() (graph/gradients.h).
//
// A check builds f(x_0, ..., x_{n-1}) from float64 Placeholders, reduces it to the
// scalar L = Sum(f * W) with fixed random weights W (so every element of f matters),
// computes dL/dx_i with Gradients() and runs it through a DirectSession, then compares
// each element with the central difference (L(x + h) - L(x - h)) / 2h, h = 1e-6 *
// max(1, |x|). The error metric is scale-safe:
//     err = |symbolic - numeric| / max(1, |symbolic|, |numeric|)
// (absolute below magnitude 1, relative above) and must be <= 1e-6. Every check runs
// twice: with the Placeholders' shapes known at build time and with unknown shapes, so
// the rules' runtime-shape paths (SumToShapeOf, Size, ...) are exercised too. Inputs
// stay away from kinks: no ties for Max/Min/Maximum/Minimum, no zeros for Abs/Relu,
// positive arguments for Log/Sqrt and Pow's base.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "graph/gradients.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "gtest/gtest.h"
#include "kernels/direct_session.h"

namespace actorflow {
namespace {

constexpr double kMaxError = 1e-6;

// The worst error over every check in this binary, reported at exit.
double g_worst_error = 0;
std::string g_worst_case;
int64_t g_checked_elements = 0;

class ReportWorstError : public ::testing::Environment {
 public:
  void TearDown() override {
    std::cout << "[ gradient ] max error over " << g_checked_elements
              << " numerically checked gradient elements: " << g_worst_error << " (" << g_worst_case
              << ")" << std::endl;
  }
};
const auto* const kReport = ::testing::AddGlobalTestEnvironment(new ReportWorstError);

// --- Inputs -------------------------------------------------------------------------

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}

  double Uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(gen_);
  }
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen_); }

  Tensor Fill(const Shape& shape, const std::function<double()>& draw) {
    std::vector<double> v(shape.num_elements());
    for (double& e : v) e = draw();
    return Tensor::FromVector(v, shape);
  }
  Tensor Uniform(const Shape& shape, double lo = -2, double hi = 2) {
    return Fill(shape, [&] { return Uniform(lo, hi); });
  }
  // |v| in [min_abs, max_abs] with a random sign.
  Tensor AwayFromZero(const Shape& shape, double min_abs = 0.1, double max_abs = 2) {
    return Fill(shape, [&] { return (Int(0, 1) ? 1 : -1) * Uniform(min_abs, max_abs); });
  }
  // Values on the grid 0.1 * k + offset, k in [-10, 10]: two grids with offsets 0.025
  // and 0.075 never come closer than 0.05, so Maximum/Minimum have no ties.
  Tensor Grid(const Shape& shape, double offset) {
    return Fill(shape, [&] { return 0.1 * Int(-10, 10) + offset; });
  }
  // Distinct values at least 0.3 apart in random order: no ties in Max/Min.
  Tensor Distinct(const Shape& shape) {
    std::vector<double> v(shape.num_elements());
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.37 * (static_cast<double>(i) - v.size() / 2.0);
    std::shuffle(v.begin(), v.end(), gen_);
    return Tensor::FromVector(v, shape);
  }
  // Rank 0..3, dims 1..4.
  Shape RandomShape(int min_rank = 0) {
    std::vector<int64_t> dims(Int(min_rank, 3));
    for (int64_t& d : dims) d = Int(1, 4);
    return Shape(dims);
  }
  // A shape that broadcasts to `shape`: a random suffix with some dims set to 1.
  Shape BroadcastPartner(const Shape& shape) {
    std::vector<int64_t> dims(shape.dims().begin() + Int(0, shape.rank()), shape.dims().end());
    for (int64_t& d : dims) d = Int(0, 2) == 0 ? 1 : d;
    return Shape(dims);
  }
  std::mt19937_64& gen() { return gen_; }

 private:
  std::mt19937_64 gen_;
};

// --- The check ----------------------------------------------------------------------

// f(scope, xs): the function under test; the xs are float64 Placeholders.
using Fn = std::function<Output(const Scope&, const std::vector<Output>&)>;

std::string Name(int i) { return "x" + std::to_string(i); }

// Runs `fetch` with the inputs fed.
Tensor RunWith(Session* session, const std::vector<Tensor>& inputs, const std::string& fetch) {
  FeedList feeds;
  for (size_t i = 0; i < inputs.size(); ++i) feeds.emplace_back(Name(i), inputs[i]);
  std::vector<Tensor> out;
  Status s = session->Run(feeds, {fetch}, {}, &out);
  EXPECT_TRUE(s.ok()) << s;
  return s.ok() ? out[0] : Tensor();
}

double ErrorOf(double symbolic, double numeric) {
  return std::abs(symbolic - numeric) / std::max({1.0, std::abs(symbolic), std::abs(numeric)});
}

void Record(double error, const std::string& what) {
  ++g_checked_elements;
  if (error > g_worst_error) {
    g_worst_error = error;
    g_worst_case = what;
  }
}

// The check described at the top of the file, with the inputs' shapes known or not.
void CheckGradientsOnce(const std::string& what, const std::vector<Tensor>& inputs, const Fn& f,
                        bool unknown_shapes, uint64_t seed) {
  SCOPED_TRACE(what);
  Scope root = Scope::NewRootScope();
  std::vector<Output> xs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    xs.push_back(Placeholder(root.WithOpName(Name(i)), DType::kFloat64,
                             unknown_shapes ? Shape::UnknownRank() : inputs[i].shape()));
  }
  const Output y = f(root, xs);
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = NewDirectSession(root.graph());
  const Tensor value = RunWith(session.get(), inputs, y.name());
  ASSERT_TRUE(value.IsInitialized());
  Rng rng(seed);
  const Output loss = Sum(root, Mul(root, y, Const(root, rng.Uniform(value.shape(), -1, 1))));
  auto grads = Gradients(root, {loss}, xs);
  ASSERT_TRUE(grads.ok()) << grads.status();
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_TRUE((*grads)[i].valid()) << "no gradient for input " << i;
    const Tensor symbolic = RunWith(session.get(), inputs, (*grads)[i].name());
    ASSERT_EQ(symbolic.dtype(), DType::kFloat64);
    ASSERT_EQ(symbolic.shape(), inputs[i].shape()) << "gradient of input " << i;
    for (int64_t j = 0; j < inputs[i].NumElements(); ++j) {
      std::vector<Tensor> moved = inputs;
      moved[i] = inputs[i].DeepCopy();
      double* e = moved[i].data<double>() + j;
      const double x = *e;
      const double h = 1e-6 * std::max(1.0, std::abs(x));
      *e = x + h;
      const double up = RunWith(session.get(), moved, loss.name()).data<double>()[0];
      *e = x - h;
      const double down = RunWith(session.get(), moved, loss.name()).data<double>()[0];
      const double numeric = (up - down) / (2 * h);
      const double error = ErrorOf(symbolic.data<double>()[j], numeric);
      Record(error, what);
      EXPECT_LE(error, kMaxError) << "input " << i << " element " << j << ": symbolic "
                                  << symbolic.data<double>()[j] << ", numeric " << numeric;
    }
  }
}

void CheckGradients(const std::string& what, const std::vector<Tensor>& inputs, const Fn& f) {
  static uint64_t seed = 1;
  CheckGradientsOnce(what + " (known shapes)", inputs, f, /*unknown_shapes=*/false, seed);
  CheckGradientsOnce(what + " (unknown shapes)", inputs, f, /*unknown_shapes=*/true, seed++);
}

std::string ShapesOf(const std::vector<Tensor>& inputs) {
  std::string s;
  for (const Tensor& t : inputs) s += (s.empty() ? "" : ", ") + t.shape().ToString();
  return s;
}

// --- Element-wise ops ---------------------------------------------------------------

using BinaryBuilder = Output (*)(const Scope&, const Input&, const Input&);
using UnaryBuilder = Output (*)(const Scope&, const Input&);

// Fixed broadcasting pairs plus seeded random ones.
std::vector<std::pair<Shape, Shape>> BinaryShapes(Rng& rng) {
  std::vector<std::pair<Shape, Shape>> shapes = {{{2, 3}, {2, 3}},   {{2, 3}, {3}}, {{3}, {2, 3}},
                                                 {{2, 1}, {1, 3}},   {{}, {2, 3}},  {{2, 3}, {}},
                                                 {{4, 1, 3}, {2, 1}}};
  for (int k = 0; k < 3; ++k) {
    const Shape big = rng.RandomShape();
    const Shape small = rng.BroadcastPartner(big);
    if (rng.Int(0, 1)) {
      shapes.emplace_back(big, small);
    } else {
      shapes.emplace_back(small, big);
    }
  }
  return shapes;
}

TEST(GradientCheckTest, BroadcastingBinaryOpsMatchCentralDifferences) {
  using Draw = std::function<Tensor(Rng&, const Shape&)>;
  const Draw uniform = [](Rng& r, const Shape& s) { return r.Uniform(s); };
  const Draw divisor = [](Rng& r, const Shape& s) { return r.AwayFromZero(s, 0.5, 2); };
  const Draw base = [](Rng& r, const Shape& s) { return r.Uniform(s, 0.5, 2); };
  const Draw grid_x = [](Rng& r, const Shape& s) { return r.Grid(s, 0.025); };
  const Draw grid_y = [](Rng& r, const Shape& s) { return r.Grid(s, 0.075); };
  struct Op {
    const char* name;
    BinaryBuilder build;
    Draw x, y;
  };
  const std::vector<Op> ops = {
      {"Add", Add, uniform, uniform},      {"Sub", Sub, uniform, uniform},
      {"Mul", Mul, uniform, uniform},      {"Div", Div, uniform, divisor},
      {"Pow", Pow, base, uniform},         {"Maximum", Maximum, grid_x, grid_y},
      {"Minimum", Minimum, grid_x, grid_y}};
  Rng rng(11);
  for (const Op& op : ops) {
    for (const auto& [a, b] : BinaryShapes(rng)) {
      const std::vector<Tensor> inputs = {op.x(rng, a), op.y(rng, b)};
      BinaryBuilder build = op.build;
      CheckGradients(
          std::string(op.name) + "(" + ShapesOf(inputs) + ")", inputs,
          [build](const Scope& s, const std::vector<Output>& x) { return build(s, x[0], x[1]); });
    }
  }
}

TEST(GradientCheckTest, UnaryOpsMatchCentralDifferences) {
  auto cast = [](const Scope& s, const Input& x) { return Cast(s, x, DType::kFloat64); };
  struct Op {
    const char* name;
    std::function<Output(const Scope&, const Input&)> build;
    std::function<Tensor(Rng&, const Shape&)> input;
  };
  const std::vector<Op> ops = {
      {"Neg", Neg, [](Rng& r, const Shape& s) { return r.Uniform(s); }},
      {"Exp", Exp, [](Rng& r, const Shape& s) { return r.Uniform(s); }},
      {"Log", Log, [](Rng& r, const Shape& s) { return r.Uniform(s, 0.5, 3); }},
      {"Sqrt", Sqrt, [](Rng& r, const Shape& s) { return r.Uniform(s, 0.5, 3); }},
      {"Square", Square, [](Rng& r, const Shape& s) { return r.Uniform(s); }},
      {"Abs", Abs, [](Rng& r, const Shape& s) { return r.AwayFromZero(s); }},
      {"Relu", Relu, [](Rng& r, const Shape& s) { return r.AwayFromZero(s); }},
      {"Sigmoid", Sigmoid, [](Rng& r, const Shape& s) { return r.Uniform(s, -3, 3); }},
      {"Tanh", Tanh, [](Rng& r, const Shape& s) { return r.Uniform(s, -3, 3); }},
      {"Identity", Identity, [](Rng& r, const Shape& s) { return r.Uniform(s); }},
      {"Cast", cast, [](Rng& r, const Shape& s) { return r.Uniform(s); }},
  };
  Rng rng(12);
  for (const Op& op : ops) {
    for (const Shape& shape : {Shape{}, Shape{5}, Shape{2, 3}, Shape{2, 1, 3}, rng.RandomShape()}) {
      const std::vector<Tensor> inputs = {op.input(rng, shape)};
      auto build = op.build;
      CheckGradients(
          std::string(op.name) + "(" + ShapesOf(inputs) + ")", inputs,
          [build](const Scope& s, const std::vector<Output>& x) { return build(s, x[0]); });
    }
  }
}

// --- Neural-network ops -------------------------------------------------------------

TEST(GradientCheckTest, SoftmaxAndLogSoftmaxMatchCentralDifferences) {
  Rng rng(13);
  for (UnaryBuilder build : {UnaryBuilder(Softmax), UnaryBuilder(LogSoftmax)}) {
    for (const Shape& shape : {Shape{4}, Shape{2, 5}, Shape{2, 3, 4}, rng.RandomShape(1)}) {
      const std::vector<Tensor> inputs = {rng.Uniform(shape, -3, 3)};
      CheckGradients(
          (build == UnaryBuilder(Softmax) ? "Softmax(" : "LogSoftmax(") + ShapesOf(inputs) + ")",
          inputs, [build](const Scope& s, const std::vector<Output>& x) { return build(s, x[0]); });
    }
  }
}

TEST(GradientCheckTest, MatMulMatchesCentralDifferencesForEveryTransposition) {
  Rng rng(14);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (int k = 0; k < 3; ++k) {
        const int64_t m = rng.Int(1, 4), inner = rng.Int(1, 4), n = rng.Int(1, 4);
        const std::vector<Tensor> inputs = {rng.Uniform(ta ? Shape{inner, m} : Shape{m, inner}),
                                            rng.Uniform(tb ? Shape{n, inner} : Shape{inner, n})};
        CheckGradients("MatMul(" + ShapesOf(inputs) + ", transpose_a=" + std::to_string(ta) +
                           ", transpose_b=" + std::to_string(tb) + ")",
                       inputs, [ta, tb](const Scope& s, const std::vector<Output>& x) {
                         return MatMul(s, x[0], x[1], ta, tb);
                       });
      }
    }
  }
}

TEST(GradientCheckTest, BiasAddMatchesCentralDifferences) {
  Rng rng(15);
  for (const Shape& value : {Shape{3}, Shape{2, 3}, Shape{2, 2, 3}, Shape{4, 1}}) {
    const std::vector<Tensor> inputs = {rng.Uniform(value),
                                        rng.Uniform({value.dim(value.rank() - 1)})};
    CheckGradients(
        "BiasAdd(" + ShapesOf(inputs) + ")", inputs,
        [](const Scope& s, const std::vector<Output>& x) { return BiasAdd(s, x[0], x[1]); });
  }
}

// Probabilities: rows of [n, c] that are positive and sum to 1.
Tensor SoftLabels(Rng& rng, int64_t n, int64_t c) {
  Tensor t = rng.Uniform(Shape{n, c}, 0.1, 1);
  double* p = t.data<double>();
  for (int64_t r = 0; r < n; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < c; ++j) sum += p[r * c + j];
    for (int64_t j = 0; j < c; ++j) p[r * c + j] /= sum;
  }
  return t;
}

TEST(GradientCheckTest, CrossEntropiesMatchCentralDifferencesInLogitsAndLabels) {
  Rng rng(16);
  for (const auto& [n, c] : {std::pair<int64_t, int64_t>{3, 4}, {1, 2}, {5, 3}}) {
    const std::vector<Tensor> inputs = {rng.Uniform(Shape{n, c}, -3, 3), SoftLabels(rng, n, c)};
    CheckGradients("SoftmaxCrossEntropyWithLogits(" + ShapesOf(inputs) + ")", inputs,
                   [](const Scope& s, const std::vector<Output>& x) {
                     return SoftmaxCrossEntropyWithLogits(s, x[0], x[1]).loss;
                   });
    std::vector<int32_t> labels(n);
    for (int32_t& l : labels) l = rng.Int(0, static_cast<int>(c) - 1);
    CheckGradients(
        "SparseSoftmaxCrossEntropyWithLogits(" + ShapesOf({inputs[0]}) + ")", {inputs[0]},
        [labels](const Scope& s, const std::vector<Output>& x) {
          return SparseSoftmaxCrossEntropyWithLogits(s, x[0], Tensor::FromVector(labels)).loss;
        });
  }
}

// --- Reductions ---------------------------------------------------------------------

// A reduction node with `axis` written as given (absent, an int or a list).
Output Reduce(const Scope& s, const std::string& op, const Output& x,
              const std::optional<AttrValue>& axis, bool keep_dims) {
  AttrMap attrs = {{"keep_dims", keep_dims}};
  if (axis) attrs["axis"] = *axis;
  return Output(s.AddNode(op, {x}, attrs), 0);
}

std::string AxisToString(const std::optional<AttrValue>& axis) {
  if (!axis) return "absent";
  if (axis->Is<int64_t>()) return std::to_string(axis->Get<int64_t>());
  std::string s = "{";
  for (int64_t a : axis->Get<std::vector<int64_t>>())
    s += (s.size() > 1 ? "," : "") + std::to_string(a);
  return s + "}";
}

TEST(GradientCheckTest, ReductionsMatchCentralDifferencesForEveryAxisForm) {
  using Axes = std::vector<int64_t>;
  const std::vector<std::optional<AttrValue>> axes = {
      std::nullopt,        AttrValue(Axes{}),     AttrValue(Axes{0}),       AttrValue(Axes{1}),
      AttrValue(Axes{-1}), AttrValue(Axes{0, 2}), AttrValue(Axes{2, 0, 1}), AttrValue(int64_t{1})};
  Rng rng(17);
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
    const bool extremum = op[1] != 'u' && op[1] != 'e';  // Max, Min: distinct values
    for (const auto& axis : axes) {
      for (bool keep_dims : {false, true}) {
        const Shape shape{2, 3, 4};
        const std::vector<Tensor> inputs = {extremum ? rng.Distinct(shape) : rng.Uniform(shape)};
        const std::string what = std::string(op) + "(" + shape.ToString() +
                                 ", axis=" + AxisToString(axis) +
                                 ", keep_dims=" + std::to_string(keep_dims) + ")";
        CheckGradients(what, inputs,
                       [op, axis, keep_dims](const Scope& s, const std::vector<Output>& x) {
                         return Reduce(s, op, x[0], axis, keep_dims);
                       });
      }
    }
    // Seeded random shapes with one random axis.
    for (int k = 0; k < 2; ++k) {
      const Shape shape = rng.RandomShape(1);
      const int64_t axis = rng.Int(-shape.rank(), shape.rank() - 1);
      const bool keep_dims = rng.Int(0, 1);
      const std::vector<Tensor> inputs = {extremum ? rng.Distinct(shape) : rng.Uniform(shape)};
      CheckGradients(
          std::string(op) + "(" + shape.ToString() + ", axis=" + std::to_string(axis) + ")", inputs,
          [op, axis, keep_dims](const Scope& s, const std::vector<Output>& x) {
            return Reduce(s, op, x[0], AttrValue(Axes{axis}), keep_dims);
          });
    }
  }
}

// --- Shape manipulation -------------------------------------------------------------

TEST(GradientCheckTest, ShapeOpsMatchCentralDifferences) {
  Rng rng(18);
  struct Case {
    std::string what;
    Shape input;
    Fn f;
  };
  using V = std::vector<Output>;
  const std::vector<Case> cases = {
      {"Reshape [2,3] to [3,2]",
       {2, 3},
       [](const Scope& s, const V& x) {
         return Reshape(s, x[0], {3, 2});
       }},
      {"Reshape [2,3,2] to [-1,4]",
       {2, 3, 2},
       [](const Scope& s, const V& x) {
         return Reshape(s, x[0], {-1, 4});
       }},
      {"Reshape [] to [1,1]",
       {},
       [](const Scope& s, const V& x) {
         return Reshape(s, x[0], {1, 1});
       }},
      {"Transpose [2,3,4] reversed",
       {2, 3, 4},
       [](const Scope& s, const V& x) { return Transpose(s, x[0]); }},
      {"Transpose [2,3,4] perm 1,2,0",
       {2, 3, 4},
       [](const Scope& s, const V& x) {
         return Transpose(s, x[0], {1, 2, 0});
       }},
      {"Transpose [2,3,4] perm 2,0,1",
       {2, 3, 4},
       [](const Scope& s, const V& x) {
         return Transpose(s, x[0], {2, 0, 1});
       }},
      {"Transpose [3,2] perm 1,0",
       {3, 2},
       [](const Scope& s, const V& x) {
         return Transpose(s, x[0], {1, 0});
       }},
      {"Slice [3,4] begin 1,0 size 2,-1",
       {3, 4},
       [](const Scope& s, const V& x) {
         return Slice(s, x[0], {1, 0}, {2, -1});
       }},
      {"Slice [2,3,4] begin 0,1,1 size 2,2,-1",
       {2, 3, 4},
       [](const Scope& s, const V& x) {
         return Slice(s, x[0], {0, 1, 1}, {2, 2, -1});
       }},
      {"Slice [5] begin 2 size 3",
       {5},
       [](const Scope& s, const V& x) { return Slice(s, x[0], {2}, {3}); }},
  };
  for (const Case& c : cases) CheckGradients(c.what, {rng.Uniform(c.input)}, c.f);
}

TEST(GradientCheckTest, ConcatV2MatchesCentralDifferencesForEachInput) {
  Rng rng(19);
  struct Case {
    std::vector<Shape> shapes;
    int64_t axis;
  };
  const std::vector<Case> cases = {{{{2, 3}, {2, 1}, {2, 2}}, 1},
                                   {{{2, 3}, {2, 1}, {2, 2}}, -1},
                                   {{{1, 3}, {2, 3}}, 0},
                                   {{{2, 1, 2}, {2, 3, 2}}, 1},
                                   {{{4}}, 0}};
  for (const Case& c : cases) {
    std::vector<Tensor> inputs;
    for (const Shape& shape : c.shapes) inputs.push_back(rng.Uniform(shape));
    const int64_t axis = c.axis;
    CheckGradients("ConcatV2(" + ShapesOf(inputs) + ", axis=" + std::to_string(axis) + ")", inputs,
                   [axis](const Scope& s, const std::vector<Output>& x) {
                     return ConcatV2(s, std::vector<Input>(x.begin(), x.end()), axis);
                   });
  }
}

// --- Gradients() as a whole --------------------------------------------------------

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v(t.NumElements());
  for (int64_t i = 0; i < t.NumElements(); ++i) v[i] = t.ElementAsDouble(i);
  return v;
}

// Fetches `outputs` (no feeds) and returns their values.
std::vector<std::vector<double>> Fetch(const Scope& root, const std::vector<Output>& outputs) {
  auto session = NewDirectSession(root.graph());
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

  auto session = NewDirectSession(root.graph());
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
    auto session = NewDirectSession(root.graph());
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
                         "Variable", "Assign", "RandomUniform", "Fill", "ZerosLike"}) {
    EXPECT_EQ(FindGradientFn(op), nullptr) << op;
  }
}

}  // namespace
}  // namespace actorflow
