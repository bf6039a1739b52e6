// Tests of sequence_layers.h: the recurrent layers against hand-unrolled fused cells,
// sequence_length masking, attention against a loop reference, gradients, tiny
// training runs and the named errors.
//
// The layers are float32-only (their contract), so GradientsMatch (float64
// placeholders, h = 1e-6) does not apply: GradientsMatchInFloat32 below compares
// Gradients() with central differences of its own, h = 1e-2, in float32 with a
// tolerance of 2e-3 (scale-safe, as gradient_check_util's metric).
#include "training/estimators/sequence_layers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "graph/gradients.h"
#include "graph/ops.h"
#include "graph/rnn_ops.h"
#include "graph/shape_ops.h"
#include "graph/status_testing.h"
#include "kernels/direct_session.h"
#include "kernels/gradient_check_util.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

Tensor Random(const Shape& shape, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

// Rows [begin, begin + count) of a [B, ...] float tensor.
Tensor Rows(const Tensor& t, int64_t begin, int64_t count) {
  std::vector<int64_t> dims = t.shape().dims();
  const int64_t row = t.NumElements() / dims[0];
  dims[0] = count;
  Tensor out(DType::kFloat32, Shape(dims));
  for (int64_t i = 0; i < count * row; ++i) out.data<float>()[i] = t.data<float>()[begin * row + i];
  return out;
}

void ExpectNear(const Tensor& actual, const Tensor& expected, float tolerance = 1e-5f) {
  ASSERT_EQ(actual.shape().ToString(), expected.shape().ToString());
  for (int64_t i = 0; i < actual.NumElements(); ++i) {
    EXPECT_NEAR(actual.data<float>()[i], expected.data<float>()[i], tolerance) << "element " << i;
  }
}

struct Session1 {
  std::unique_ptr<Session> session;
  std::vector<Tensor> Run(const FeedList& feeds, const std::vector<Output>& fetches) {
    std::vector<std::string> names;
    for (const Output& f : fetches) names.push_back(f.name());
    std::vector<Tensor> out;
    Status s = session->Run(feeds, names, {}, &out);
    EXPECT_TRUE(s.ok()) << s;
    return out;
  }
};

// A session over root's graph with every variable initialized.
Session1 Start(const Scope& root) {
  GlobalVariablesInitializer(root.WithOpName("init"));
  EXPECT_TRUE(root.status().ok()) << root.status();
  auto session = NewDirectSession(root.graph(), SessionOptions());
  EXPECT_TRUE(session.ok()) << session.status();
  Session1 s{std::move(*session)};
  EXPECT_TRUE(s.session->Run({}, {}, {"init"}, nullptr).ok());
  return s;
}

// T placeholders [-1, I] ("x0", "x1", ...) and feeds of rows from `values` [B, T, I].
std::vector<Output> StepPlaceholders(const Scope& root, int64_t steps, int64_t in) {
  std::vector<Output> xs;
  for (int64_t t = 0; t < steps; ++t) {
    xs.push_back(
        Placeholder(root.WithOpName("x" + std::to_string(t)), DType::kFloat32, Shape{-1, in}));
  }
  return xs;
}
FeedList StepFeeds(const std::vector<Tensor>& per_step) {
  FeedList feeds;
  for (size_t t = 0; t < per_step.size(); ++t)
    feeds.push_back({"x" + std::to_string(t), per_step[t]});
  return feeds;
}

// The composition `cells` builds (per step, from Consts of the fetched weights) run
// in a graph of its own: the hand-unrolled reference.
std::vector<Tensor> RunReference(const std::function<std::vector<Output>(const Scope&)>& build) {
  Scope ref = Scope::NewRootScope();
  std::vector<Output> fetches = build(ref);
  EXPECT_TRUE(ref.status().ok()) << ref.status();
  auto session = NewDirectSession(ref.graph(), SessionOptions());
  EXPECT_TRUE(session.ok());
  return Session1{std::move(*session)}.Run({}, fetches);
}

constexpr int64_t kB = 2, kT = 3, kI = 3, kH = 4;

TEST(RecurrentTest, LstmEqualsHandUnrolledBlockCells) {
  Scope root = Scope::NewRootScope();
  std::vector<Output> xs = StepPlaceholders(root, kT, kI);
  layers::LSTM lstm("lstm", {.units = kH, .forget_bias = 0.5f, .seed = 3});
  ASSERT_OK_AND_ASSIGN(layers::RecurrentOutputs out, lstm(root, xs));
  ASSERT_EQ(lstm.variables().size(), 2u);
  EXPECT_EQ(lstm.variables()[0].node->name(), "lstm/kernel");
  EXPECT_EQ(lstm.variables()[0].shape().ToString(), "[7,16]");
  EXPECT_EQ(out.outputs[0].shape().ToString(), "[?,4]");
  Session1 s = Start(root);
  std::vector<Tensor> x;
  for (int t = 0; t < kT; ++t) x.push_back(Random(Shape{kB, kI}, 10 + t));
  std::vector<Tensor> got = s.Run(StepFeeds(x), {out.outputs[0], out.outputs[1], out.outputs[2],
                                                 out.final_state[0], out.final_state[1]});
  std::vector<Tensor> w = s.Run({}, lstm.variables());
  std::vector<Tensor> want = RunReference([&](const Scope& r) {
    Output c = Const(r, Tensor(DType::kFloat32, Shape{kB, kH})), h = c;
    std::vector<Output> fetches;
    for (int t = 0; t < kT; ++t) {
      LstmCellOutputs cell =
          LSTMBlockCell(r, Const(r, x[t]), c, h, Const(r, w[0]), Const(r, w[1]), 0.5f);
      c = cell.cs;
      h = cell.h;
      fetches.push_back(h);
    }
    fetches.push_back(c);
    fetches.push_back(h);
    return fetches;
  });
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) ExpectNear(got[k], want[k]);
}

