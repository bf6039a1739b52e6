#include "tools/train_command.h"

#include <unistd.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <utility>

#include <nlohmann/json.hpp>

#include "tools/in_graph_train.h"
#include "tools/progress_bar.h"
#include "tools/train_cluster.h"
#include "tools/train_data.h"
#include "tools/train_flags.h"
#include "tools/train_summaries.h"
#include "training/dnn_classifier.h"

namespace actorflow {
namespace cli {
namespace {

// Everything that can be judged without reading a file.
Status CheckFlags(const TrainCommandOptions& options) {
  AF_RETURN_IF_ERROR(CheckModelAndTrainingFlags(options));
  AF_RETURN_IF_ERROR(ParseDeviceCounts(options.devices).status());
  return CheckClusterFlags(options);
}

// The result goes to `out`, progress to `progress` (a bar when `interactive`).
Status Train(const TrainCommandOptions& options, std::ostream& out, std::ostream& progress,
             std::ostream& err, bool interactive) {
  AF_ASSIGN_OR_RETURN(TrainingData data, LoadTrainingData(options));
  AF_ASSIGN_OR_RETURN(const int64_t classes, ResolveClasses(data, options.classes));
  AF_ASSIGN_OR_RETURN(DNNClassifierOptions model,
                      ClassifierOptionsFromFlags(options, data, classes));
  if (!options.cluster.empty()) {
    return TrainOnCluster(options, ModelSpecOf(model), {data.train.features, data.train.labels},
                          {data.test.features, data.test.labels}, out, progress, err);
  }
  SessionOptions session_options;  // target "": the actor runtime
  // With a GPU, nodes without a requested device default to /gpu:0.
  AF_ASSIGN_OR_RETURN(session_options.device_count, ParseDeviceCounts(options.devices));
  model.session_factory = SessionFactoryFor(session_options);

  const auto start = std::chrono::steady_clock::now();
  AF_ASSIGN_OR_RETURN(std::unique_ptr<DNNClassifier> classifier,
                      DNNClassifier::Create(std::move(model)));

  const int64_t rows = data.train.labels.NumElements();
  const int64_t planned = PlannedTrainSteps(options, rows, options.batch);
  ProgressBar bar(progress, planned, interactive);
  TrainSummaries summaries(ResolveUserPath(options.logdir), options.batch, options.learning_rate,
                           err);
  StatusOr<TrainResult> trained = classifier->Train(
      TrainingInput(data.train, options.batch, options.seed, options.epochs),
      MaxTrainSteps(options), [&bar, &summaries, planned](const TrainProgress& p) {
        bar.Update(p.step, p.loss);
        summaries.Progress(0, p.step, planned, p.loss);
      });
  bar.Finish();
  AF_RETURN_IF_ERROR(trained.status());

  AF_ASSIGN_OR_RETURN(EvalResult eval, classifier->Evaluate(EvaluationInput(data.test)));
  summaries.End(0, trained->steps, {{"accuracy", static_cast<float>(eval.accuracy)}});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  PrintTrainResult(options, eval, *trained, seconds, classes, nlohmann::ordered_json::object(),
                   out);
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
  return RunChecked(out, err, [&]() { return CheckFlags(options); },
                    [&]() { return Train(options, out, progress, err, interactive); });
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
  AddTimeoutMsOption(app, &options->timeout_ms)->capture_default_str();
  app->add_flag("--json", options->json, "End with one line of JSON");
  app->add_option("--devices", options->devices,
                  "Devices of the local session: cpu=N[,gpu=M] (default: 1 CPU, every GPU)");
  app->add_option("--cluster", options->cluster,
                  "Data-parallel: local:ps=P,worker=W (in this process) or a cluster JSON file");
  app->add_option("--job", options->job, "With a cluster file: this process's job")
      ->capture_default_str();
  app->add_option("--task", options->task, "With a cluster file: this process's worker index");
  app->add_option("--mode", options->mode, "sync, async or ssp:S (bounded staleness S)")
      ->capture_default_str();
  app->add_option("--replicas-to-aggregate", options->replicas_to_aggregate,
                  "sync: gradients averaged per update (default: every worker)");
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
  // --replication in-graph runs tools/in_graph_train.h instead.
  return WithReplicationFlag(Subcommand{app, [options]() {
                               return TrainCommand(*options, std::cout, std::cerr,
                                                   ProgressIsInteractive(*options));
                             }},
                             options);
}

}  // namespace cli
}  // namespace actorflow
