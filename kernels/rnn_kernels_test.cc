// The fused recurrent cells (graph/rnn_ops.h): the CPU kernels of LSTMBlockCell,
// LSTMBlockCellGrad, GRUBlockCell and GRUBlockCellGrad against the reference kernels
// in float32 and float64 (empty batches, no input features, clipping); the
// InvalidArgument errors of bad inputs at graph building and, shapes unknown until run
// time, in the kernels; the fused cells against the same cells composed of primitive
// ops over a few unrolled steps, in values and in Gradients(); and numeric checks of
// the backward rules.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/gradients.h"
#include "graph/ops.h"
#include "graph/rnn_ops.h"
#include "kernels/direct_session.h"
#include "kernels/gradient_check_util.h"
#include "kernels/kernels_test_util.h"

namespace actorflow {
namespace {

class RnnKernelTest : public ::testing::TestWithParam<DType> {
 protected:
  DType dtype() const { return GetParam(); }
  Tensor Random(const Shape& shape, double lo = -1.0, double hi = 1.0) {
    return random_.Uniform(dtype(), shape, lo, hi);
  }
  // float32 kernels round each sum and activation at ~1e-7; the reference works in
  // double.
  std::optional<Tolerance> Tol() const {
    if (dtype() == DType::kFloat32) return Tolerance{1e-4, 1e-5};
    return Tolerance{1e-10, 1e-12};
  }
  std::vector<Tensor> LstmInputs(int64_t b, int64_t i, int64_t h) {
    return {Random({b, i}), Random({b, h}), Random({b, h}), Random({i + h, 4 * h}),
            Random({4 * h})};
  }
  std::vector<Tensor> GruInputs(int64_t b, int64_t i, int64_t h) {
    return {Random({b, i}),         Random({b, h}), Random({i + h, 2 * h}),
            Random({i + h, h}), Random({2 * h}), Random({h})};
  }
  RandomTensors random_{41};
};

INSTANTIATE_TEST_SUITE_P(Floating, RnnKernelTest, ::testing::ValuesIn(kFloatDTypes),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

struct Dims {
  int64_t b, i, h;
};
// Ordinary sizes, one unit, an empty batch, no input features.
const std::vector<Dims> kDims = {{3, 5, 4}, {1, 1, 1}, {0, 3, 2}, {2, 0, 3}};

TEST_P(RnnKernelTest, LstmBlockCellMatchesReference) {
  for (const Dims& d : kDims) {
    for (double clip : {-1.0, 0.4}) {
      const AttrMap attrs = {{"forget_bias", 0.7}, {"cell_clip", clip}};
      EXPECT_TRUE(MatchesReference({"LSTMBlockCell", attrs, LstmInputs(d.b, d.i, d.h), {}, Tol()}));
    }
  }
  // The defaults: forget_bias 1, no clip.
  EXPECT_TRUE(MatchesReference({"LSTMBlockCell", {}, LstmInputs(2, 3, 2), {}, Tol()}));
}

TEST_P(RnnKernelTest, LstmBlockCellGradMatchesReference) {
  for (const Dims& d : kDims) {
    for (double clip : {-1.0, 0.5}) {
      std::vector<Tensor> in = LstmInputs(d.b, d.i, d.h);
      for (int k = 0; k < 8; ++k) {
        // i, cs, f, o, ci, co as activations give them (cs in [-1, 1] so that the clip
        // holds some), then cs_grad and h_grad.
        const bool gate = k == 0 || k == 2 || k == 3;
        in.push_back(gate ? Random({d.b, d.h}, 0.05, 0.95) : Random({d.b, d.h}));
      }
      EXPECT_TRUE(MatchesReference({"LSTMBlockCellGrad", {{"cell_clip", clip}}, in, {}, Tol()}));
    }
  }
}

TEST_P(RnnKernelTest, GruBlockCellAndGradMatchReference) {
  for (const Dims& d : kDims) {
    std::vector<Tensor> in = GruInputs(d.b, d.i, d.h);
    EXPECT_TRUE(MatchesReference({"GRUBlockCell", {}, in, {}, Tol()}));
    in.push_back(Random({d.b, d.h}, 0.05, 0.95));  // r
    in.push_back(Random({d.b, d.h}, 0.05, 0.95));  // u
    for (int k = 0; k < 2; ++k) in.push_back(Random({d.b, d.h}));  // c, d_h
    EXPECT_TRUE(MatchesReference({"GRUBlockCellGrad", {}, in, {}, Tol()}));
    for (int k = 0; k < 3; ++k) in.push_back(Random({d.b, d.h}));  // d_r, d_u, d_c
    EXPECT_TRUE(MatchesReference({"GRUBlockCellGrad", {}, in, {}, Tol()}));
  }
}

// ---- Bad inputs ---------------------------------------------------------------------

// The kernel of `c` fails at run time (inputs of unknown shape, so inference accepts
// them) with InvalidArgument naming the node and containing `substring`.
::testing::AssertionResult FailsAtRunTime(const KernelTestCase& c, const std::string& substring) {
  StatusOr<KernelRun> run = RunKernel(c, /*unknown_input_shapes=*/true);
  if (!run.ok()) return ::testing::AssertionFailure() << "did not build: " << run.status();
  const Status& s = run->status;
  if (s.code() != Code::kInvalidArgument ||
      s.message().find(kNodeUnderTest) == std::string::npos ||
      s.message().find(substring) == std::string::npos) {
    return ::testing::AssertionFailure() << c.ToString() << ": got " << s;
  }
  return ::testing::AssertionSuccess();
}

// Input k of `in` replaced by `t`.
std::vector<Tensor> With(std::vector<Tensor> in, size_t k, Tensor t) {
  in[k] = std::move(t);
  return in;
}

TEST(RnnKernelErrorTest, LstmRejectsMismatchedShapesAndNonFloats) {
  RandomTensors random(42);
  auto f32 = [&](const Shape& s) { return random.Uniform(DType::kFloat32, s); };
  // B = 2, I = 3, H = 4.
  const std::vector<Tensor> good = {f32({2, 3}), f32({2, 4}), f32({2, 4}), f32({7, 16}),
                                    f32({16})};
  const Code bad = Code::kInvalidArgument;
  struct Case {
    size_t input;
    Tensor value;
    std::string at_build, at_run;
  };
  const std::vector<Case> cases = {
      {1, f32({3, 4}), "cs_prev (input 1) [3,4] gives B = 3, but x (input 0) [2,3] gives B = 2",
       "cs_prev (input 1) has shape [3,4]"},
      {2, f32({2, 5}), "h_prev (input 2) [2,5] gives H = 5", "cs_prev (input 1) has shape [2,4]"},
      {3, f32({6, 16}), "w (input 3) [6,16] must have I + H = 3 + 4 = 7 rows",
       "w (input 3) has shape [6,16]"},
      {3, f32({7, 15}), "w (input 3) [7,15] has 15 where it needs 4H", "w (input 3) has shape"},
      {4, f32({12}), "b (input 4) [12] gives 4H = 12, so H = 3", "b (input 4) has shape [12]"},
      {0, f32({6}), "x (input 0)", "x (input 0) [6]"},
  };
  for (const Case& c : cases) {
    const KernelTestCase test = {"LSTMBlockCell", {}, With(good, c.input, c.value)};
    EXPECT_TRUE(FailsWith(test, bad, c.at_build));
    EXPECT_TRUE(FailsAtRunTime(test, c.at_run));
  }
  const Tensor ints = MakeTensor(DType::kInt32, {2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(FailsWith({"LSTMBlockCell", {}, With(good, 0, ints)}, bad, "x (input 0)"));
  const Tensor f64 = random.Uniform(DType::kFloat64, {2, 4});
  EXPECT_TRUE(FailsWith({"LSTMBlockCell", {}, With(good, 1, f64)}, bad,
                        "cs_prev (input 1) has dtype float64"));
  std::vector<Tensor> grad = good;
  for (int k = 0; k < 8; ++k) grad.push_back(f32({2, 4}));
  EXPECT_TRUE(FailsWith({"LSTMBlockCellGrad", {}, With(grad, 12, f32({2, 3}))}, bad,
                        "h_grad (input 12) [2,3] gives H = 3"));
  EXPECT_TRUE(FailsAtRunTime({"LSTMBlockCellGrad", {}, With(grad, 6, f32({4, 2}))},
                             "cs (input 6) has shape [4,2]"));
}

TEST(RnnKernelErrorTest, GruRejectsMismatchedShapesAndNonFloats) {
  RandomTensors random(43);
  auto f64 = [&](const Shape& s) { return random.Uniform(DType::kFloat64, s); };
  // B = 2, I = 3, H = 4.
  const std::vector<Tensor> good = {f64({2, 3}), f64({2, 4}), f64({7, 8}),
                                    f64({7, 4}), f64({8}),    f64({4})};
  const Code bad = Code::kInvalidArgument;
  EXPECT_TRUE(FailsWith({"GRUBlockCell", {}, With(good, 3, f64({7, 5}))}, bad,
                        "w_c (input 3) [7,5] gives H = 5"));
  EXPECT_TRUE(FailsAtRunTime({"GRUBlockCell", {}, With(good, 3, f64({7, 5}))},
                             "w_c (input 3) has shape [7,5] but x (input 0) [2,3] and h_prev "
                             "(input 1) [2,4] need [7,4]"));
  EXPECT_TRUE(FailsWith({"GRUBlockCell", {}, With(good, 4, f64({4}))}, bad,
                        "b_ru (input 4) [4] gives 2H = 4"));
  EXPECT_TRUE(FailsWith({"GRUBlockCell", {}, With(good, 2, f64({8, 8}))}, bad,
                        "w_ru (input 2) [8,8] must have I + H = 3 + 4 = 7 rows"));
  EXPECT_TRUE(FailsWith({"GRUBlockCell", {}, With(good, 1, f64({3, 4}))}, bad,
                        "h_prev (input 1) [3,4] gives B = 3"));
  const Tensor ints = MakeTensor(DType::kInt64, {4}, {1, 2, 3, 4});
  EXPECT_TRUE(FailsWith({"GRUBlockCell", {}, With(good, 5, ints)}, bad,
                        "b_c (input 5) has dtype int64"));
  std::vector<Tensor> grad = good;
  for (int k = 0; k < 7; ++k) grad.push_back(f64({2, 4}));
  EXPECT_TRUE(FailsWith({"GRUBlockCellGrad", {}, With(grad, 11, f64({2, 2}))}, bad,
                        "d_u (input 11) [2,2] gives H = 2"));
  grad.pop_back();
  EXPECT_TRUE(FailsWith({"GRUBlockCellGrad", {}, grad}, bad, "10 inputs, or 13"));
}

TEST(RnnShapeTest, InferenceFillsInWhatTheInputsFix) {
  Scope root = Scope::NewRootScope();
  const int64_t u = Shape::kUnknownDim;
  // x's width unknown: I = rows of w - H.
  const LstmCellOutputs lstm = LSTMBlockCell(
      root, Placeholder(root, DType::kFloat32, Shape{u, u}),
      Placeholder(root, DType::kFloat32, Shape{5, u}), Placeholder(root, DType::kFloat32),
      Placeholder(root, DType::kFloat32, Shape{9, 12}), Placeholder(root, DType::kFloat32));
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(lstm.h.shape(), (Shape{5, 3}));
  EXPECT_EQ(lstm.i.dtype(), DType::kFloat32);
  const GruCellOutputs gru = GRUBlockCell(
      root, Placeholder(root, DType::kFloat64, Shape{u, 6}),
      Placeholder(root, DType::kFloat64), Placeholder(root, DType::kFloat64),
      Placeholder(root, DType::kFloat64), Placeholder(root, DType::kFloat64),
      Placeholder(root, DType::kFloat64, Shape{2}));
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(gru.c.shape(), (Shape{u, 2}));
  const GruCellGradOutputs grad =
      GRUBlockCellGrad(root, Placeholder(root, DType::kFloat64, Shape{4, 6}), gru.h,
                       Placeholder(root, DType::kFloat64), Placeholder(root, DType::kFloat64),
                       Placeholder(root, DType::kFloat64), Placeholder(root, DType::kFloat64),
                       gru, gru.h);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(grad.d_x.shape(), (Shape{4, 6}));
  EXPECT_EQ(grad.d_r_bar_u_bar.shape(), (Shape{4, 4}));
}

// ---- Fused against composed ----------------------------------------------------------

Output Scalar(const Scope& s, double v) { return Const(s, Tensor::Scalar(v)); }

// One LSTM step of primitive ops, in LSTMBlockCell's output order.
std::vector<Output> ComposedLstm(const Scope& s, const Output& x, const std::vector<Output>& st,
                                 const std::vector<Output>& wt, int64_t h, double forget_bias,
                                 double clip) {
  const Output z = Add(s, MatMul(s, ConcatV2(s, {x, st[1]}, 1), wt[0]), wt[1]);
  auto gate = [&](int k) { return Slice(s, z, {0, k * h}, {-1, h}); };
  const Output i = Sigmoid(s, gate(0)), ci = Tanh(s, gate(1)),
               f = Sigmoid(s, Add(s, gate(2), Scalar(s, forget_bias))), o = Sigmoid(s, gate(3));
  Output cs = Add(s, Mul(s, ci, i), Mul(s, st[0], f));
  if (clip > 0) cs = Minimum(s, Maximum(s, cs, Scalar(s, -clip)), Scalar(s, clip));
  const Output co = Tanh(s, cs);
  return {i, cs, f, o, ci, co, Mul(s, co, o)};
}

// One GRU step of primitive ops, in GRUBlockCell's output order.
std::vector<Output> ComposedGru(const Scope& s, const Output& x, const Output& h_prev,
                                const std::vector<Output>& wt, int64_t h) {
  const Output ru = Sigmoid(s, Add(s, MatMul(s, ConcatV2(s, {x, h_prev}, 1), wt[0]), wt[2]));
  const Output r = Slice(s, ru, {0, 0}, {-1, h}), u = Slice(s, ru, {0, h}, {-1, h});
  const Output c = Tanh(
      s, Add(s, MatMul(s, ConcatV2(s, {x, Mul(s, r, h_prev)}, 1), wt[1]), wt[3]));
  return {r, u, c, Add(s, Mul(s, u, h_prev), Mul(s, Sub(s, Scalar(s, 1.0), u), c))};
}

// A cell step: x, the states and the weights -> every output of the step.
using StepFn = std::function<std::vector<Output>(const Scope&, const Output&,
                                                 const std::vector<Output>&,
                                                 const std::vector<Output>&)>;

struct Unrolling {
  int steps;
  std::vector<Shape> x_states_weights;  // x's shape, then the states', then the weights'
  int num_states;
  std::vector<int> state_outputs;  // the outputs that are the next step's states
  bool loss_on_every_output;       // else on the states of every step only
};

// Runs u.steps steps of `step` (float64, inputs from `values`: each step's x, the
// initial states, the weights) and returns every step's outputs, then d loss / d each
// input, the loss a fixed random weighting of the outputs it covers.
std::vector<Tensor> RunUnrolled(const Unrolling& u, const StepFn& step,
                                const std::vector<Tensor>& values) {
  Scope root = Scope::NewRootScope();
  std::vector<Output> inputs;
  FeedList feeds;
  for (const Tensor& v : values) {
    inputs.push_back(Placeholder(root, DType::kFloat64, v.shape()));
    feeds.emplace_back(inputs.back().name(), v);
  }
  std::vector<Output> states(inputs.begin() + u.steps, inputs.begin() + u.steps + u.num_states);
  const std::vector<Output> weights(inputs.begin() + u.steps + u.num_states, inputs.end());
  RandomTensors random(77);  // the same loss weights for fused and composed
  std::vector<Output> fetches;
  Output loss = Scalar(root, 0.0);
  for (int t = 0; t < u.steps; ++t) {
    const std::vector<Output> out = step(root, inputs[t], states, weights);
    for (size_t k = 0; k < out.size(); ++k) {
      fetches.push_back(out[k]);
      const Tensor weight = random.Uniform(DType::kFloat64, values[u.steps].shape());
      const bool state = std::find(u.state_outputs.begin(), u.state_outputs.end(), k) !=
                         u.state_outputs.end();
      if (u.loss_on_every_output || state) {
        loss = Add(root, loss, Sum(root, Mul(root, out[k], weight)));
      }
    }
    for (int k = 0; k < u.num_states; ++k) states[k] = out[u.state_outputs[k]];
  }
  auto grads = Gradients(root, {loss}, inputs);
  EXPECT_TRUE(grads.ok()) << grads.status();
  if (!grads.ok()) return {};
  std::vector<std::string> names;
  for (const Output& o : fetches) names.push_back(o.name());
  for (const Output& g : *grads) names.push_back(g.name());
  auto session = NewDirectSession(root.graph());
  EXPECT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> result;
  const Status s = (*session)->Run(feeds, names, {}, &result);
  EXPECT_TRUE(s.ok()) << s;
  return result;
}

// The fused and composed unrollings agree in every output and every gradient.
void ExpectSameUnrolled(const Unrolling& u, const StepFn& fused, const StepFn& composed,
                        uint64_t seed) {
  RandomTensors random(seed);
  std::vector<Tensor> values;
  for (int t = 0; t < u.steps; ++t) {
    values.push_back(random.Uniform(DType::kFloat64, u.x_states_weights[0], -1.5, 1.5));
  }
  for (size_t k = 1; k < u.x_states_weights.size(); ++k) {
    values.push_back(random.Uniform(DType::kFloat64, u.x_states_weights[k], -1.5, 1.5));
  }
  const std::vector<Tensor> want = RunUnrolled(u, composed, values);
  const std::vector<Tensor> got = RunUnrolled(u, fused, values);
  ASSERT_EQ(want.size(), got.size());
  ASSERT_FALSE(want.empty());
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_TRUE(TensorsClose(want[k], got[k], {1e-10, 1e-12})) << "fetch " << k;
  }
}

TEST(RnnCompositionTest, LstmMatchesPrimitivesInValuesAndGradientsOverThreeSteps) {
  const int64_t b = 3, i = 4, h = 5;
  for (double clip : {-1.0, 0.6}) {
    for (bool every_output : {false, true}) {
      const Unrolling u = {3, {{b, i}, {b, h}, {b, h}, {i + h, 4 * h}, {4 * h}}, 2, {1, 6},
                           every_output};
      const StepFn fused = [&](const Scope& s, const Output& x, const std::vector<Output>& st,
                               const std::vector<Output>& wt) {
        const LstmCellOutputs c = LSTMBlockCell(s, x, st[0], st[1], wt[0], wt[1], 0.75f,
                                                static_cast<float>(clip));
        return std::vector<Output>{c.i, c.cs, c.f, c.o, c.ci, c.co, c.h};
      };
      const StepFn composed = [&](const Scope& s, const Output& x,
                                  const std::vector<Output>& st, const std::vector<Output>& wt) {
        return ComposedLstm(s, x, st, wt, h, 0.75, static_cast<float>(clip));
      };
      SCOPED_TRACE("clip " + std::to_string(clip) + (every_output ? ", every output" : ""));
      ExpectSameUnrolled(u, fused, composed, 61);
    }
  }
}

TEST(RnnCompositionTest, GruMatchesPrimitivesInValuesAndGradientsOverThreeSteps) {
  const int64_t b = 3, i = 4, h = 5;
  for (bool every_output : {false, true}) {
    const Unrolling u = {
        3, {{b, i}, {b, h}, {i + h, 2 * h}, {i + h, h}, {2 * h}, {h}}, 1, {3}, every_output};
    const StepFn fused = [](const Scope& s, const Output& x, const std::vector<Output>& st,
                            const std::vector<Output>& wt) {
      const GruCellOutputs c = GRUBlockCell(s, x, st[0], wt[0], wt[1], wt[2], wt[3]);
      return std::vector<Output>{c.r, c.u, c.c, c.h};
    };
    const StepFn composed = [&](const Scope& s, const Output& x, const std::vector<Output>& st,
                                const std::vector<Output>& wt) {
      return ComposedGru(s, x, st[0], wt, h);
    };
    SCOPED_TRACE(every_output ? "every output" : "h only");
    ExpectSameUnrolled(u, fused, composed, 62);
  }
}

// ---- Numeric gradient checks ---------------------------------------------------------

using gradient_check::GradientsMatch;
using gradient_check::Rng;

TEST(RnnGradientCheckTest, LstmEveryOutputAndTwoSteps) {
  Rng rng(71);
  const std::vector<Tensor> in = {rng.Uniform({2, 3}, -1, 1), rng.Uniform({2, 2}, -1, 1),
                                  rng.Uniform({2, 2}, -1, 1), rng.Uniform({5, 8}, -1, 1),
                                  rng.Uniform({8}, -1, 1),    rng.Uniform({2, 3}, -1, 1)};
  for (float clip : {-1.0f, 0.3f}) {
    const std::vector<Tensor> one(in.begin(), in.begin() + 5);
    EXPECT_TRUE(GradientsMatch(
        "LSTMBlockCell, every output, clip " + std::to_string(clip), one,
        [&](const Scope& s, const std::vector<Output>& v) {
          const LstmCellOutputs c = LSTMBlockCell(s, v[0], v[1], v[2], v[3], v[4], 0.5f, clip);
          return ConcatV2(s, {c.i, c.cs, c.f, c.o, c.ci, c.co, c.h}, 1);
        }));
    EXPECT_TRUE(GradientsMatch(
        "LSTMBlockCell, two steps, clip " + std::to_string(clip), in,
        [&](const Scope& s, const std::vector<Output>& v) {
          const LstmCellOutputs a = LSTMBlockCell(s, v[0], v[1], v[2], v[3], v[4], 0.5f, clip);
          const LstmCellOutputs b = LSTMBlockCell(s, v[5], a.cs, a.h, v[3], v[4], 0.5f, clip);
          return ConcatV2(s, {b.cs, b.h}, 1);
        }));
  }
}

TEST(RnnGradientCheckTest, GruEveryOutputAndTwoSteps) {
  Rng rng(72);
  const std::vector<Tensor> in = {rng.Uniform({2, 3}, -1, 1), rng.Uniform({2, 2}, -1, 1),
                                  rng.Uniform({5, 4}, -1, 1), rng.Uniform({5, 2}, -1, 1),
                                  rng.Uniform({4}, -1, 1),    rng.Uniform({2}, -1, 1),
                                  rng.Uniform({2, 3}, -1, 1)};
  const std::vector<Tensor> one(in.begin(), in.begin() + 6);
  EXPECT_TRUE(GradientsMatch("GRUBlockCell, every output", one,
                             [](const Scope& s, const std::vector<Output>& v) {
                               const GruCellOutputs c =
                                   GRUBlockCell(s, v[0], v[1], v[2], v[3], v[4], v[5]);
                               return ConcatV2(s, {c.r, c.u, c.c, c.h}, 1);
                             }));
  EXPECT_TRUE(GradientsMatch("GRUBlockCell, two steps", in,
                             [](const Scope& s, const std::vector<Output>& v) {
                               const GruCellOutputs a =
                                   GRUBlockCell(s, v[0], v[1], v[2], v[3], v[4], v[5]);
                               return GRUBlockCell(s, v[6], a.h, v[2], v[3], v[4], v[5]).h;
                             }));
}

}  // namespace
}  // namespace actorflow