TEST(RecurrentTest, GruEqualsHandUnrolledBlockCells) {
  Scope root = Scope::NewRootScope();
  std::vector<Output> xs = StepPlaceholders(root, kT, kI);
  layers::GRU gru("gru", {.units = kH, .seed = 4});
  ASSERT_OK_AND_ASSIGN(layers::RecurrentOutputs out, gru(root, xs));
  ASSERT_EQ(gru.variables().size(), 4u);
  EXPECT_EQ(gru.variables()[2].node->name(), "gru/candidate_kernel");
  Session1 s = Start(root);
  std::vector<Tensor> x;
  for (int t = 0; t < kT; ++t) x.push_back(Random(Shape{kB, kI}, 20 + t));
  std::vector<Tensor> got =
      s.Run(StepFeeds(x), {out.outputs[0], out.outputs[1], out.outputs[2], out.final_state[0]});
  std::vector<Tensor> w = s.Run({}, gru.variables());
  std::vector<Tensor> want = RunReference([&](const Scope& r) {
    Output h = Const(r, Tensor(DType::kFloat32, Shape{kB, kH}));
    std::vector<Output> fetches;
    for (int t = 0; t < kT; ++t) {
      h = GRUBlockCell(r, Const(r, x[t]), h, Const(r, w[0]), Const(r, w[2]), Const(r, w[1]),
                       Const(r, w[3]))
              .h;
      fetches.push_back(h);
    }
    fetches.push_back(h);
    return fetches;
  });
  for (size_t k = 0; k < got.size(); ++k) ExpectNear(got[k], want[k]);
}

