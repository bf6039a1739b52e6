// The model and training flags that `actorflow train` (alone, with --cluster, with
// --replication in-graph) and `actorflow tune` share, as train_command.h documents
// them: their declaration, their checks, the classifier they describe, and the
// result a training run ends with.
//
// Thread safety: the functions are reentrant.
#ifndef ACTORFLOW_TOOLS_TRAIN_TRAIN_FLAGS_H_
#define ACTORFLOW_TOOLS_TRAIN_TRAIN_FLAGS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "graph/status.h"
#include "kernels/parameter_client.h"
#include "kernels/session.h"
#include "tools/train/train_command.h"
#include "tools/train/train_data.h"
#include "training/distributed/trainer_options.h"
#include "training/estimators/dnn_classifier.h"
#include "training/estimators/model_spec.h"

namespace actorflow {
namespace cli {

// Declares --train, --test, --label, --hidden, --classes, --optimizer, --lr, --batch,
// --steps, --epochs, --seed and --normalize on `app`, in that order, parsing into
// `*options` (which must outlive the parse).
void AddModelAndDataFlags(CLI::App* app, TrainCommandOptions* options);

// The defaults of --model's network for the flags that it tunes: mlp keeps the
// flags' own (TrainCommandOptions); cnn and rnn have theirs, which reach >= 0.97
// (cnn) and >= 0.93 (rnn) test accuracy on the bundled digits with --normalize.
struct ModelFlagDefaults {
  std::string hidden;
  std::string optimizer;
  double learning_rate = 0.0;
  int64_t batch = 0;
  int64_t epochs = 0;
  double lr_decay = 1.0;  // --lr-decay: the rate's factor per epoch
};
// nullopt-like: false for an unknown model (CheckModelAndTrainingFlags reports it).
bool DefaultsOfModel(const std::string& model, ModelFlagDefaults* defaults);
// A named dataset's defaults (tools/train/train_datasets.h) for `model`, which win
// over the model's; false for no or an unknown dataset.
bool DefaultsOfDataset(const std::string& dataset, const std::string& model,
                       ModelFlagDefaults* defaults);
// Sets --hidden, --optimizer, --lr, --batch and --epochs to options->dataset's
// defaults, or else options->model's, where `given(flag)` says the flag was not on the
// command line. For --model mlp without --dataset nothing changes. --steps given
// without --epochs keeps counting steps.
void ApplyModelDefaults(const std::function<bool(const std::string& flag)>& given,
                        TrainCommandOptions* options);

// "10,10" -> {10, 10}: comma-separated layer sizes, spaces around a size ignored.
// InvalidArgument starting with `name` (the flag or grid parameter the text came
// from) for a field that is not an integer, and for sizes ValidateModelSpec rejects
// (naming the layer).
StatusOr<std::vector<int64_t>> ParseHiddenUnits(const std::string& text,
                                                const std::string& name = "--hidden");

// Everything about --hidden, --classes, --batch, --steps, --epochs, --timeout-ms,
// --optimizer, --lr, --model and --split that can be judged without reading a file
// (the split's devices are judged when the session's devices are known).
// InvalidArgument naming the flag (--lr when the optimizer exists but rejects the
// rate; --split when the model has no such split, saying which it has).
Status CheckModelAndTrainingFlags(const TrainCommandOptions& options);

// --pipeline M and --schedule: M >= 1 only with --model mlp --split layer, M <= --batch
// and dividing it, a known schedule, --schedule only with --pipeline. InvalidArgument
// naming the flags and both numbers.
Status CheckPipelineFlags(const TrainCommandOptions& options);

// The classifier the flags describe on `data`: its feature columns (z-scored with
// the training file's statistics under --normalize), --hidden, `classes` classes,
// --optimizer, --lr, --seed, the label column, --timeout-ms, --model, --split and
// --checkpoint-dir (resolved) as the model directory, --pipeline and --schedule.
// The devices and the session
// factory are left to the caller.
// Errors: ParseHiddenUnits's, NormalizedNumericColumns's.
StatusOr<DNNClassifierOptions> ClassifierOptionsFromFlags(const TrainCommandOptions& options,
                                                          const TrainingData& data,
                                                          int64_t classes);

// --lr-decay's schedule: DecayPerEpoch (training/distributed/trainer_options.h).

// The line saying how the named dataset's batch or rate was adapted to the batches a
// sync update averages (the trainer's split_batch_over_replicas, under kSync, or
// scale_learning_rate_with_replicas), for the data-parallel options `dp` it planned;
// "" when neither was.
std::string ShardRateLine(const TrainerOptions& trainer, const DataParallelOptions& dp);

// The part of `options` that defines the graph (and model.json).
DNNModelSpec ModelSpecOf(const DNNClassifierOptions& options);

// Opens NewSession(graph, options) for each graph (the actor runtime, or the master
// at options.target).
SessionFactory SessionFactoryFor(SessionOptions options);

// The local session of --devices ("cpu=N[,gpu=M]", ParseDeviceCounts' errors). With
// several CPU devices, each computing on one core is the parallelism, so OpenBLAS is
// set to one thread unless OPENBLAS_NUM_THREADS decides (its own threads would spin
// against the other devices': a 3-layer, 128-unit RNN split over 3 CPUs on 2 cores
// ran 34 steps/s with them, 329 without).
StatusOr<SessionOptions> LocalSessionOptions(const std::string& devices);

// The `steps` argument of Train: -1 under --epochs (the input's end stops training),
// else --steps.
int64_t MaxTrainSteps(const TrainCommandOptions& options);

// The steps a run makes when each step takes `rows_per_step` of the training file's
// `rows`: --epochs passes of ceil(rows / rows_per_step) steps, else --steps.
int64_t PlannedTrainSteps(const TrainCommandOptions& options, int64_t rows, int64_t rows_per_step);

// The last line of a run without --json:
//   test accuracy 0.9667 (29/30), loss 0.0830, global step 1000, 1.52 s
std::string TestAccuracyLine(const EvalResult& eval, double seconds);

// The keys that every training --json line starts with, in order: "accuracy",
// "loss" (the mean test cross-entropy), "global_step" and "seconds".
nlohmann::ordered_json ResultJsonHead(const EvalResult& eval, double seconds);

// Ends a DNNClassifier training run (train alone or in-graph) on `out`, flushed.
// With --json one line: ResultJsonHead's keys, "steps", "train_loss", "examples",
// "classes", then `extra`'s keys in order, then "checkpoint_dir" under
// --checkpoint-dir. Else "checkpoint saved in DIR" under --checkpoint-dir, then
// TestAccuracyLine.
void PrintTrainResult(const TrainCommandOptions& options, const EvalResult& eval,
                      const TrainResult& trained, double seconds, int64_t classes,
                      const nlohmann::ordered_json& extra, std::ostream& out);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TRAIN_TRAIN_FLAGS_H_
