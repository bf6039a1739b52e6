#include "training/estimators/char_lm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <numeric>
#include <optional>
#include <utility>

#include "graph/ops.h"
#include "graph/shape_ops.h"
#include "training/estimators/model_dir.h"
#include "training/estimators/sequence_layers.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

constexpr int kFirstEvaluationStep = 10;
constexpr double kLn2 = 0.6931471805599453;

Output ShapeConst(const Scope& s, std::vector<int32_t> dims) {
  return Const(s, Tensor::FromVector(dims));
}

// [B, T] ids -> [B * T, features]: the LSTM stack's outputs.
StatusOr<std::pair<Output, int64_t>> LstmStack(const Scope& root, const CharLmSpec& spec,
                                               const Output& embedded) {
  std::vector<Output> steps = Unpack(root.NewSubScope("steps"), embedded, spec.seq_len, 1);
  int64_t layer = 0;
  for (int64_t units : spec.lstm_units) {
    layers::LSTM lstm("lstm_" + std::to_string(layer),
                      {units, 1.0f, static_cast<int64_t>(spec.seed) + 10 + layer});
    AF_ASSIGN_OR_RETURN(layers::RecurrentOutputs out, lstm(root, steps));
    steps = std::move(out.outputs);
    ++layer;
  }
  const int64_t units = spec.lstm_units.back();
  const Scope s = root.NewSubScope("lstm_outputs");
  return std::make_pair(Reshape(s, Pack(s, steps, 1), ShapeConst(s, {-1, static_cast<int32_t>(units)})),
                        units);
}

// [B, T, width] embedded ids -> [B * T, width]: positions added, the blocks, a norm.
StatusOr<std::pair<Output, int64_t>> TransformerStack(const Scope& root, const CharLmSpec& spec,
                                                      const Output& embedded) {
  const int64_t seed = static_cast<int64_t>(spec.seed);
  const Scope init = root.NewSubScope("positions_init");
  AF_ASSIGN_OR_RETURN(
      Output positions,
      CreateVariable(root, "positions",
                     TruncatedNormal(init, Shape{spec.seq_len, spec.width}, DType::kFloat32,
                                     seed + 5, 0.0, 0.02)));
  Output x = Add(root.NewSubScope("add_positions"), embedded, positions);
  for (int64_t k = 0; k < spec.blocks; ++k) {
    layers::TransformerBlock block("block_" + std::to_string(k),
                                   {spec.heads, 0, /*causal=*/true, seed + 10 + k});
    AF_ASSIGN_OR_RETURN(x, block(root, x));
  }
  layers::LayerNormalization norm("final_norm");
  AF_ASSIGN_OR_RETURN(x, norm(root, x));
  const Scope s = root.NewSubScope("transformer_outputs");
  return std::make_pair(Reshape(s, x, ShapeConst(s, {-1, static_cast<int32_t>(spec.width)})),
                        spec.width);
}

double DefaultLearningRate(const CharLmSpec& spec) {
  return spec.model == "char-lstm" ? 0.002 : 0.001;
}

// Sums the cross-entropy (nats) over the validation windows and returns bits per
// character.
StatusOr<double> Evaluate(Session* session, const std::vector<CharBatch>& batches) {
  double total = 0;
  int64_t count = 0;
  for (const CharBatch& b : batches) {
    const FeedList feeds = {
        {"inputs", Tensor::FromVector(b.inputs, Shape{b.batch, b.seq_len})},
        {"targets", Tensor::FromVector(b.targets, Shape{b.batch, b.seq_len})}};
    std::vector<Tensor> out;
    AF_RETURN_IF_ERROR(session->Run(feeds, {"losses"}, {}, &out));
    const float* losses = out[0].data<float>();
    for (int64_t i = 0; i < out[0].NumElements(); ++i) total += losses[i];
    count += out[0].NumElements();
  }
  if (count == 0) return InvalidArgument("char LM: the validation split holds no window");
  return total / static_cast<double>(count) / kLn2;
}

// Writes char_lm.json into a new model directory, or checks an existing one's.
Status PrepareCharLmDir(const std::string& dir, const CharLmSpec& spec) {
  if (dir.empty()) return Status::OK();
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  StatusOr<CharLmSpec> existing = ReadCharLmSpec(dir);
  if (existing.ok()) {
    if (*existing != spec) {
      return FailedPrecondition("--checkpoint-dir " + dir + " holds another model (" +
                                DescribeCharLmDifference(*existing, spec) +
                                "): use another directory");
    }
    return Status::OK();
  }
  if (existing.status().code() != Code::kNotFound) return existing.status();
  return WriteFileByRename(dir + "/" + kCharLmSpecFile, CharLmSpecToJson(spec));
}

}  // namespace

