// Numeric gradient checks of every backward rule (graph/gradient_rules.cc): each
// differentiable op, over broadcasting shapes, every attr form (transposes, axes,
// keep_dims) and seeded random shapes, against central differences (the check of
// kernels/gradient_check_util.h, with known and with unknown input shapes). Inputs
// stay away from kinks: no ties for Max/Min/Maximum/Minimum, no zeros for Abs/Relu,
// positive arguments for Log/Sqrt and Pow's base.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/attr_value.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "gtest/gtest.h"
#include "kernels/gradient_check_util.h"

namespace actorflow {
namespace {

using gradient_check::Fn;
using gradient_check::GradientsMatch;
using gradient_check::Rng;
using gradient_check::ShapesOf;

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
      EXPECT_TRUE(GradientsMatch(
          std::string(op.name) + "(" + ShapesOf(inputs) + ")", inputs,
          [build](const Scope& s, const std::vector<Output>& x) { return build(s, x[0], x[1]); }));
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
      EXPECT_TRUE(GradientsMatch(
          std::string(op.name) + "(" + ShapesOf(inputs) + ")", inputs,
          [build](const Scope& s, const std::vector<Output>& x) { return build(s, x[0]); }));
    }
  }
}

// --- Neural-network ops -------------------------------------------------------------

TEST(GradientCheckTest, SoftmaxAndLogSoftmaxMatchCentralDifferences) {
  Rng rng(13);
  for (UnaryBuilder build : {UnaryBuilder(Softmax), UnaryBuilder(LogSoftmax)}) {
    for (const Shape& shape : {Shape{4}, Shape{2, 5}, Shape{2, 3, 4}, rng.RandomShape(1)}) {
      const std::vector<Tensor> inputs = {rng.Uniform(shape, -3, 3)};
      EXPECT_TRUE(GradientsMatch(
          (build == UnaryBuilder(Softmax) ? "Softmax(" : "LogSoftmax(") + ShapesOf(inputs) + ")",
          inputs,
          [build](const Scope& s, const std::vector<Output>& x) { return build(s, x[0]); }));
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
        EXPECT_TRUE(GradientsMatch("MatMul(" + ShapesOf(inputs) +
                                       ", transpose_a=" + std::to_string(ta) +
                                       ", transpose_b=" + std::to_string(tb) + ")",
                                   inputs, [ta, tb](const Scope& s, const std::vector<Output>& x) {
                                     return MatMul(s, x[0], x[1], ta, tb);
                                   }));
      }
    }
  }
}

TEST(GradientCheckTest, BiasAddMatchesCentralDifferences) {
  Rng rng(15);
  for (const Shape& value : {Shape{3}, Shape{2, 3}, Shape{2, 2, 3}, Shape{4, 1}}) {
    const std::vector<Tensor> inputs = {rng.Uniform(value),
                                        rng.Uniform({value.dim(value.rank() - 1)})};
    EXPECT_TRUE(GradientsMatch(
        "BiasAdd(" + ShapesOf(inputs) + ")", inputs,
        [](const Scope& s, const std::vector<Output>& x) { return BiasAdd(s, x[0], x[1]); }));
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
    EXPECT_TRUE(GradientsMatch("SoftmaxCrossEntropyWithLogits(" + ShapesOf(inputs) + ")", inputs,
                               [](const Scope& s, const std::vector<Output>& x) {
                                 return SoftmaxCrossEntropyWithLogits(s, x[0], x[1]).loss;
                               }));
    std::vector<int32_t> labels(n);
    for (int32_t& l : labels) l = rng.Int(0, static_cast<int>(c) - 1);
    EXPECT_TRUE(GradientsMatch(
        "SparseSoftmaxCrossEntropyWithLogits(" + ShapesOf({inputs[0]}) + ")", {inputs[0]},
        [labels](const Scope& s, const std::vector<Output>& x) {
          return SparseSoftmaxCrossEntropyWithLogits(s, x[0], Tensor::FromVector(labels)).loss;
        }));
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
        EXPECT_TRUE(GradientsMatch(
            what, inputs, [op, axis, keep_dims](const Scope& s, const std::vector<Output>& x) {
              return Reduce(s, op, x[0], axis, keep_dims);
            }));
      }
    }
    // Seeded random shapes with one random axis.
    for (int k = 0; k < 2; ++k) {
      const Shape shape = rng.RandomShape(1);
      const int64_t axis = rng.Int(-shape.rank(), shape.rank() - 1);
      const bool keep_dims = rng.Int(0, 1);
      const std::vector<Tensor> inputs = {extremum ? rng.Distinct(shape) : rng.Uniform(shape)};
      EXPECT_TRUE(GradientsMatch(
          std::string(op) + "(" + shape.ToString() + ", axis=" + std::to_string(axis) + ")", inputs,
          [op, axis, keep_dims](const Scope& s, const std::vector<Output>& x) {
            return Reduce(s, op, x[0], AttrValue(Axes{axis}), keep_dims);
          }));
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
  for (const Case& c : cases) EXPECT_TRUE(GradientsMatch(c.what, {rng.Uniform(c.input)}, c.f));
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
    EXPECT_TRUE(
        GradientsMatch("ConcatV2(" + ShapesOf(inputs) + ", axis=" + std::to_string(axis) + ")",
                       inputs, [axis](const Scope& s, const std::vector<Output>& x) {
                         return ConcatV2(s, std::vector<Input>(x.begin(), x.end()), axis);
                       }));
  }
}

}  // namespace
}  // namespace actorflow
