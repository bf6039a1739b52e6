#include "tools/train/train_flags.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>
#include <CLI/CLI.hpp>

#include "actors/cluster/session_factory.h"
#include "kernels/gpu_runtime.h"
#include "placement/device_name.h"
#include "tools/cli/blas_core.h"
#include "tools/cli/cli_common.h"
#include "tools/train/train_datasets.h"
#include "training/estimators/feature_columns.h"
#include "training/estimators/model_parallel.h"
#include "training/optimizers/optimizer.h"
#include "training/estimators/pipeline.h"

namespace actorflow {
namespace cli {

void AddModelAndDataFlags(CLI::App* app, TrainCommandOptions* options) {
  app->add_option("--train", options->train_path, "Training CSV (default: bundled Iris)");
  app->add_option("--test", options->test_path, "Test CSV (default: bundled Iris)");
  app->add_option("--label", options->label, "Label column (default: the last one)");
  app->add_option("--hidden", options->hidden, "Hidden layer sizes, e.g. 10,10")
      ->capture_default_str();
  app->add_option("--classes", options->classes, "Number of classes (default: max label + 1)");
  app->add_option("--optimizer", options->optimizer, ValidOptimizerNames())
      ->capture_default_str();
  app->add_option("--lr", options->learning_rate, "Learning rate")->capture_default_str();
  app->add_option("--lr-decay", options->lr_decay,
                  "Factor of the learning rate per epoch, applied smoothly by global step "
                  "(1: constant)")
      ->capture_default_str();
  app->add_option("--batch", options->batch, "Batch size")->capture_default_str();
  app->add_option("--steps", options->steps, "Training steps")->capture_default_str();
  app->add_option("--epochs", options->epochs, "Passes over the training set (overrides --steps)");
  app->add_option("--seed", options->seed, "Seed of the weights and the shuffle")
      ->capture_default_str();
  app->add_flag("--normalize", options->normalize, "Z-score features with training statistics");
  app->add_option("--dataset", options->dataset,
                  std::string("A named dataset instead of --train/--test: ") + kNamedDatasets);
  app->add_option("--data-dir", options->data_dir,
                  "Where --dataset's files are (default: where its Debian package puts them)");
  app->add_option("--data-format", options->data_format, "idx or tfrecord (with --dataset)")
      ->capture_default_str();
  app->add_flag("--skip-corrupt-records", options->skip_corrupt_records,
                "With --data-format tfrecord: skip and count damaged records instead of failing");
  app->add_option("--text", options->text_path,
                  "--model word2vec, char-lstm, char-transformer: a text file or a directory "
                  "of them (e.g. /usr/share/games/fortunes)");
  app->add_option("--vocab-size", options->vocab_size,
                  "--model word2vec: words kept, UNK included")
      ->capture_default_str();
  app->add_option("--embedding-dim", options->embedding_dim, "--model word2vec: embedding size")
      ->capture_default_str();
  app->add_option("--num-sampled", options->num_sampled,
                  "--model word2vec: NCE negative words per batch")
      ->capture_default_str();
  app->add_option("--skip-window", options->skip_window,
                  "--model word2vec: context words on each side of a center word")
      ->capture_default_str();
  app->add_option("--seq-len", options->seq_len,
                  "--model char-lstm|char-transformer: characters per training window")
      ->capture_default_str();
  app->add_option("--eval-chars", options->eval_chars,
                  "--model char-lstm|char-transformer: validation characters evaluated (0: all)")
      ->capture_default_str();
  app->add_option("--width", options->width, "--model char-transformer: model width d")
      ->capture_default_str();
  app->add_option("--heads", options->heads, "--model char-transformer: attention heads")
      ->capture_default_str();
  app->add_option("--blocks", options->blocks, "--model char-transformer: Transformer blocks")
      ->capture_default_str();
  app->add_flag("--augment", options->augment,
                "Random left-right flips and crops of the training images (with --dataset)");
}

bool DefaultsOfModel(const std::string& model, ModelFlagDefaults* defaults) {
  const TrainCommandOptions mlp;
  if (model == "mlp") {
    *defaults = {mlp.hidden, mlp.optimizer, mlp.learning_rate, mlp.batch, mlp.epochs,
                 mlp.lr_decay};
    return true;
  }
  if (model == "cnn") {
    *defaults = {"128", "adam", 0.003, 32, 15};
    return true;
  }
  if (model == "rnn") {
    *defaults = {"64,64,64", "adam", 0.003, 32, 30};
    return true;
  }
  if (model == "convnet" || model == "convnet-bn") {
    *defaults = {"1024", "adam", 0.001, 100, 10};
    return true;
  }
  if (model == "word2vec") {  // TensorFlow's basic word2vec: SGD at rate 1, batch 128
    *defaults = {mlp.hidden, "sgd", 1.0, 128, 0};
    return true;
  }
  if (model == "char-lstm") {  // --hidden: the LSTM layers; Adam 0.002
    *defaults = {"256,256", "adam", 0.002, 32, 0};
    return true;
  }
  if (model == "char-transformer") {
    *defaults = {mlp.hidden, "adam", 0.001, 32, 0};
    return true;
  }
  if (model == "wide-deep") {  // --lr: the wide part's FTRL rate; two passes
    *defaults = {"64,32", "ftrl", 2.0, 256, 2};
    return true;
  }
  return false;
}

bool DefaultsOfDataset(const std::string& dataset, const std::string& model,
                       ModelFlagDefaults* defaults) {
  if (dataset != "fashion-mnist") return false;
  // The published benchmarks' setting: Adam 1e-3, batch 100; the rate decays to
  // kFashionLrDecay^10 of itself over the 10 epochs, so that the last epochs settle
  // (test accuracy swings by about a point between epochs at a constant rate).
  *defaults = {model == "mlp" ? "256,128,100" : "1024", "adam", 0.001, 100, 10, kFashionLrDecay};
  return true;
}

void ApplyModelDefaults(const std::function<bool(const std::string& flag)>& given,
                        TrainCommandOptions* options) {
  ModelFlagDefaults defaults;
  if (!DefaultsOfDataset(options->dataset, options->model, &defaults) &&
      (options->model == "mlp" || !DefaultsOfModel(options->model, &defaults))) {
    return;
  }
  if (!given("--hidden")) options->hidden = defaults.hidden;
  if (!given("--optimizer")) options->optimizer = defaults.optimizer;
  if (!given("--lr")) {
    options->learning_rate = defaults.learning_rate;
    const bool per_batch_rate = !options->dataset.empty();
    options->split_batch_over_replicas = per_batch_rate && !given("--batch");
    options->scale_lr_with_replicas = per_batch_rate && given("--batch");
  }
  if (!given("--batch")) options->batch = defaults.batch;
  if (!given("--lr-decay")) options->lr_decay = defaults.lr_decay;
  if (!given("--epochs") && !given("--steps")) options->epochs = defaults.epochs;
  // The character models read 64-dimensional character embeddings unless told.
  if (options->model == "char-lstm" && !given("--embedding-dim")) options->embedding_dim = 64;
  // word2vec's and wide & deep's workers train between-graph, asynchronously.
  if ((options->model == "word2vec" || options->model == "wide-deep") && !given("--mode")) {
    options->mode = "async";
  }
}

StatusOr<std::vector<int64_t>> ParseHiddenUnits(const std::string& text, const std::string& name) {
  const std::string usage =
      name + " '" + text + "': expected comma-separated layer sizes >= 1, e.g. 10,10";
  std::vector<int64_t> units;
  size_t start = 0;
  while (true) {
    const size_t end = std::min(text.find(',', start), text.size());
    std::string field = text.substr(start, end - start);
    field.erase(0, field.find_first_not_of(" \t"));
    field.erase(field.find_last_not_of(" \t") + 1);
    if (field.empty()) return InvalidArgument(usage);
    size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(field, &used);
    } catch (const std::exception&) {
      return InvalidArgument(usage);
    }
    if (used != field.size()) return InvalidArgument(usage);
    units.push_back(value);
    if (end == text.size()) break;
    start = end + 1;
  }
  DNNModelSpec probe;  // only the hidden units are checked here
  probe.feature_columns = NumericColumns({"x"});
  probe.hidden_units = units;
  Status valid = ValidateModelSpec(probe);
  if (!valid.ok()) return InvalidArgument(name + ": " + valid.message());
  return units;
}

Status CheckModelAndTrainingFlags(const TrainCommandOptions& options) {
  AF_RETURN_IF_ERROR(ParseHiddenUnits(options.hidden).status());
  if (options.classes != 0 && options.classes < 2) {
    return InvalidArgument("--classes " + std::to_string(options.classes) +
                           ": a classifier needs at least 2 classes");
  }
  if (options.batch < 1) {
    return InvalidArgument("--batch " + std::to_string(options.batch) + ": must be >= 1");
  }
  if (options.steps < 1) {
    return InvalidArgument("--steps " + std::to_string(options.steps) + ": must be >= 1");
  }
  if (options.epochs < 0) {
    return InvalidArgument("--epochs " + std::to_string(options.epochs) +
                           ": must be >= 1 (or 0: train --steps batches instead)");
  }
  AF_RETURN_IF_ERROR(CheckTimeoutMs(options.timeout_ms));
  StatusOr<ModelKind> kind = ParseModelKind(options.model);
  if (!kind.ok()) return InvalidArgument("--model: " + kind.status().message());
  StatusOr<ModelSplit> split = ParseModelSplit(options.split);
  if (!split.ok()) return InvalidArgument("--split: " + split.status().message());
  ModelPlacement placement;  // the devices are judged once the session's are known
  placement.split = *split;
  placement.devices.assign(static_cast<size_t>(kCnnTowers), "");
  Status has_split = CheckModelPlacement(*kind, placement);
  if (!has_split.ok()) return InvalidArgument("--split: " + has_split.message());
  Status optimizer = MakeOptimizer(options.optimizer, options.learning_rate).status();
  if (!optimizer.ok()) {
    // A name that works with a sane rate means the rate is what is wrong.
    const bool name_ok = MakeOptimizer(options.optimizer, 0.01).ok();
    return InvalidArgument((name_ok ? "--lr: " : "--optimizer: ") + optimizer.message());
  }
  if (!std::isfinite(options.lr_decay) || options.lr_decay <= 0 || options.lr_decay > 1) {
    return InvalidArgument("--lr-decay " + std::to_string(options.lr_decay) +
                           ": the learning rate's factor per epoch must be in (0, 1]");
  }
  return Status::OK();
}

Status CheckPipelineFlags(const TrainCommandOptions& options) {
  if (options.pipeline == 0) {
    if (!options.schedule.empty()) {
      return InvalidArgument("--schedule " + options.schedule +
                             ": a schedule needs --pipeline M (the micro-batches per batch)");
    }
    return Status::OK();
  }
  const std::string pipeline = "--pipeline " + std::to_string(options.pipeline);
  if (options.pipeline < 0) return InvalidArgument(pipeline + ": must be >= 1");
  if (options.model != "mlp" || options.split != "layer") {
    return InvalidArgument(pipeline + ": pipelines only --model mlp --split layer, got --model " +
                           options.model + " --split " + options.split);
  }
  const std::string both = pipeline + " --batch " + std::to_string(options.batch);
  if (options.pipeline > options.batch) {
    return InvalidArgument(both + ": more micro-batches than rows in a batch; use --pipeline " +
                           "at most " + std::to_string(options.batch));
  }
  if (options.batch % options.pipeline != 0) {
    return InvalidArgument(both + ": --batch must be a multiple of --pipeline");
  }
  if (!options.schedule.empty()) {
    StatusOr<PipelineSchedule> schedule = ParsePipelineSchedule(options.schedule);
    if (!schedule.ok()) return InvalidArgument("--schedule: " + schedule.status().message());
  }
  return Status::OK();
}

StatusOr<DNNClassifierOptions> ClassifierOptionsFromFlags(const TrainCommandOptions& options,
                                                          const TrainingData& data,
                                                          int64_t classes) {
  DNNClassifierOptions model;
  if (options.normalize) {
    AF_ASSIGN_OR_RETURN(model.feature_columns,
                        NormalizedNumericColumns(data.train.feature_names, data.train.features));
  } else {
    model.feature_columns = NumericColumns(data.train.feature_names);
  }
  AF_ASSIGN_OR_RETURN(model.hidden_units, ParseHiddenUnits(options.hidden));
  model.n_classes = classes;
  model.optimizer = options.optimizer;
  model.learning_rate = options.learning_rate;
  model.learning_rate_decay = DecayPerEpoch(options.lr_decay, data.train.features.dim(0),
                                            options.batch);
  model.seed = options.seed;
  model.label_column = data.label_column;
  model.timeout_in_ms = options.timeout_ms;
  model.model_dir = ResolveUserPath(options.checkpoint_dir);
  model.model = options.model;
  model.split = options.split;
  model.pipeline_micro_batches = static_cast<int>(options.pipeline);
  if (!options.schedule.empty()) model.pipeline_schedule = options.schedule;
  return model;
}

std::string ShardRateLine(const TrainerOptions& trainer, const DataParallelOptions& dp) {
  const ParameterServerOptions& ps = dp.ps;
  const int64_t batches_per_update = ps.mode == UpdateMode::kSync ? ps.replicas_to_aggregate : 1;
  const bool split = SplitsBatchOverReplicas(trainer);
  if (batches_per_update <= 1 || !(split || trainer.scale_learning_rate_with_replicas)) return "";
  std::ostringstream line;
  line << "sync updates average " << batches_per_update << " batches of " << dp.batch_size;
  if (split) {
    line << " rows: " << batches_per_update * dp.batch_size << " rows an update at learning rate "
         << ps.learning_rate << ", as one process's batches (--batch sets each worker's batch)\n";
  } else {
    line << ": learning rate " << ps.learning_rate << " (" << trainer.learning_rate
         << " per batch, scaled linearly; --lr sets it as it is)\n";
  }
  return line.str();
}

DNNModelSpec ModelSpecOf(const DNNClassifierOptions& options) {
  DNNModelSpec spec;
  spec.feature_columns = options.feature_columns;
  spec.hidden_units = options.hidden_units;
  spec.n_classes = options.n_classes;
  spec.activation = options.activation;
  spec.label_column = options.label_column;
  spec.model = options.model;
  spec.split = options.split;
  return spec;
}

SessionFactory SessionFactoryFor(SessionOptions options) {
  return [options = std::move(options)](const Graph* graph) { return NewSession(graph, options); };
}

StatusOr<SessionOptions> LocalSessionOptions(const std::string& devices) {
  SessionOptions options;  // target "": the actor runtime
  AF_ASSIGN_OR_RETURN(options.device_count, ParseDeviceCounts(devices));
  const auto cpus = options.device_count.find("CPU");
  if (cpus != options.device_count.end() && cpus->second > 1) UseOneBlasThreadUnlessConfigured();
  return options;
}

int64_t MaxTrainSteps(const TrainCommandOptions& options) {
  return options.epochs > 0 ? -1 : options.steps;
}

int64_t PlannedTrainSteps(const TrainCommandOptions& options, int64_t rows, int64_t rows_per_step) {
  if (options.epochs <= 0) return options.steps;
  return options.epochs * ((rows + rows_per_step - 1) / rows_per_step);
}

std::string TestAccuracyLine(const EvalResult& eval, double seconds) {
  char line[256];
  const int64_t correct = static_cast<int64_t>(eval.accuracy * eval.num_examples + 0.5);
  std::snprintf(line, sizeof(line),
                "test accuracy %.4f (%lld/%lld), loss %.4f, global step %lld, %.2f s",
                eval.accuracy, static_cast<long long>(correct),
                static_cast<long long>(eval.num_examples), eval.loss,
                static_cast<long long>(eval.global_step), seconds);
  return line;
}

nlohmann::ordered_json ResultJsonHead(const EvalResult& eval, double seconds) {
  nlohmann::ordered_json j;
  j["accuracy"] = eval.accuracy;
  j["loss"] = eval.loss;
  j["global_step"] = eval.global_step;
  j["seconds"] = seconds;
  return j;
}

void PrintTrainResult(const TrainCommandOptions& options, const EvalResult& eval,
                      const TrainResult& trained, double seconds, int64_t classes,
                      const nlohmann::ordered_json& extra, std::ostream& out) {
  if (options.json) {
    nlohmann::ordered_json j = ResultJsonHead(eval, seconds);
    j["steps"] = trained.steps;
    j["train_loss"] = trained.last_loss;
    j["examples"] = eval.num_examples;
    j["classes"] = classes;
    for (const auto& item : extra.items()) j[item.key()] = item.value();
    if (!options.checkpoint_dir.empty()) j["checkpoint_dir"] = options.checkpoint_dir;
    out << j.dump() << "\n";
  } else {
    if (!options.checkpoint_dir.empty()) {
      out << "checkpoint saved in " << options.checkpoint_dir << "\n";
    }
    out << TestAccuracyLine(eval, seconds) << "\n";
  }
  out.flush();
}

}  // namespace cli
}  // namespace actorflow
