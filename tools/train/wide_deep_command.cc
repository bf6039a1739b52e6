#include "tools/train/wide_deep_command.h"

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "tools/cli/cli_common.h"
#include "tools/train/graph_cluster_flag.h"
#include "tools/train/train_flags.h"
#include "tools/train/train_summaries.h"
#include "training/estimators/wide_deep.h"

namespace actorflow {
namespace cli {
namespace {

Status CheckMode(const TrainCommandOptions& flags) {
  if (flags.cluster.empty() || flags.mode == "async" || flags.mode == "sync") return Status::OK();
  return InvalidArgument("--model wide-deep --mode " + flags.mode + ": use async or sync");
}

StatusOr<WideDeepOptions> WideDeepOptionsOf(const TrainCommandOptions& flags) {
  AF_ASSIGN_OR_RETURN(WideDeepOptions o, CtrDataColumns());
  AF_ASSIGN_OR_RETURN(o.hidden_units, ParseHiddenUnits(flags.hidden, "--hidden"));
  o.linear_learning_rate = flags.learning_rate;
  o.batch = flags.batch;
  o.epochs = flags.epochs > 0 ? flags.epochs : 1;
  o.seed = flags.seed;
  o.timeout_ms = flags.timeout_ms;
  AF_RETURN_IF_ERROR(CheckMode(flags));
  AF_ASSIGN_OR_RETURN(GraphCluster shape, GraphClusterOfFlag(flags.cluster, "wide-deep"));
  o.num_ps = shape.num_ps;
  o.num_workers = shape.num_workers;
  o.sync = flags.mode == "sync";
  o.checkpoint_dir = ResolveUserPath(flags.checkpoint_dir);
  return o;
}

}  // namespace

Status CheckWideDeepFlags(const TrainCommandOptions& flags) {
  if (flags.train_path.empty() || flags.test_path.empty()) {
    return InvalidArgument("--model wide-deep needs --train and --test (CSV files written by "
                           "tools/ctr_data.py)");
  }
  return WideDeepOptionsOf(flags).status();
}

Status TrainWideDeepCommand(const TrainCommandOptions& flags, std::ostream& out,
                            std::ostream& progress) {
  AF_ASSIGN_OR_RETURN(WideDeepOptions o, WideDeepOptionsOf(flags));
  CsvOptions csv;
  csv.label_column = flags.label;
  AF_ASSIGN_OR_RETURN(CsvData train, LoadCsv(ResolveUserPath(flags.train_path), csv));
  AF_ASSIGN_OR_RETURN(CsvData test, LoadCsv(ResolveUserPath(flags.test_path), csv));
  progress << "wide & deep: " << train.features.dim(0) << " training rows, "
           << test.features.dim(0) << " test rows\n";
  AF_ASSIGN_OR_RETURN(GraphTrainerOptions trainer,
                      GraphTrainerOptionsFromFlag(flags.cluster, "wide-deep", flags.timeout_ms));
  TrainSummaries summaries(ResolveUserPath(flags.logdir), o.batch, o.linear_learning_rate,
                           progress);
  if (summaries.enabled()) {
    o.on_step = [&summaries](int worker, int64_t step, int64_t planned, double loss) {
      summaries.Progress(worker, step, planned, loss);
    };
  }
  trainer.seed = flags.seed;
  WideDeepResult r;
  AF_ASSIGN_OR_RETURN(GraphTrainerReport report,
                      TrainGraphWorkload(trainer, [&](const GraphCluster& cluster) -> Status {
                        AF_ASSIGN_OR_RETURN(r, TrainWideDeep(o, train, test, cluster.sessions));
                        return Status::OK();
                      }));
  summaries.End(0, r.global_step,
                {{"auc", static_cast<float>(r.auc)},
                 {"accuracy", static_cast<float>(r.accuracy)},
                 {"test_loss", static_cast<float>(r.loss)}});
  if (flags.json) {
    nlohmann::ordered_json j;
    j["model"] = "wide-deep";
    j["auc"] = r.auc;
    j["accuracy"] = r.accuracy;
    j["loss"] = r.loss;
    j["steps"] = r.steps;
    j["global_step"] = r.global_step;
    j["seconds"] = r.seconds;
    j["bytes_pulled_per_step"] = r.bytes_pulled_per_step;
    j["bytes_pushed_per_step"] = r.bytes_pushed_per_step;
    j["dense_bytes_per_step"] = r.dense_bytes_per_step;
    j["rows_touched_per_step"] = r.rows_touched_per_step;
    AddSimulationFields(report, &j);
    out << j.dump() << "\n";
    return Status::OK();
  }
  out << "bytes per step: " << r.bytes_pulled_per_step << " pulled, " << r.bytes_pushed_per_step
      << " pushed (dense: " << r.dense_bytes_per_step << "); " << r.rows_touched_per_step
      << " rows touched\n";
  out << "test auc " << r.auc << ", accuracy " << r.accuracy << ", loss " << r.loss << " after "
      << r.steps << " steps\n";
  return Status::OK();
}

}  // namespace cli
}  // namespace actorflow
