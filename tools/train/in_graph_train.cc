#include "tools/train/in_graph_train.h"

#include <chrono>
#include <functional>
#include <iostream>
#include <utility>

#include <nlohmann/json.hpp>

#include "actors/cluster/local_cluster.h"
#include "placement/cluster_spec.h"
#include "tools/train/progress_bar.h"
#include "tools/train/train_summaries.h"
#include "tools/train/train_data.h"
#include "tools/train/train_flags.h"
#include "training/distributed/in_graph_classifier.h"

namespace actorflow {
namespace cli {
namespace {

constexpr char kInGraph[] = "in-graph";
constexpr char kBetweenGraph[] = "between-graph";
// Flags of between-graph training that in-graph replication has no use for.
const char* const kBetweenGraphOnlyFlags[] = {"--mode", "--replicas-to-aggregate", "--job",
                                               "--task", "--model", "--split"};

// Where the towers and variables go, and the session that reaches them. Owns the
// local cluster, if any, which must outlive the session.
struct Placement {
  std::unique_ptr<LocalCluster> cluster;
  InGraphReplication replication;
  std::string target;  // "" with device_count CPU = towers
  std::string description;
};

StatusOr<Placement> PlaceReplicas(const std::string& cluster) {
  Placement p;
  if (cluster.empty()) {
    p.replication.ps_devices = {"/cpu:0"};
    p.replication.tower_devices = {"/cpu:0", "/cpu:1"};
    p.description = "2 towers on 2 CPU devices of this process";
    return p;
  }
  int ps = 0;
  int workers = 0;
  if (IsLocalCluster(cluster)) {
    auto shape = ParseLocalClusterFlag(cluster);
    if (!shape.ok()) return shape.status();
    for (const auto& [job, count] : *shape) {
      if (job != "ps" && job != "worker") {
        return InvalidArgument("--cluster " + cluster + ": job '" + job +
                               "' has no role in in-graph replication (use ps and worker)");
      }
    }
    ps = shape->count("ps") ? shape->at("ps") : 0;
    workers = shape->count("worker") ? shape->at("worker") : 0;
    if (ps < 1 || workers < 1) {
      return InvalidArgument("--cluster " + cluster + ": in-graph replication needs ps=P and "
                             "worker=W, both >= 1");
    }
    AF_ASSIGN_OR_RETURN(p.cluster, LocalCluster::Start(*shape));
    AF_ASSIGN_OR_RETURN(p.target, p.cluster->Target("worker", 0));
  } else {
    AF_ASSIGN_OR_RETURN(ClusterSpec spec, LoadClusterFile(cluster));
    ps = spec.num_tasks("ps");
    workers = spec.num_tasks("worker");
    if (ps < 1 || workers < 1) {
      return InvalidArgument("--cluster " + cluster + ": in-graph replication needs jobs 'ps' and "
                             "'worker' with at least one task each");
    }
    AF_ASSIGN_OR_RETURN(TaskAddress master, spec.Address(TaskId{"worker", 0}));
    p.target = "actorflow://" + master.ToString();
  }
  for (int k = 0; k < ps; ++k) p.replication.ps_devices.push_back("/job:ps/task:" + std::to_string(k));
  for (int i = 0; i < workers; ++i) {
    p.replication.tower_devices.push_back("/job:worker/task:" + std::to_string(i));
  }
  p.description = std::to_string(workers) + " towers on the worker tasks, variables on " +
                  std::to_string(ps) + " ps task(s)";
  return p;
}

Status Train(const TrainCommandOptions& o, const std::string& cluster, std::ostream& out,
             std::ostream& progress, std::ostream& err, bool interactive) {
  AF_ASSIGN_OR_RETURN(TrainingData data, LoadTrainingData(o));
  AF_ASSIGN_OR_RETURN(const int64_t classes, ResolveClasses(data, o.classes));
  AF_ASSIGN_OR_RETURN(Placement placement, PlaceReplicas(cluster));
  const int64_t towers = static_cast<int64_t>(placement.replication.tower_devices.size());

  InGraphClassifierOptions options;
  AF_ASSIGN_OR_RETURN(options.model, ClassifierOptionsFromFlags(o, data, classes));
  SessionOptions session;
  session.target = placement.target;
  if (session.target.empty()) session.device_count = {{"CPU", static_cast<int>(towers)}};
  options.model.session_factory = SessionFactoryFor(session);
  // One update trains a batch on every tower: an epoch has `towers` times fewer.
  options.model.learning_rate_decay =
      DecayPerEpoch(o.lr_decay, data.train.features.dim(0), o.batch * towers);
  options.replication = placement.replication;
  progress << "in-graph replication: " << placement.description << "\n";

  const auto start = std::chrono::steady_clock::now();
  AF_ASSIGN_OR_RETURN(std::unique_ptr<InGraphClassifier> classifier,
                      InGraphClassifier::Create(std::move(options)));
  // One step trains a batch on every tower.
  const int64_t rows = data.train.labels.NumElements();
  const int64_t step_rows = o.batch * towers;
  const int64_t planned = PlannedTrainSteps(o, rows, step_rows);
  ProgressBar bar(progress, planned, interactive);
  // One graph trains every tower: its run is worker_0.
  TrainSummaries summaries(ResolveUserPath(o.logdir), step_rows, o.learning_rate, err);
  StatusOr<TrainResult> trained =
      classifier->Train(TrainingInput(data.train, step_rows, o.seed, o.epochs), MaxTrainSteps(o),
                        [&bar, &summaries, planned](const TrainProgress& p) {
                          bar.Update(p.step, p.loss);
                          summaries.Progress(0, p.step, planned, p.loss);
                        });
  bar.Finish();
  AF_RETURN_IF_ERROR(trained.status());
  AF_ASSIGN_OR_RETURN(EvalResult eval, classifier->Evaluate(EvaluationInput(data.test)));
  summaries.End(0, trained->steps, {{"accuracy", static_cast<float>(eval.accuracy)}});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  nlohmann::ordered_json extra;
  extra["replication"] = kInGraph;
  extra["towers"] = towers;
  extra["ps_tasks"] = placement.replication.ps_devices.size();
  PrintTrainResult(o, eval, *trained, seconds, classes, extra, out);
  return Status::OK();
}

}  // namespace

int InGraphTrainCommand(const TrainCommandOptions& options, const std::string& cluster,
                        std::ostream& out, std::ostream& err, bool interactive) {
  std::ostream& progress = options.json ? err : out;  // stdout: the result alone
  return RunChecked(
      out, err, [&]() { return CheckModelAndTrainingFlags(options); },
      [&]() { return Train(options, cluster, out, progress, err, interactive); },
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
    app->add_option("--cluster", *own_cluster, "local:ps=P,worker=W or a cluster JSON file");
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
