#include "tools/train/train_allreduce.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/trainer/cluster_trainer.h"
#include "actors/sim/sim_cluster_spec.h"
#include "placement/cluster_spec.h"
#include "tools/cli/cli_common.h"
#include "tools/train/train_cluster.h"
#include "tools/train/train_flags.h"
#include "training/distributed/allreduce_training.h"
#include "training/distributed/trainer_options.h"

namespace actorflow {
namespace cli {

namespace {

// The CPU devices of --devices ("cpu=N"; empty: 1), each a member of the group.
StatusOr<int> MemberCpusPerTask(const std::string& devices) {
  if (devices.empty()) return 1;
  AF_ASSIGN_OR_RETURN(auto counts, ParseDeviceCounts(devices));
  for (const auto& [type, count] : counts) {
    if (type != "CPU" && count > 0) {
      return InvalidArgument("--devices " + devices +
                             ": --mode allreduce runs its members on CPU devices (cpu=N)");
    }
  }
  auto cpu = counts.find("CPU");
  return cpu == counts.end() ? 1 : std::max(1, cpu->second);
}

}  // namespace

Status CheckAllReduceFlags(const TrainCommandOptions& options) {
  if (options.cluster.rfind("sim:", 0) == 0) {
    if (options.replicas_to_aggregate != 0 || options.task >= 0) {
      return InvalidArgument("--replicas-to-aggregate and --task do not apply to --mode "
                             "allreduce");
    }
    return ParseSimClusterSpec(options.cluster).status().WithContext("--cluster");
  }
  if (!IsLocalCluster(options.cluster)) {
    // A cluster file: this process is worker --task of --job (read with the file).
    if (options.task < 0) {
      return InvalidArgument("--cluster " + options.cluster +
                             ": a cluster file needs --task I (this process's worker index)");
    }
    if (options.replicas_to_aggregate != 0) {
      return InvalidArgument("--replicas-to-aggregate does not apply to --mode allreduce");
    }
    AF_RETURN_IF_ERROR(MemberCpusPerTask(options.devices).status());
    return Status::OK();
  }
  AF_ASSIGN_OR_RETURN(auto shape, ParseLocalClusterFlag(options.cluster));
  if (shape.size() != 1 || shape.count("worker") == 0) {
    return InvalidArgument("--cluster " + options.cluster +
                           ": --mode allreduce takes only a 'worker' job (local:worker=W); its "
                           "workers hold the variables, no ps task does");
  }
  if (options.replicas_to_aggregate != 0 || options.task >= 0) {
    return InvalidArgument("--replicas-to-aggregate and --task do not apply to --mode "
                           "allreduce (every worker of the local cluster joins every step's "
                           "all-reduce)");
  }
  AF_RETURN_IF_ERROR(MemberCpusPerTask(options.devices).status());
  if (!(options.bucket_mb > 0)) {
    return InvalidArgument("--bucket-mb " + std::to_string(options.bucket_mb) + ": must be > 0");
  }
  return Status::OK();
}

namespace {

// The library trainer's options (policy kAllReduce) that the flags mean: --cluster
// local:worker=W (W tasks started here) or a cluster file's --job/--task (this
// process's task), --devices cpu=N members per task, --bucket-mb, the optimizer,
// rate, batch, epochs (ClusterEpochs), seed and timeout. No callbacks.
StatusOr<TrainerOptions> AllReduceTrainerOptionsFromFlags(const TrainCommandOptions& options,
                                                          const DNNModelSpec& spec,
                                                          int64_t train_rows) {
  TrainerOptions trainer = TrainerOptionsOfCommonFlags(options);
  trainer.model = spec;
  if (IsLocalCluster(options.cluster)) {
    AF_ASSIGN_OR_RETURN(auto shape, ParseLocalClusterFlag(options.cluster));
    trainer.cluster = TrainerCluster::Local(/*ps_tasks=*/0, shape.at("worker"));
  } else {
    AF_ASSIGN_OR_RETURN(ClusterSpec spec_file, LoadClusterFile(options.cluster));
    const int tasks = spec_file.num_tasks(options.job);
    if (options.task >= tasks) {
      return InvalidArgument("--task " + std::to_string(options.task) + ": job " + options.job +
                             " of " + options.cluster + " has " + std::to_string(tasks) +
                             " task(s)");
    }
    trainer.cluster = TrainerCluster::OfSpec(std::move(spec_file), options.job, options.task,
                                             options.cluster);
  }
  trainer.policy.kind = TrainingPolicyKind::kAllReduce;
  AF_ASSIGN_OR_RETURN(trainer.policy.members_per_task, MemberCpusPerTask(options.devices));
  trainer.policy.bucket_bytes =
      std::max<int64_t>(1, std::llround(options.bucket_mb * 1024 * 1024));
  trainer.epochs = ClusterEpochs(options, train_rows);
  return trainer;
}

}  // namespace

Status TrainAllReduceOnCluster(const TrainCommandOptions& options, const DNNModelSpec& spec,
                               const LabeledData& train, const LabeledData& test,
                               std::ostream& out, std::ostream& progress) {
  AF_RETURN_IF_ERROR(CheckAllReduceFlags(options));
  AF_ASSIGN_OR_RETURN(TrainerOptions trainer,
                      AllReduceTrainerOptionsFromFlags(options, spec, train.features.dim(0)));
  trainer.recovery_log = [&progress](const std::string& line) {
    progress << line << "\n";
    progress.flush();
  };
  // One line per worker every ~10% of its steps (the members report one at a time).
  trainer.progress = [&progress](const WorkerProgress& p) {
    const int64_t tenth = std::max<int64_t>(p.planned_steps / 10, 1);
    if (p.step % tenth != 0 && p.step != p.planned_steps) return;
    char line[160];
    std::snprintf(line, sizeof(line), "worker %d: step %lld/%lld, loss %.4f", p.worker,
                  static_cast<long long>(p.step), static_cast<long long>(p.planned_steps),
                  p.loss);
    progress << line << "\n";
    progress.flush();
  };
  AF_ASSIGN_OR_RETURN(TrainerResult ran, Train(trainer, train, test));
  const AllReduceTrainingResult& result = ran.allreduce;  // its workers: this process's
  const int workers = ran.plan.workers;
  const int tasks = workers / trainer.policy.members_per_task;

  if (options.json) {
    nlohmann::ordered_json j = ResultJsonHead(result.eval, result.seconds);
    j["mode"] = "allreduce";
    j["workers"] = workers;
    j["tasks"] = tasks;
    j["epochs"] = trainer.epochs;
    j["examples"] = result.eval.num_examples;
    j["buckets"] = result.buckets;
    j["bucket_mb"] = options.bucket_mb;
    j["replicas_identical"] = result.replicas_identical;
    j["weights_hash"] = result.weights_hash;
    nlohmann::ordered_json reports = nlohmann::ordered_json::array();
    for (const AllReduceWorkerReport& w : result.workers) {
      reports.push_back({{"worker", w.worker}, {"steps", w.steps}, {"seconds", w.seconds}});
    }
    j["worker_reports"] = reports;
    out << j.dump() << "\n";
    out.flush();
    return Status::OK();
  }
  char line[200];
  for (const AllReduceWorkerReport& w : result.workers) {
    std::snprintf(line, sizeof(line), "worker %d: %lld steps, %.2f s", w.worker,
                  static_cast<long long>(w.steps), w.seconds);
    out << line << "\n";
  }
  std::snprintf(line, sizeof(line),
                "all-reduce: %lld bucket(s) of up to %g MiB per step, replicas identical: %s, "
                "weights %s",
                static_cast<long long>(result.buckets), options.bucket_mb,
                result.replicas_identical ? "yes" : "NO", result.weights_hash.c_str());
  out << line << "\n" << TestAccuracyLine(result.eval, result.seconds) << "\n";
  out.flush();
  return Status::OK();
}

}  // namespace cli
}  // namespace actorflow