TEST(RecurrentTest, SequenceLengthKeepsTheStateAndZeroesTheOutputs) {
  Scope root = Scope::NewRootScope();
  std::vector<Output> xs = StepPlaceholders(root, kT, kI);
  auto lengths = Placeholder(root.WithOpName("lengths"), DType::kInt32, Shape{-1});
  layers::LSTM lstm("lstm", {.units = kH});
  ASSERT_OK_AND_ASSIGN(layers::RecurrentOutputs masked, lstm(root, xs, {}, lengths));
  // The same layer (same variables) over the first two steps only.
  ASSERT_OK_AND_ASSIGN(layers::RecurrentOutputs two, lstm(root, {xs[0], xs[1]}));
  Session1 s = Start(root);
  std::vector<Tensor> x;
  for (int t = 0; t < kT; ++t) x.push_back(Random(Shape{kB, kI}, 30 + t));
  FeedList feeds = StepFeeds(x);
  feeds.push_back({"lengths", Tensor::FromVector(std::vector<int32_t>{3, 2})});
  std::vector<Tensor> got = s.Run(
      feeds, {masked.outputs[1], masked.outputs[2], masked.final_state[0], masked.final_state[1]});
  // Row 1 alone, two steps.
  std::vector<Tensor> want = s.Run({{"x0", Rows(x[0], 1, 1)}, {"x1", Rows(x[1], 1, 1)}},
                                   {two.outputs[1], two.final_state[0], two.final_state[1]});
  ExpectNear(Rows(got[0], 1, 1), want[0]);
  ExpectNear(Rows(got[1], 1, 1), Tensor(DType::kFloat32, Shape{1, kH}));  // zeros at step 3
  ExpectNear(Rows(got[2], 1, 1), want[1]);
  ExpectNear(Rows(got[3], 1, 1), want[2]);
  // Row 0 runs all three steps: its output at step 3 is its final h, not zeros.
  ExpectNear(Rows(got[1], 0, 1), Rows(got[3], 0, 1));
  EXPECT_GT(std::fabs(got[1].data<float>()[0]), 1e-4f);
}

TEST(RecurrentTest, ZeroInitialStateWithAnUnknownBatch) {
  Scope root = Scope::NewRootScope();
  std::vector<Output> xs = StepPlaceholders(root, 2, kI);
  auto zeros = Placeholder(root.WithOpName("zeros"), DType::kFloat32, Shape{-1, kH});
  layers::GRU gru("gru", {.units = kH});
  ASSERT_OK_AND_ASSIGN(layers::RecurrentOutputs implicit, gru(root, xs));
  ASSERT_OK_AND_ASSIGN(layers::RecurrentOutputs given, gru(root, xs, {zeros}));
  EXPECT_EQ(implicit.final_state[0].shape().ToString(), "[?,4]");
  Session1 s = Start(root);
  for (int64_t batch : {1, 5}) {
    FeedList feeds = StepFeeds({Random(Shape{batch, kI}, 1), Random(Shape{batch, kI}, 2)});
    feeds.push_back({"zeros", Tensor(DType::kFloat32, Shape{batch, kH})});
    std::vector<Tensor> got = s.Run(feeds, {implicit.final_state[0], given.final_state[0]});
    EXPECT_EQ(got[0].shape().ToString(), Shape({batch, kH}).ToString());
    ExpectNear(got[0], got[1]);
  }
}

