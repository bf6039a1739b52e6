#include "tools/train/train_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <utility>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "kernels/chrome_trace.h"
#include "tools/train/epoch_evaluations.h"
#include "tools/train/in_graph_train.h"
#include "tools/train/progress_bar.h"
#include "tools/train/train_allreduce.h"
#include "tools/train/train_cluster.h"
#include "tools/train/train_data.h"
#include "tools/train/train_datasets.h"
#include "tools/train/train_flags.h"
#include "tools/train/train_summaries.h"
#include "tools/train/wide_deep_command.h"
#include "tools/train/char_lm_command.h"
#include "tools/train/word2vec_command.h"
#include "placement/device_name.h"
#include "training/estimators/dnn_classifier.h"
#include "training/estimators/model_parallel.h"
#include "training/estimators/pipeline.h"

namespace actorflow {
namespace cli {
namespace {

// Everything that can be judged without reading a file.
Status CheckFlags(const TrainCommandOptions& options) {
  AF_RETURN_IF_ERROR(CheckModelAndTrainingFlags(options));
  AF_RETURN_IF_ERROR(CheckPipelineFlags(options));
  AF_ASSIGN_OR_RETURN(auto device_count, ParseDeviceCounts(options.devices));
  // Every classifier of BuildDNNModel (training/estimators/dnn_model.h) trains on a
  // cluster; a model split over devices only within one process.
  const bool cluster_model = options.model == "mlp" || options.model == "cnn" ||
                             options.model == "rnn" || options.model == "convnet" ||
                             options.model == "convnet-bn";
  if (!options.cluster.empty() && (!cluster_model || options.split != "none")) {
    return InvalidArgument("--model " + options.model + " --split " + options.split +
                           ": --cluster trains --model mlp, cnn, rnn, convnet or convnet-bn "
                           "with --split none for now; drop --cluster to split a model over "
                           "this process's --devices");
  }
  if (options.cluster.empty() && options.split != "none") {
    // Enough local devices for the split (the model and split names are checked).
    ModelPlacement placement;
    placement.split = ParseModelSplit(options.split).value();
    placement.devices = LocalDeviceNames(device_count);
    Status enough = CheckModelPlacement(ParseModelKind(options.model).value(), placement);
    if (!enough.ok()) return InvalidArgument("--split: " + enough.message());
  }
  return CheckClusterFlags(options);
}

// The device a node without a requested one lands on in a local session: GPU:0 when
// there is one, else CPU:0.
std::string DefaultDevice(const std::vector<std::string>& devices) {
  for (const std::string& d : devices) {
    if (d.find("/device:GPU:") != std::string::npos) return d;
  }
  return std::string(kLocalTaskName) + "/device:CPU:0";
}

// "model", "split", "devices" and "cross_device_bytes_per_step" of the --json line.
nlohmann::ordered_json ModelParallelJson(const TrainCommandOptions& options,
                                         const std::vector<std::string>& devices,
                                         int64_t bytes_per_step) {
  nlohmann::ordered_json j;
  j["model"] = options.model;
  j["split"] = options.split;
  j["devices"] = devices;
  j["cross_device_bytes_per_step"] = bytes_per_step;
  return j;
}

// The result goes to `out`, progress to `progress` (a bar when `interactive`).
Status Train(const TrainCommandOptions& options, std::ostream& out, std::ostream& progress,
             std::ostream& err, bool interactive) {
  AF_ASSIGN_OR_RETURN(TrainingData data, LoadTrainingData(options));
  AF_ASSIGN_OR_RETURN(const int64_t classes, ResolveClasses(data, options.classes));
  AF_ASSIGN_OR_RETURN(DNNClassifierOptions model,
                      ClassifierOptionsFromFlags(options, data, classes));
  if (options.cluster.rfind("sim:", 0) == 0) {
    if (!SimulatedTrainerHook()) {
      return Unimplemented("--cluster " + options.cluster +
                           ": this program does not link the simulated cluster");
    }
    return SimulatedTrainerHook()(options, out, err);
  }
  if (!options.cluster.empty() && options.mode == "allreduce") {
    return TrainAllReduceOnCluster(options, ModelSpecOf(model),
                                   {data.train.features, data.train.labels},
                                   {data.test.features, data.test.labels}, out, progress);
  }
  if (!options.cluster.empty()) {
    return TrainOnCluster(options, ModelSpecOf(model), {data.train.features, data.train.labels},
                          {data.test.features, data.test.labels}, out, progress, err,
                          interactive);
  }
  // With a GPU, nodes without a requested device default to /gpu:0.
  AF_ASSIGN_OR_RETURN(SessionOptions session_options, LocalSessionOptions(options.devices));
  const std::vector<std::string> local_devices = LocalDeviceNames(session_options.device_count);
  if (options.split != "none") {
    // One part per device, in order; an op without a kernel on its part's device
    // (e.g. on a GPU) runs on a CPU instead.
    model.devices = local_devices;
    model.available_devices = local_devices;
    session_options.allow_soft_placement = true;
  }
  model.session_factory = SessionFactoryFor(session_options);
  model.trace_step = !options.trace_path.empty();
  // A pipeline's bubble is measured from a traced step.
  if (options.pipeline > 0) model.trace_step = true;

  const auto start = std::chrono::steady_clock::now();
  AF_ASSIGN_OR_RETURN(std::unique_ptr<DNNClassifier> classifier,
                      DNNClassifier::Create(std::move(model)));

  const int64_t rows = data.train.labels.NumElements();
  const int64_t planned = PlannedTrainSteps(options, rows, options.batch);
  ProgressBar bar(progress, planned, interactive);
  TrainSummaries summaries(ResolveUserPath(options.logdir), options.batch, options.learning_rate,
                           err);
  const int64_t side = NamedDatasetImageSide(options.dataset);
  const InputFn input =
      side > 0 ? ImageTrainingInput(data.train, side, options.batch, options.seed, options.epochs,
                                    options.augment)
               : TrainingInput(data.train, options.batch, options.seed, options.epochs);
  // A named dataset is evaluated after every epoch, from the progress callback
  // (between steps), its time kept out of the training seconds.
  EpochEvaluations epochs(!options.dataset.empty() && options.epochs > 0,
                          (rows + options.batch - 1) / options.batch);
  StatusOr<TrainResult> trained = classifier->Train(
      input, MaxTrainSteps(options),
      [&bar, &summaries, &epochs, &classifier, &data, planned](const TrainProgress& p) {
        bar.Update(p.step, p.loss);
        summaries.Progress(0, p.step, planned, p.loss);
        epochs.AfterStep(p.step, [&] { return classifier->Evaluate(EvaluationInput(data.test)); });
      });
  bar.Finish();
  AF_RETURN_IF_ERROR(trained.status());
  AF_RETURN_IF_ERROR(epochs.status());
  if (!options.trace_path.empty()) {
    AF_RETURN_IF_ERROR(WriteChromeTrace(trained->traced_step, ResolveUserPath(options.trace_path)));
  }

  EvalResult eval;
  if (epochs.HasFinal(trained->steps)) {
    eval = epochs.final();
  } else {
    AF_ASSIGN_OR_RETURN(eval, classifier->Evaluate(EvaluationInput(data.test)));
  }
  summaries.End(0, trained->steps, {{"accuracy", static_cast<float>(eval.accuracy)}});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<std::string> devices = classifier->devices();
  for (std::string& d : devices) {
    if (d.empty()) d = DefaultDevice(local_devices);
  }
  int64_t bytes_per_step = 0;
  for (const CrossDeviceTransfer& t : trained->step_transfers) bytes_per_step += t.bytes;
  if (options.split != "none") {
    std::string names;
    for (const std::string& d : devices) names += (names.empty() ? "" : ", ") + d;
    progress << "model " << options.model << " split " << options.split << " over " << names
             << ": " << bytes_per_step << " bytes cross devices per step\n";
  }
  nlohmann::ordered_json extra = ModelParallelJson(options, devices, bytes_per_step);
  if (!options.dataset.empty()) {
    extra["dataset"] = options.dataset;
    extra["data_format"] = options.data_format;
    const int64_t samples =
        options.epochs > 0 ? rows * options.epochs : trained->steps * options.batch;
    epochs.AddJson(*trained, samples, &extra);
  }
  if (options.pipeline > 0) {
    AF_ASSIGN_OR_RETURN(const double bubble,
                        MeasureBubbleFraction(trained->traced_step.step_stats, devices));
    extra["pipeline"] = options.pipeline;
    extra["schedule"] = options.schedule.empty() ? "1f1b" : options.schedule;
    extra["bubble_fraction"] = bubble;
    extra["bubble_fraction_theory"] = TheoreticalBubbleFraction(
        static_cast<int>(devices.size()), static_cast<int>(options.pipeline));
  }
  PrintTrainResult(options, eval, *trained, seconds, classes, extra, out);
  return Status::OK();
}

}  // namespace

bool ProgressIsInteractive(const TrainCommandOptions& options) {
  return isatty(options.json ? STDERR_FILENO : STDOUT_FILENO) != 0;
}

int TrainCommand(const TrainCommandOptions& options, std::ostream& out, std::ostream& err,
                 bool interactive) {
  // Under --json stdout holds the result line alone.
  std::ostream& progress = options.json ? err : out;
  if (options.model == "wide-deep") {
    return RunChecked(out, err, [&]() { return CheckWideDeepFlags(options); },
                      [&]() { return TrainWideDeepCommand(options, out, progress); });
  }
  if (options.model == "char-lstm" || options.model == "char-transformer") {
    return RunChecked(out, err, [&]() { return CheckCharLmFlags(options); },
                      [&]() { return TrainCharLmCommand(options, out, progress); });
  }
  if (options.model == "word2vec") {
    return RunChecked(out, err, [&]() { return CheckWord2VecFlags(options); },
                      [&]() { return TrainWord2VecCommand(options, out, progress); });
  }
  return RunChecked(out, err, [&]() { return CheckFlags(options); },
                    [&]() { return Train(options, out, progress, err, interactive); });
}

SimulatedTrainer& SimulatedTrainerHook() {
  static SimulatedTrainer trainer;
  return trainer;
}

Subcommand AddTrainSubcommand(CLI::App* parent) {
  auto options = std::make_shared<TrainCommandOptions>();
  CLI::App* app = parent->add_subcommand(
      "train", "Train a DNN classifier on a CSV file and print its test accuracy");
  AddModelAndDataFlags(app, options.get());
  app->add_option("--checkpoint-dir", options->checkpoint_dir,
                  "Save a checkpoint and model.json here (resume from it if present)");
  app->add_option("--logdir", options->logdir,
                  "Write TensorBoard event files under DIR/worker_<task>/");
  app->add_option("--trace", options->trace_path,
                  "Write a Chrome trace of one steady-state training step (a track per device)");
  app->add_option("--status-port", options->status_port,
                  "With --cluster: serve a live status page (and /status.json) on this port");
  AddTimeoutMsOption(app, &options->timeout_ms)->capture_default_str();
  app->add_flag("--json", options->json, "End with one line of JSON");
  app->add_option("--devices", options->devices,
                  "Devices of the local session: cpu=N[,gpu=M] (default: 1 CPU, every GPU)");
  app->add_option("--model", options->model,
                  "Network: mlp, cnn (square images, e.g. 8x8 digits), rnn (rows as time "
                  "steps), word2vec (--text), wide-deep (ctr_data.py's CSV files), char-lstm or "
                  "char-transformer (--text)")
      ->capture_default_str();
  app->add_option("--split", options->split,
                  "Model parallelism over --devices: none, layer, vertical (mlp) or towers (cnn)")
      ->capture_default_str();
  app->add_option("--pipeline", options->pipeline,
                  "With --model mlp --split layer: micro-batches per batch through the stages");
  app->add_option("--schedule", options->schedule,
                  "With --pipeline: gpipe or 1f1b (default: 1f1b)");
  app->add_option("--cluster", options->cluster,
                  "Data-parallel: sim:ps=P,worker=W (simulated), local:ps=P,worker=W (real servers in "
                  "this process) or a cluster JSON file");
  app->add_option("--job", options->job, "With a cluster file: this process's job")
      ->capture_default_str();
  app->add_option("--task", options->task, "With a cluster file: this process's worker index");
  app->add_option("--mode", options->mode,
                  "sync, async or ssp:S (bounded staleness S) through ps tasks, or allreduce "
                  "(no ps: --cluster local:worker=W)")
      ->capture_default_str();
  app->add_option("--bucket-mb", options->bucket_mb,
                  "allreduce: MiB of gradients per all-reduce bucket")
      ->capture_default_str();
  app->add_option("--replicas-to-aggregate", options->replicas_to_aggregate,
                  "sync: gradients averaged per update (default: every worker)");
  app->add_flag("--elastic", options->elastic,
               "Cluster file, sync: workers may join and leave while training runs");
  app->add_option("--min-workers", options->min_workers,
                  "--elastic: fewer live workers pause training (default 1)")
      ->check(CLI::PositiveNumber);
  app->add_option("--max-workers", options->max_workers,
                  "--elastic: worker slots used (default: every worker of the cluster file)")
      ->check(CLI::PositiveNumber);
  app->add_option("--lr-scaling", options->lr_scaling,
                  "--elastic: none, or linear (the rate scales with the live workers)")
      ->check(CLI::IsMember({"none", "linear"}))
      ->capture_default_str();
  app->add_option("--ps-replicas", options->ps_replicas,
                  "--elastic: 2 keeps a standby of every parameter shard on another ps task")
      ->check(CLI::Range(1, 2))
      ->capture_default_str();
  app->add_option("--max-restarts", options->max_restarts,
                  "Cluster file: restarts after a lost ps task before giving up (default 3)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--checkpoint-every", options->checkpoint_every,
                  "Cluster file, chief: coordinated checkpoint every N global steps")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--reconnect-timeout-ms", options->reconnect_timeout_ms,
                  "Cluster file: how long to retry a lost ps task or wait for lost workers "
                  "(default 30000)")
      ->check(CLI::PositiveNumber);
  // --replication in-graph runs tools/train/in_graph_train.h instead.
  return WithReplicationFlag(Subcommand{app, [app, options]() {
                               // A cnn or rnn takes its own defaults for flags not given.
                               ApplyModelDefaults(
                                   [app](const std::string& flag) {
                                     return app->count(flag) > 0;
                                   },
                                   options.get());
                               return TrainCommand(*options, std::cout, std::cerr,
                                                   ProgressIsInteractive(*options));
                             }},
                             options);
}

}  // namespace cli
}  // namespace actorflow
