// sequence_layers.h: tiny training runs (the gradients reach every variable and Adam
// lowers the loss), the named errors and ValidateSequenceLengths. Part of
// :sequence_layers_test with sequence_layers_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "graph/ops.h"
#include "graph/shape_ops.h"
#include "graph/status_testing.h"
#include "kernels/direct_session.h"
#include "training/estimators/sequence_layers.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kVocab = 4, kSteps = 6, kBatch = 16;

// Random tokens [kBatch, kSteps] and the labels of "the previous token" (0 at t = 0),
// flattened [kBatch * kSteps] in the logits' row order (b, t).
void PreviousTokenTask(Tensor* tokens, Tensor* labels) {
  std::mt19937 gen(7);
  std::vector<int32_t> x(kBatch * kSteps), y(kBatch * kSteps);
  for (int64_t i = 0; i < kBatch * kSteps; ++i) x[i] = static_cast<int32_t>(gen() % kVocab);
  for (int64_t b = 0; b < kBatch; ++b) {
    for (int64_t t = 0; t < kSteps; ++t) y[b * kSteps + t] = t == 0 ? 0 : x[b * kSteps + t - 1];
  }
  *tokens = Tensor::FromVector(x, Shape{kBatch, kSteps});
  *labels = Tensor::FromVector(y, Shape{kBatch * kSteps});
}

// Trains logits [B*T, kVocab] with Adam on the task; returns {first loss, last loss}.
std::pair<float, float> Train(const Scope& root, const Output& logits, int steps, double lr) {
  auto labels = Placeholder(root.WithOpName("labels"), DType::kInt32, Shape{-1});
  Output loss = Mean(root, SparseSoftmaxCrossEntropyWithLogits(root, logits, labels).loss);
  AdamOptimizer adam(lr);
  auto train = adam.Minimize(root.WithOpName("train"), loss);
  EXPECT_TRUE(train.ok()) << train.status();
  GlobalVariablesInitializer(root.WithOpName("init"));
  EXPECT_TRUE(root.status().ok()) << root.status();
  auto session = NewDirectSession(root.graph(), SessionOptions());
  EXPECT_TRUE(session.ok());
  EXPECT_TRUE((*session)->Run({}, {}, {"init"}, nullptr).ok());
  Tensor tokens, targets;
  PreviousTokenTask(&tokens, &targets);
  std::pair<float, float> losses;
  for (int step = 0; step < steps; ++step) {
    std::vector<Tensor> out;
    Status s =
        (*session)->Run({{"tokens", tokens}, {"labels", targets}}, {loss.name()}, {"train"}, &out);
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) return {0.f, 0.f};
    (step == 0 ? losses.first : losses.second) = out[0].data<float>()[0];
  }
  return losses;
}

TEST(TrainingTest, LstmLearnsThePreviousToken) {
  Scope root = Scope::NewRootScope();
  auto tokens = Placeholder(root.WithOpName("tokens"), DType::kInt32, Shape{-1, kSteps});
  Output onehot = OneHot(root, tokens, kVocab);  // [B, T, V]
  layers::LSTM lstm("lstm", {.units = 16});
  ASSERT_OK_AND_ASSIGN(auto out, lstm(root, Unpack(root, onehot, kSteps, 1)));
  Output hidden =
      Reshape(root, Pack(root, out.outputs, 1), Tensor::FromVector(std::vector<int32_t>{-1, 16}));
  layers::Dense dense("logits", {.units = kVocab});
  ASSERT_OK_AND_ASSIGN(Output logits, dense(root, hidden));
  auto [first, last] = Train(root, logits, 150, 0.03);
  EXPECT_GT(first, 1.0f);
  EXPECT_LT(last, 0.1f * first) << "first " << first << ", last " << last;
}

TEST(TrainingTest, CausalTransformerLearnsThePreviousToken) {
  constexpr int64_t D = 16;
  Scope root = Scope::NewRootScope();
  auto tokens = Placeholder(root.WithOpName("tokens"), DType::kInt32, Shape{-1, kSteps});
  layers::Embedding embed("embedding", {.vocab = kVocab, .dim = D, .stddev = 0.5});
  layers::Embedding positions("positions", {.vocab = kSteps, .dim = D, .stddev = 0.5, .seed = 2});
  ASSERT_OK_AND_ASSIGN(Output x, embed(root, tokens));  // [B, T, D]
  std::vector<int32_t> ids(kSteps);
  for (int32_t t = 0; t < kSteps; ++t) ids[t] = t;
  ASSERT_OK_AND_ASSIGN(Output where, positions(root, Const(root, Tensor::FromVector(ids))));
  layers::TransformerBlock block("block", {.num_heads = 2, .causal = true});
  ASSERT_OK_AND_ASSIGN(Output y, block(root, Add(root, x, where)));
  EXPECT_EQ(block.variables().size(), 2u + 8u + 2u + 4u);
  EXPECT_EQ(block.variables()[2].node->name(), "block/attention/query/kernel");
  layers::Dense dense("logits", {.units = kVocab});
  ASSERT_OK_AND_ASSIGN(
      Output logits,
      dense(root, Reshape(root, y, Tensor::FromVector(std::vector<int32_t>{-1, D}))));
  auto [first, last] = Train(root, logits, 150, 0.01);
  EXPECT_GT(first, 1.0f);
  EXPECT_LT(last, 0.1f * first) << "first " << first << ", last " << last;
}