// x [B, T, D] through MultiHeadAttention computed with loops from the variables'
// values w = {Wq, bq, Wk, bk, Wv, bv, Wo, bo}.
Tensor ReferenceAttention(const Tensor& x, const std::vector<Tensor>& w, int64_t heads,
                          bool causal) {
  const int64_t B = x.shape().dim(0), T = x.shape().dim(1), D = x.shape().dim(2), dh = D / heads;
  auto project = [&](const float* in, int k, int64_t rows) {
    std::vector<float> y(rows * D);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < D; ++j) {
        float acc = w[2 * k + 1].data<float>()[j];
        for (int64_t i = 0; i < D; ++i) acc += in[r * D + i] * w[2 * k].data<float>()[i * D + j];
        y[r * D + j] = acc;
      }
    }
    return y;
  };
  const float* xs = x.data<float>();
  std::vector<float> q = project(xs, 0, B * T), k = project(xs, 1, B * T),
                     v = project(xs, 2, B * T), context(B * T * D, 0.f);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t t = 0; t < T; ++t) {
        std::vector<double> p(T, 0.0);
        double max = -1e30, total = 0.0;
        for (int64_t u = 0; u < T; ++u) {
          double dot = 0.0;
          for (int64_t j = h * dh; j < (h + 1) * dh; ++j)
            dot += q[(b * T + t) * D + j] * k[(b * T + u) * D + j];
          p[u] = causal && u > t ? -1e30 : dot / std::sqrt(static_cast<double>(dh));
          max = std::max(max, p[u]);
        }
        for (double& e : p) total += (e = std::exp(e - max));
        for (int64_t u = 0; u < T; ++u) {
          for (int64_t j = h * dh; j < (h + 1) * dh; ++j) {
            context[(b * T + t) * D + j] +=
                static_cast<float>(p[u] / total) * v[(b * T + u) * D + j];
          }
        }
      }
    }
  }
  std::vector<float> y = project(context.data(), 3, B * T);
  return Tensor::FromVector(y, x.shape());
}

TEST(AttentionTest, MatchesALoopReferenceAndCausalOutputsIgnoreTheFuture) {
  constexpr int64_t B = 2, T = 4, D = 6;
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{-1, T, D});
  layers::MultiHeadAttention full("mha", {.num_heads = 2, .seed = 5});
  layers::MultiHeadAttention causal("causal", {.num_heads = 3, .causal = true, .seed = 6});
  ASSERT_OK_AND_ASSIGN(Output y_full, full(root, x));
  ASSERT_OK_AND_ASSIGN(Output y_causal, causal(root, x));
  EXPECT_EQ(y_full.shape().ToString(), "[?,4,6]");
  EXPECT_EQ(full.variables()[6].node->name(), "mha/output/kernel");
  Session1 s = Start(root);
  // Non-zero biases, so that the reference checks where they are added too.
  for (const layers::MultiHeadAttention* layer : {&full, &causal}) {
    for (int k = 1; k < 8; k += 2) {
      Scope a = root.NewSubScope("set_" + layer->name() + std::to_string(k));
      Output assign = Assign(a, layer->variables()[k], Random(Shape{D}, 40 + k));
      ASSERT_OK(a.status());
      s.Run({}, {assign});
    }
  }
  const Tensor x1 = Random(Shape{B, T, D}, 7, -2.f, 2.f);
  std::vector<Tensor> got = s.Run({{"x", x1}}, {y_full, y_causal});
  ExpectNear(got[0], ReferenceAttention(x1, s.Run({}, full.variables()), 2, false), 1e-4f);
  ExpectNear(got[1], ReferenceAttention(x1, s.Run({}, causal.variables()), 3, true), 1e-4f);
  // Changing x[:, t+1:] leaves the causal outputs at positions <= t alone.
  for (int64_t t = 0; t + 1 < T; ++t) {
    Tensor x2 = x1.DeepCopy();
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t i = (b * T + t + 1) * D; i < (b + 1) * T * D; ++i) x2.data<float>()[i] += 1.5f;
    }
    std::vector<Tensor> moved = s.Run({{"x", x2}}, {y_causal, y_full});
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t u = 0; u < T; ++u) {
        double diff = 0.0, diff_full = 0.0;
        for (int64_t j = 0; j < D; ++j) {
          const int64_t i = (b * T + u) * D + j;
          diff += std::fabs(moved[0].data<float>()[i] - got[1].data<float>()[i]);
          diff_full += std::fabs(moved[1].data<float>()[i] - got[0].data<float>()[i]);
        }
        if (u <= t) {
          EXPECT_LT(diff, 1e-5) << "t " << t << " position " << u;
        } else {
          EXPECT_GT(diff, 1e-3) << "t " << t << " position " << u;
        }
        EXPECT_GT(diff_full, 1e-3) << "non-causal attention sees every position";
      }
    }
  }
}