Status BuildCharLm(const Scope& root, const CharLmSpec& spec, double learning_rate) {
  AF_RETURN_IF_ERROR(ValidateCharLmSpec(spec));
  const int64_t vocab = static_cast<int64_t>(spec.vocabulary.size());
  const bool lstm = spec.model == "char-lstm";
  const Output inputs =
      Placeholder(root.WithOpName("inputs"), DType::kInt32, Shape{-1, spec.seq_len});
  const Output targets =
      Placeholder(root.WithOpName("targets"), DType::kInt32, Shape{-1, spec.seq_len});
  layers::Embedding embedding("embedding", {vocab, lstm ? spec.embedding_dim : spec.width, 1.0,
                                            static_cast<int64_t>(spec.seed)});
  AF_ASSIGN_OR_RETURN(Output embedded, embedding(root, inputs));
  std::pair<Output, int64_t> hidden;
  if (lstm) {
    AF_ASSIGN_OR_RETURN(hidden, LstmStack(root, spec, embedded));
  } else {
    AF_ASSIGN_OR_RETURN(hidden, TransformerStack(root, spec, embedded));
  }
  layers::Dense output("output", {vocab, Activation::kNone, static_cast<int64_t>(spec.seed) + 99});
  AF_ASSIGN_OR_RETURN(Output logits, output(root, hidden.first));
  Identity(root.WithOpName("logits"), logits);
  const Scope loss_scope = root.NewSubScope("cross_entropy");
  const Output labels = Reshape(loss_scope, targets, ShapeConst(loss_scope, {-1}));
  const Output losses = Identity(
      root.WithOpName("losses"), SparseSoftmaxCrossEntropyWithLogits(loss_scope, logits, labels).loss);
  const Output loss = Mean(root.WithOpName("loss"), losses);
  if (learning_rate > 0) {
    AF_ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> adam, MakeOptimizer("adam", learning_rate));
    AF_RETURN_IF_ERROR(adam->Minimize(root.WithOpName("train"), loss).status());
  }
  GlobalVariablesInitializer(root.WithOpName("init"));
  return root.status();
}

StatusOr<CharLmResult> TrainCharLm(const CharLmOptions& o, const CharCorpus& corpus,
                                   const WorkerSessionFactory& sessions) {
  CharLmSpec spec = o.spec;
  spec.vocabulary = corpus.vocabulary;
  AF_RETURN_IF_ERROR(ValidateCharLmSpec(spec));
  if (o.batch < 1 || o.steps < 1 || o.eval_chars < 0 || o.learning_rate < 0) {
    return InvalidArgument("char LM: batch and steps must be >= 1, eval_chars and the "
                           "learning rate >= 0");
  }
  if (static_cast<int64_t>(corpus.train.size()) <= spec.seq_len ||
      static_cast<int64_t>(corpus.validation.size()) <= spec.seq_len) {
    return InvalidArgument("char LM: --seq-len " + std::to_string(spec.seq_len) +
                           " is longer than the text's training (" +
                           std::to_string(corpus.train.size()) + " characters) or validation (" +
                           std::to_string(corpus.validation.size()) + ") part");
  }
  AF_RETURN_IF_ERROR(PrepareCharLmDir(o.checkpoint_dir, spec));
  Scope root = Scope::NewRootScope();
  const double lr = o.learning_rate > 0 ? o.learning_rate : DefaultLearningRate(spec);
  AF_RETURN_IF_ERROR(BuildCharLm(root, spec, lr));
  AF_ASSIGN_OR_RETURN(ChiefCheckpoints checkpoints,
                      ChiefCheckpoints::Create(root.graph(), o.checkpoint_dir));
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, sessions(root.graph(), 0));
  AF_ASSIGN_OR_RETURN(const int64_t restored_step,
                      checkpoints.RestoreOrInitialize(session.get(), "init"));

  std::vector<int32_t> validation = corpus.validation;
  if (o.eval_chars > 0 && static_cast<int64_t>(validation.size()) > o.eval_chars + 1) {
    validation.resize(o.eval_chars + 1);
  }
  const std::vector<CharBatch> eval_batches =
      SequentialCharBatches(validation, spec.seq_len, o.batch);
  CharWindows windows(corpus.train, spec.seq_len, o.data_seed + static_cast<uint64_t>(restored_step));
  CharLmResult result;
  double trained = 0;
  for (int64_t step = 0; step < o.steps; ++step) {
    const CharBatch b = windows.Next(o.batch);
    const FeedList feeds = {
        {"inputs", Tensor::FromVector(b.inputs, Shape{b.batch, b.seq_len})},
        {"targets", Tensor::FromVector(b.targets, Shape{b.batch, b.seq_len})}};
    std::vector<Tensor> out;
    const auto start = std::chrono::steady_clock::now();
    Status s = session->Run(feeds, {"loss"}, {"train"}, &out);
    trained += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!s.ok()) return s.WithContext("char LM step " + std::to_string(step));
    result.losses.push_back(out[0].data<float>()[0]);
    if (o.on_step) o.on_step(0, step + 1, o.steps, result.losses.back());
    if (step + 1 == std::min<int64_t>(kFirstEvaluationStep, o.steps)) {
      AF_ASSIGN_OR_RETURN(result.first_bits_per_char, Evaluate(session.get(), eval_batches));
    }
  }
  AF_ASSIGN_OR_RETURN(result.bits_per_char, Evaluate(session.get(), eval_batches));
  result.steps = o.steps;
  result.global_step = restored_step + o.steps;
  result.seconds = trained;
  result.samples_per_second = trained > 0 ? static_cast<double>(o.steps * o.batch) / trained : 0;
  ServingSpec serving{spec.model, {{"inputs", "inputs"}}, {{"logits", "logits"}}};
  AF_RETURN_IF_ERROR(checkpoints.Save(session.get(), result.global_step, *root.graph(), serving));
  return result;
}

}  // namespace actorflow
