// Character language models (training/data/char_text.h's corpus): `char-lstm`
// (an embedding, stacked LSTM layers, a dense layer to the vocabulary) and
// `char-transformer` (an embedding plus learned positions, pre-norm causal
// Transformer blocks, a final layer norm, a dense layer), trained by Adam on the mean
// cross-entropy of every position of random windows, and measured in bits per
// character on the validation split.
//
//   AF_ASSIGN_OR_RETURN(CharCorpus corpus, ReadCharCorpus("/usr/share/games/fortunes"));
//   CharLmOptions options;                       // char-lstm, seq_len 64, batch 32
//   AF_ASSIGN_OR_RETURN(CharLmResult r, TrainCharLm(options, corpus, LocalSessions()));
//   r.bits_per_char;
//
// The graph (BuildCharLm) takes any batch size: "inputs" and "targets" are int32
// [B, seq_len] character ids; "logits" [B * seq_len, vocabulary] (row b * seq_len + t
// predicts targets[b, t]), "losses" [B * seq_len] (each position's cross-entropy in
// nats), "loss" their mean, and "train" one Adam step on it.
//
// Model directory (--checkpoint-dir, training/estimators/model_dir.h): char_lm.json
// (the model's shape and its vocabulary) beside the checkpoints; training there
// resumes, and a directory of another model or vocabulary is refused, naming what
// differs. SampleCharLm reads it back.
//
// Thread safety: the functions build their own graphs and sessions; none is shared.
#ifndef ACTORFLOW_TRAINING_ESTIMATORS_CHAR_LM_H_
#define ACTORFLOW_TRAINING_ESTIMATORS_CHAR_LM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "graph/status.h"
#include "training/data/char_text.h"
#include "training/estimators/worker_sessions.h"

namespace actorflow {

// The model's shape: what char_lm.json records.
struct CharLmSpec {
  std::string model = "char-lstm";  // or "char-transformer"
  int64_t seq_len = 64;
  std::vector<char32_t> vocabulary;
  int64_t embedding_dim = 64;                 // char-lstm
  std::vector<int64_t> lstm_units = {256, 256};
  int64_t width = 128;                        // char-transformer: d
  int64_t heads = 4;
  int64_t blocks = 4;
  uint64_t seed = 1;  // of the initial weights

  bool operator==(const CharLmSpec& o) const;
  bool operator!=(const CharLmSpec& o) const { return !(*this == o); }
};

// InvalidArgument naming the first bad field (an unknown model, seq_len < 1, a
// vocabulary of fewer than 2 characters, heads that do not divide the width, ...).
Status ValidateCharLmSpec(const CharLmSpec& spec);

// char_lm.json's text and its parse (InvalidArgument naming `path`); what differs
// between two specs, for errors ("vocabulary: 96 characters vs 113").
std::string CharLmSpecToJson(const CharLmSpec& spec);
StatusOr<CharLmSpec> ParseCharLmSpec(const std::string& text, const std::string& path);
std::string DescribeCharLmDifference(const CharLmSpec& a, const CharLmSpec& b);

inline constexpr char kCharLmSpecFile[] = "char_lm.json";
// DIR/char_lm.json read and parsed; NotFound naming it when it is missing.
StatusOr<CharLmSpec> ReadCharLmSpec(const std::string& dir);

// Where BuildCharLm puts the model. No field changes the variables (names, shapes,
// initial values), so a checkpoint moves freely between placements.
struct CharLmPlacement {
  // Model parallelism: stage s (the LSTM's layer s, the Transformer's block s) on
  // the device model_parallel.h's SpreadDevice gives it; the feeds, the embedding
  // (and positions) with the first stage, the final norm, the output layer, the loss
  // and the optimizer's counters with the last. Empty: the session's default device.
  std::vector<std::string> stage_devices;
  // Pipelining: each fed batch is cut on its rows into this many micro-batches
  // (EvenSplitPart), each flowing through the stages as soon as the one before has
  // left a stage (the runtime's dataflow orders them). The loss and its gradient are
  // the whole batch's, so a pipelined step computes what an unpipelined one does, up
  // to float summation order. 1: no pipelining; more needs >= 2 stage devices.
  int micro_batches = 1;
  // Synchronous data parallelism in one graph (in-graph replication): a tower per
  // device computing the model on its consecutive rows of the fed batch, the
  // variables on ps_devices in turn (empty: where the first tower's nodes are), where
  // their update applies the towers' summed gradient once per step. Not with
  // stage_devices.
  std::vector<std::string> tower_devices;
  std::vector<std::string> ps_devices;
};

// The parts a fed batch is cut into: the micro-batches or the towers (at least 1).
int CharLmParts(const CharLmPlacement& placement);

// InvalidArgument for micro_batches < 1, a pipeline without 2 stage devices, towers
// with a split, or more stage devices than the model has layers (blocks).
Status CheckCharLmPlacement(const CharLmSpec& spec, const CharLmPlacement& placement);

// Builds the graph described above into `root` as `placement` says (the default: all
// on the session's default device); `learning_rate` > 0 adds "train". Errors:
// ValidateCharLmSpec's, CheckCharLmPlacement's, builder errors naming the node.
Status BuildCharLm(const Scope& root, const CharLmSpec& spec, double learning_rate,
                   const CharLmPlacement& placement = {});

struct CharLmOptions {
  CharLmSpec spec;           // its vocabulary is set from the corpus
  int64_t batch = 32;
  int64_t steps = 1000;
  double learning_rate = 0;  // 0: 0.002 for char-lstm, 0.001 for char-transformer
  uint64_t data_seed = 1;    // of the training windows
  int64_t eval_chars = 65536;  // validation characters evaluated (0: all)
  std::string checkpoint_dir;  // empty: none
  StepObserver on_step;        // may be empty
  // With towers, batch is each tower's windows (a step trains on batch x towers);
  // a pipeline cuts the batch into its micro-batches.
  CharLmPlacement placement;
  bool trace_step = false;     // keep the third step's trace (CharLmResult::traced_step)
};

struct CharLmResult {
  double bits_per_char = 0;        // on the validation split, after training
  double first_bits_per_char = 0;  // after the first 10 steps (or all, if fewer)
  double samples_per_second = 0;   // windows trained per second, evaluation excluded
  double seconds = 0;              // training, evaluation excluded
  int64_t steps = 0;
  int64_t global_step = 0;         // steps plus those of the checkpoint resumed from
  std::vector<double> losses;      // each step's training loss (nats)
  int64_t cross_device_bytes_per_step = 0;  // of the first step
  RunMetadata traced_step;         // with trace_step: the third step's (or the last)
};

StatusOr<CharLmResult> TrainCharLm(const CharLmOptions& options, const CharCorpus& corpus,
                                   const WorkerSessionFactory& sessions);

struct SampleOptions {
  int64_t length = 200;     // characters generated
  uint64_t seed = 1;
  std::string prime = "\n";  // the text the generation continues
  double temperature = 1.0;
};

// Generates text from the model directory `dir` (char_lm.json and its latest
// checkpoint): each next character drawn from the softmax of the logits (divided by
// the temperature) at the last position of the window of the seq_len characters
// before it, the window padded on the left with newlines while shorter. Errors:
// NotFound for a directory without char_lm.json or a checkpoint; InvalidArgument for
// a prime holding characters outside the vocabulary (named) or not UTF-8.
// The result is the prime followed by the generated text. `sessions` opens the
// session (worker 0).
StatusOr<std::string> SampleCharLm(const std::string& dir, const SampleOptions& options,
                                   const WorkerSessionFactory& sessions);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_ESTIMATORS_CHAR_LM_H_