// Gradients() of L = Sum(f(x) * W) (W fixed, random) w.r.t. the float32 placeholder x
// against central differences with h = 1e-2 (see the file comment).
void ExpectGradientsMatchInFloat32(const std::string& what, const Tensor& x0,
                                   const std::function<StatusOr<Output>(const Scope&, Output)>& f) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, x0.shape());
  ASSERT_OK_AND_ASSIGN(Output y, f(root, x));
  Output weights = Const(root, Random(y.shape(), 99));
  Output loss = Sum(root, Mul(root, y, weights));
  ASSERT_OK_AND_ASSIGN(std::vector<Output> grads, Gradients(root, {loss}, {x}));
  Session1 s = Start(root);
  const Tensor symbolic = s.Run({{"x", x0}}, {grads[0]})[0];
  constexpr float h = 1e-2f;
  for (int64_t i = 0; i < x0.NumElements(); ++i) {
    Tensor plus = x0.DeepCopy(), minus = x0.DeepCopy();
    plus.data<float>()[i] += h;
    minus.data<float>()[i] -= h;
    const double numeric = (s.Run({{"x", plus}}, {loss})[0].data<float>()[0] -
                            s.Run({{"x", minus}}, {loss})[0].data<float>()[0]) /
                           (2.0 * h);
    const double g = symbolic.data<float>()[i];
    const double error = std::fabs(g - numeric) / std::max({1.0, std::fabs(g), std::fabs(numeric)});
    gradient_check::Record(error, what + " in float32, h = 1e-2");
    EXPECT_LT(error, 2e-3) << what << " element " << i << ": " << g << " vs " << numeric;
  }
  EXPECT_GT(std::fabs(symbolic.data<float>()[0]), 0.f) << what;
}

TEST(GradientTest, LayersMatchCentralDifferences) {
  ExpectGradientsMatchInFloat32(
      "lstm", Random(Shape{2, 3, 2}, 50), [](const Scope& s, Output x) -> StatusOr<Output> {
        layers::LSTM lstm("lstm", {.units = 3});
        AF_ASSIGN_OR_RETURN(auto out,
                            lstm(s, Unpack(s, x, 3, 1), {},
                                 Const(s, Tensor::FromVector(std::vector<int32_t>{3, 2}))));
        return Pack(s, {out.outputs[0], out.outputs[2], out.final_state[0]}, 1);
      });
  ExpectGradientsMatchInFloat32("gru", Random(Shape{2, 3, 2}, 51),
                                [](const Scope& s, Output x) -> StatusOr<Output> {
                                  layers::GRU gru("gru", {.units = 3});
                                  AF_ASSIGN_OR_RETURN(auto out, gru(s, Unpack(s, x, 3, 1)));
                                  return Pack(s, out.outputs, 1);
                                });
  ExpectGradientsMatchInFloat32(
      "attention", Random(Shape{1, 3, 4}, 52), [](const Scope& s, Output x) {
        layers::MultiHeadAttention mha("mha", {.num_heads = 2, .causal = true});
        return mha(s, x);
      });
  ExpectGradientsMatchInFloat32(
      "layer_norm", Random(Shape{2, 5}, 53, -2.f, 2.f),
      [](const Scope& s, Output x) { return layers::LayerNormalization("ln")(s, x); });
  ExpectGradientsMatchInFloat32(
      "transformer", Random(Shape{1, 3, 4}, 54), [](const Scope& s, Output x) {
        layers::TransformerBlock block("block", {.num_heads = 2, .mlp_units = 8});
        return block(s, x);
      });
}

}  // namespace
}  // namespace actorflow
