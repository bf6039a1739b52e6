#include "tools/train/in_graph_train.h"

#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "actors/sim/sim_cluster_spec.h"
#include "actors/trainer/cluster_trainer.h"
#include "placement/cluster_spec.h"
#include "tools/train/progress_bar.h"
#include "tools/train/train_cluster.h"
#include "tools/train/train_summaries.h"
#include "tools/train/train_data.h"
#include "tools/train/train_flags.h"
#include "training/distributed/in_graph_trainer.h"
#include "training/distributed/trainer_options.h"

namespace actorflow {
namespace cli {
namespace {

constexpr char kInGraph[] = "in-graph";
constexpr char kBetweenGraph[] = "between-graph";
// Flags of between-graph training that in-graph replication has no use for.
const char* const kBetweenGraphOnlyFlags[] = {"--mode", "--replicas-to-aggregate", "--job",
                                               "--task", "--model", "--split"};

// The library trainer's options (policy kInGraph) that the flags mean: the model
// and data flags as `actorflow train`'s, --cluster (empty: 2 towers on 2 CPU
// devices of this process; local:ps=P,worker=W; sim:ps=P,worker=W, simulated; or a
// file whose "ps" and "worker"
// jobs run `actorflow server`, the steps going through worker 0's master), --epochs
// or else --steps, --lr-decay, --checkpoint-dir and --timeout-ms. InvalidArgument
// naming the flag for a shape without ps and worker tasks or with other jobs.
StatusOr<TrainerOptions> InGraphTrainerOptionsFromFlags(const TrainCommandOptions& o,
                                                        const std::string& cluster,
                                                        const TrainingData& data,
                                                        int64_t classes) {
  TrainerOptions trainer = TrainerOptionsOfCommonFlags(o);
  AF_ASSIGN_OR_RETURN(DNNClassifierOptions model, ClassifierOptionsFromFlags(o, data, classes));
  trainer.model = ModelSpecOf(model);
  trainer.policy.kind = TrainingPolicyKind::kInGraph;
  if (cluster.empty()) {
    trainer.cluster = TrainerCluster::Local(/*ps_tasks=*/0, /*workers=*/2);
  } else if (cluster.rfind("sim:", 0) == 0) {
    StatusOr<SimClusterShape> shape = ParseSimClusterSpec(cluster);
    if (!shape.ok()) return shape.status().WithContext("--cluster");
    if (shape->tasks.count("ps") == 0 || shape->tasks.count("worker") == 0) {
      return InvalidArgument("--cluster " + cluster + ": in-graph replication needs ps=P and "
                             "worker=W, both >= 1");
    }
    TrainerSimulation simulation;
    simulation.shape = std::move(shape).value();
    trainer.cluster = TrainerCluster::Simulated(std::move(simulation));
  } else if (IsLocalCluster(cluster)) {
    AF_ASSIGN_OR_RETURN(auto shape, ParseLocalClusterFlag(cluster));
    for (const auto& [job, count] : shape) {
      if (job != "ps" && job != "worker") {
        return InvalidArgument("--cluster " + cluster + ": job '" + job +
                               "' has no role in in-graph replication (use ps and worker)");
      }
    }
    const int ps = shape.count("ps") ? shape.at("ps") : 0;
    const int workers = shape.count("worker") ? shape.at("worker") : 0;
    if (ps < 1 || workers < 1) {
      return InvalidArgument("--cluster " + cluster + ": in-graph replication needs ps=P and "
                             "worker=W, both >= 1");
    }
    trainer.cluster = TrainerCluster::Local(ps, workers);
  } else {
    AF_ASSIGN_OR_RETURN(ClusterSpec spec, LoadClusterFile(cluster));
    if (spec.num_tasks("ps") < 1 || spec.num_tasks("worker") < 1) {
      return InvalidArgument("--cluster " + cluster + ": in-graph replication needs jobs 'ps' and "
                             "'worker' with at least one task each");
    }
    trainer.cluster = TrainerCluster::OfSpec(std::move(spec), "worker", /*task=*/0, cluster);
  }
  trainer.learning_rate_decay_per_epoch = o.lr_decay;
  trainer.checkpoint_dir = model.model_dir;  // --batch: rows per tower
  trainer.epochs = o.epochs > 0 ? o.epochs : 0;
  trainer.max_steps = o.epochs > 0 ? 0 : o.steps;
  return trainer;
}

// "2 towers on 2 CPU devices of this process" or "W towers on the worker tasks,
// variables on P ps task(s)".
std::string PlacementLine(const TrainerOptions& trainer, const TrainerPlan& plan) {
  const std::string towers = std::to_string(plan.in_graph.tower_devices.size());
  if (trainer.cluster.kind == TrainerCluster::Kind::kLocal && trainer.cluster.local_ps_tasks == 0) {
    return towers + " towers on " + towers + " CPU devices of this process";
  }
  return towers + " towers on the worker tasks, variables on " +
         std::to_string(plan.in_graph.ps_devices.size()) + " ps task(s)";
}

Status TrainInGraph(const TrainCommandOptions& o, const std::string& cluster, std::ostream& out,
                    std::ostream& progress, std::ostream& err, bool interactive) {
  AF_ASSIGN_OR_RETURN(TrainingData data, LoadTrainingData(o));
  AF_ASSIGN_OR_RETURN(const int64_t classes, ResolveClasses(data, o.classes));
  AF_ASSIGN_OR_RETURN(TrainerOptions trainer,
                      InGraphTrainerOptionsFromFlags(o, cluster, data, classes));
  const int64_t rows = data.train.labels.NumElements();
  std::unique_ptr<ProgressBar> bar;
  std::unique_ptr<TrainSummaries> summaries;
  int64_t planned = 0;
  trainer.on_start = [&](const TrainerPlan& plan) {
    progress << "in-graph replication: " << PlacementLine(trainer, plan) << "\n";
    const int towers = static_cast<int>(plan.in_graph.tower_devices.size());
    planned = PlannedInGraphSteps(trainer, towers, rows);
    bar = std::make_unique<ProgressBar>(progress, planned, interactive);
    // One graph trains every tower: its run is worker_0.
    summaries = std::make_unique<TrainSummaries>(ResolveUserPath(o.logdir), o.batch * towers,
                                                 o.learning_rate, err);
    return Status::OK();
  };
  trainer.progress = [&](const WorkerProgress& p) {
    bar->Update(p.step, p.loss);
    summaries->Progress(0, p.step, planned, p.loss);
  };
  StatusOr<TrainerResult> ran = Train(trainer, {data.train.features, data.train.labels},
                                      {data.test.features, data.test.labels});
  if (bar != nullptr) bar->Finish();
  AF_RETURN_IF_ERROR(ran.status());
  const InGraphTrainerReport& report = ran->in_graph;
  summaries->End(0, report.train.steps, {{"accuracy", static_cast<float>(report.eval.accuracy)}});

  nlohmann::ordered_json extra;
  extra["replication"] = kInGraph;
  extra["towers"] = ran->plan.in_graph.tower_devices.size();
  extra["ps_tasks"] = ran->plan.in_graph.ps_devices.size();
  if (ran->simulation != nullptr) {
    extra["event_log_hash"] = ran->simulation->event_log_hash;
    extra["virtual_seconds"] = ran->simulation->report.virtual_seconds;
  }
  PrintTrainResult(o, report.eval, report.train, ran->seconds, classes, extra, out);
  return Status::OK();
}

}  // namespace

int InGraphTrainCommand(const TrainCommandOptions& options, const std::string& cluster,
                        std::ostream& out, std::ostream& err, bool interactive) {
  std::ostream& progress = options.json ? err : out;  // stdout: the result alone
  return RunChecked(
      out, err, [&]() { return CheckModelAndTrainingFlags(options); },
      [&]() { return TrainInGraph(options, cluster, out, progress, err, interactive); },
      // The cluster's shape is judged only once the cluster is placed.
      [](const Status& status) {
        return status.code() == Code::kInvalidArgument && status.message().rfind("--", 0) == 0
                   ? kExitUsageError
                   : kExitRuntimeError;
      });
}

Subcommand WithReplicationFlag(Subcommand train, std::shared_ptr<const TrainCommandOptions> options) {
  CLI::App* app = train.app;
  auto replication = std::make_shared<std::string>(kBetweenGraph);
  app->add_option("--replication", *replication,
                  "in-graph: one client, a tower per worker; between-graph: one client per worker")
      ->capture_default_str();
  // train declares --cluster for between-graph training; reuse it when it is there.
  auto own_cluster = std::make_shared<std::string>();
  if (app->get_option_no_throw("--cluster") == nullptr) {
    app->add_option("--cluster", *own_cluster,
                    "local:ps=P,worker=W, sim:ps=P,worker=W or a cluster JSON file");
  }
  std::function<int()> between_graph = std::move(train.main);
  train.main = [app, options, replication, own_cluster, between_graph]() {
    if (*replication == kBetweenGraph) return between_graph();
    if (*replication != kInGraph) {
      return ReportError(std::cerr,
                         InvalidArgument("--replication '" + *replication +
                                         "': expected in-graph or between-graph"),
                         kExitUsageError);
    }
    for (const char* flag : kBetweenGraphOnlyFlags) {
      const CLI::Option* given = app->get_option_no_throw(flag);
      if (given != nullptr && given->count() > 0) {
        return ReportError(std::cerr,
                           InvalidArgument(std::string(flag) +
                                           " is for between-graph training; --replication "
                                           "in-graph takes none"),
                           kExitUsageError);
      }
    }
    std::string cluster = *own_cluster;
    const CLI::Option* cluster_flag = app->get_option_no_throw("--cluster");
    if (cluster_flag != nullptr && !cluster_flag->results().empty()) {
      cluster = cluster_flag->results().back();
    }
    return InGraphTrainCommand(*options, cluster, std::cout, std::cerr,
                               ProgressIsInteractive(*options));
  };
  return train;
}

}  // namespace cli
}  // namespace actorflow
