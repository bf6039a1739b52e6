#include "training/estimators/char_lm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "graph/ops.h"
#include "training/estimators/model_dir.h"

namespace actorflow {
namespace {

constexpr int kFirstEvaluationStep = 10;
constexpr double kLn2 = 0.6931471805599453;

double DefaultLearningRate(const CharLmSpec& spec) {
  return spec.model == "char-lstm" ? 0.002 : 0.001;
}

// The feeds of `b`, its rows repeated from the first until there are at least
// `parts` (every micro-batch or tower then has a row; the repeats' losses are
// ignored).
FeedList FeedsOf(CharBatch b, int parts) {
  for (int64_t row = 0; b.batch < parts; ++row, ++b.batch) {
    for (std::vector<int32_t>* ids : {&b.inputs, &b.targets}) {
      // A copy first: insert() may not read from the vector it grows.
      const std::vector<int32_t> repeated(ids->begin() + row * b.seq_len,
                                          ids->begin() + (row + 1) * b.seq_len);
      ids->insert(ids->end(), repeated.begin(), repeated.end());
    }
  }
  return {{"inputs", Tensor::FromVector(b.inputs, Shape{b.batch, b.seq_len})},
          {"targets", Tensor::FromVector(b.targets, Shape{b.batch, b.seq_len})}};
}

// Sums the cross-entropy (nats) over the validation windows and returns bits per
// character.
StatusOr<double> EvaluateBitsPerChar(Session* session, const std::vector<CharBatch>& batches,
                                     int parts) {
  double total = 0;
  int64_t count = 0;
  for (const CharBatch& b : batches) {
    std::vector<Tensor> out;
    AF_RETURN_IF_ERROR(session->Run(FeedsOf(b, parts), {"losses"}, {}, &out));
    const float* losses = out[0].data<float>();
    const int64_t n = b.batch * b.seq_len;  // the batch's own positions
    for (int64_t i = 0; i < n; ++i) total += losses[i];
    count += n;
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
  const int parts = CharLmParts(o.placement);
  const bool towers = !o.placement.tower_devices.empty();
  const int64_t step_rows = towers ? o.batch * parts : o.batch;
  if (step_rows < parts) {
    return InvalidArgument("char LM: --batch " + std::to_string(o.batch) + " cannot be cut into " +
                           std::to_string(parts) + " micro-batches");
  }
  Scope root = Scope::NewRootScope();
  const double lr = o.learning_rate > 0 ? o.learning_rate : DefaultLearningRate(spec);
  AF_RETURN_IF_ERROR(BuildCharLm(root, spec, lr, o.placement));
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
  const int64_t traced = std::min<int64_t>(2, o.steps - 1);  // the third step: steady state
  for (int64_t step = 0; step < o.steps; ++step) {
    const FeedList feeds = FeedsOf(windows.Next(step_rows), parts);
    std::vector<Tensor> out;
    RunOptions run_options;
    const bool trace = o.trace_step && step == traced;
    if (trace) run_options.trace_level = RunOptions::TraceLevel::kFullTrace;
    RunMetadata metadata;
    const auto start = std::chrono::steady_clock::now();
    Status s = session->Run(run_options, feeds, {"loss"}, {"train"}, &out,
                            step == 0 || trace ? &metadata : nullptr);
    trained += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!s.ok()) return s.WithContext("char LM step " + std::to_string(step));
    if (step == 0) {
      for (const CrossDeviceTransfer& t : metadata.transfers) {
        result.cross_device_bytes_per_step += t.bytes;
      }
    }
    if (trace) result.traced_step = std::move(metadata);
    result.losses.push_back(out[0].data<float>()[0]);
    if (o.on_step) o.on_step(0, step + 1, o.steps, result.losses.back());
    if (step + 1 == std::min<int64_t>(kFirstEvaluationStep, o.steps)) {
      AF_ASSIGN_OR_RETURN(result.first_bits_per_char,
                          EvaluateBitsPerChar(session.get(), eval_batches, parts));
    }
  }
  AF_ASSIGN_OR_RETURN(result.bits_per_char,
                      EvaluateBitsPerChar(session.get(), eval_batches, parts));
  result.steps = o.steps;
  result.global_step = restored_step + o.steps;
  result.seconds = trained;
  result.samples_per_second =
      trained > 0 ? static_cast<double>(o.steps * step_rows) / trained : 0;
  ServingSpec serving{spec.model, {{"inputs", "inputs"}}, {{"logits", "logits"}}};
  AF_RETURN_IF_ERROR(checkpoints.Save(session.get(), result.global_step, *root.graph(), serving));
  return result;
}

}  // namespace actorflow