TEST(ErrorsTest, RecurrentLayersNameTheLayerAndTheShapes) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root, DType::kFloat32, Shape{-1, 3});
  auto wide = Placeholder(root, DType::kFloat32, Shape{-1, 5});
  auto ints = Placeholder(root, DType::kInt32, Shape{-1, 3});
  layers::LSTM lstm("lstm", {.units = 4});
  EXPECT_THAT(lstm(root, {}).status().message(), HasSubstr("lstm: steps is empty"));
  Status mixed = lstm(root, {x, wide}).status();
  EXPECT_EQ(mixed.code(), Code::kInvalidArgument);
  EXPECT_THAT(mixed.message(), HasSubstr("lstm: step 1 is"));
  EXPECT_THAT(mixed.message(), HasSubstr("[?,5]"));
  EXPECT_THAT(mixed.message(), HasSubstr("every step must have one shape"));
  EXPECT_THAT(lstm(root, {ints}).status().message(), HasSubstr("expected float32 [B, I]"));
  auto h = Placeholder(root, DType::kFloat32, Shape{-1, 4});
  auto bad_h = Placeholder(root, DType::kFloat32, Shape{-1, 7});
  EXPECT_THAT(lstm(root, {x}, {h}).status().message(),
              HasSubstr("lstm: initial_state has 1 tensors, expected 2"));
  EXPECT_THAT(lstm(root, {x}, {h, bad_h}).status().message(),
              HasSubstr("lstm: initial_state[1] is"));
  auto float_lengths = Placeholder(root, DType::kFloat32, Shape{-1});
  EXPECT_THAT(lstm(root, {x}, {}, float_lengths).status().message(),
              HasSubstr("lstm: sequence_length is"));
  ASSERT_OK(lstm(root, {x}).status());
  EXPECT_THAT(lstm(root, {wide}).status().message(),
              HasSubstr("lstm: built for inputs with 3 in the last dim, now given 5"));
  layers::GRU gru("gru", {.units = 4});
  EXPECT_THAT(gru(root, {x}, {h, h}).status().message(),
              HasSubstr("gru: initial_state has 2 tensors, expected 1"));
  EXPECT_THAT(layers::GRU("zero", {})(root, {x}).status().message(),
              HasSubstr("zero: units must be >= 1"));
  EXPECT_THAT(layers::Embedding("embed", {.vocab = 3, .dim = 2})(root, x).status().message(),
              HasSubstr("embed: ids are"));
}

TEST(ErrorsTest, AttentionLayersNameTheLayerAndTheShapes) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root, DType::kFloat32, Shape{-1, 4, 128});
  auto unknown_t = Placeholder(root, DType::kFloat32, Shape{-1, -1, 8});
  auto flat = Placeholder(root, DType::kFloat32, Shape{-1, 8});
  auto narrow = Placeholder(root, DType::kFloat32, Shape{-1, 4, 6});
  layers::MultiHeadAttention mha("mha", {.num_heads = 3});
  EXPECT_THAT(mha(root, x).status().message(),
              HasSubstr("mha: num_heads 3 does not divide the width 128"));
  layers::TransformerBlock block("block", {.num_heads = 3});
  EXPECT_THAT(block(root, x).status().message(),
              HasSubstr("block: num_heads 3 does not divide the width 128"));
  EXPECT_THAT(mha(root, unknown_t).status().message(),
              HasSubstr("expected float32 [B, T, D] with T and D known"));
  EXPECT_THAT(mha(root, flat).status().message(), HasSubstr("mha: input"));
  layers::MultiHeadAttention two("two", {.num_heads = 2});
  ASSERT_OK(two(root, x).status());
  EXPECT_THAT(two(root, narrow).status().message(),
              HasSubstr("two: built for inputs with 128 in the last dim, now given 6"));
  layers::TransformerBlock ok_block("ok", {.num_heads = 2, .mlp_units = 8});
  ASSERT_OK(ok_block(root, x).status());
  EXPECT_THAT(ok_block(root, narrow).status().message(),
              HasSubstr("ok: built for inputs with 128"));
  layers::LayerNormalization ln("ln");
  ASSERT_OK(ln(root, flat).status());
  EXPECT_THAT(ln(root, x).status().message(), HasSubstr("ln: built for inputs with 8"));
  auto ints = Placeholder(root, DType::kInt32, Shape{-1, 8});
  EXPECT_THAT(layers::LayerNormalization("ln2")(root, ints).status().message(),
              HasSubstr("ln2: input"));
}

TEST(ValidateSequenceLengthsTest, NamesTheFirstBadRow) {
  EXPECT_OK(ValidateSequenceLengths(Tensor::FromVector(std::vector<int32_t>{0, 3, 2}), 3));
  EXPECT_OK(ValidateSequenceLengths(Tensor::FromVector(std::vector<int64_t>{1, 3}), 3));
  Status too_long = ValidateSequenceLengths(Tensor::FromVector(std::vector<int32_t>{1, 4, 9}), 3);
  EXPECT_EQ(too_long.code(), Code::kInvalidArgument);
  EXPECT_THAT(too_long.message(), HasSubstr("row 1 is 4, outside [0, 3]"));
  EXPECT_THAT(ValidateSequenceLengths(Tensor::FromVector(std::vector<int64_t>{2, -1}), 3).message(),
              HasSubstr("row 1 is -1"));
  EXPECT_THAT(ValidateSequenceLengths(Tensor::FromVector(std::vector<float>{1.f}), 3).message(),
              HasSubstr("expected an int32 or int64 vector"));
  EXPECT_THAT(
      ValidateSequenceLengths(Tensor::FromVector(std::vector<int32_t>{1, 2}, Shape{1, 2}), 3)
          .message(),
      HasSubstr("expected an int32 or int64 vector"));
}

}  // namespace
}  // namespace actorflow
