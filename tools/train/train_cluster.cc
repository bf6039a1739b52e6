#include "tools/train/train_cluster.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/trainer/cluster_trainer.h"
#include "actors/sim/sim_cluster_spec.h"
#include "placement/cluster_spec.h"
#include "tools/cli/status_server.h"
#include "tools/train/cluster_report.h"
#include "tools/train/train_allreduce.h"
#include "tools/train/train_elastic.h"
#include "tools/train/train_flags.h"
#include "tools/train/train_summaries.h"
#include "training/distributed/trainer.h"
#include "training/summary/status_board.h"

namespace actorflow {
namespace cli {
namespace {

constexpr char kPsJob[] = "ps";

}  // namespace

int64_t ClusterEpochs(const TrainCommandOptions& options, int64_t rows) {
  if (options.epochs > 0) return options.epochs;
  const double passes = static_cast<double>(options.steps) * options.batch / rows;
  return std::max<int64_t>(1, static_cast<int64_t>(std::llround(passes)));
}

std::string StepsRescaledLine(const TrainCommandOptions& options, const DataParallelOptions& dp,
                              int64_t rows) {
  if (options.epochs > 0) return "";
  const int64_t per_worker = PlannedStepsPerWorker(dp, rows);
  if (per_worker == options.steps) return "";
  return "--steps " + std::to_string(options.steps) + " of --batch " +
         std::to_string(options.batch) + " on " + std::to_string(rows) + " rows is " +
         std::to_string(dp.epochs) + " epoch(s) shared by " +
         std::to_string(dp.ps.total_replicas) + " worker(s): " + std::to_string(per_worker) +
         " steps per worker (--epochs N sets the passes directly)";
}

namespace {

// Prints StepsRescaledLine when --steps was rescaled.
void ReportRescaledSteps(const TrainCommandOptions& options, const DataParallelOptions& dp,
                         int64_t rows, std::ostream& progress) {
  const std::string line = StepsRescaledLine(options, dp, rows);
  if (line.empty()) return;
  progress << line << "\n";
  progress.flush();
}

}  // namespace

Status CheckElasticFlags(const TrainCommandOptions& options) {
  if (!options.elastic) {
    if (options.min_workers != 1 || options.max_workers != 0 || options.lr_scaling != "none" ||
        options.ps_replicas != 1) {
      return InvalidArgument(
          "--min-workers, --max-workers, --lr-scaling and --ps-replicas need --elastic");
    }
    return Status::OK();
  }
  if (options.cluster.empty() || IsLocalCluster(options.cluster) ||
      options.cluster.rfind("sim:", 0) == 0) {
    return InvalidArgument("--elastic needs a cluster file (--cluster FILE --job worker --task "
                           "I): its workers are processes that come and go");
  }
  if (options.mode != "sync") {
    return InvalidArgument("--elastic applies to --mode sync (an update averages the live "
                           "workers' gradients), not '" + options.mode + "'");
  }
  if (options.replicas_to_aggregate != 0) {
    return InvalidArgument("--elastic averages the gradients of the live workers: drop "
                           "--replicas-to-aggregate");
  }
  if (options.max_workers > 0 && options.min_workers > options.max_workers) {
    return InvalidArgument("--min-workers " + std::to_string(options.min_workers) +
                           " is more than --max-workers " + std::to_string(options.max_workers));
  }
  return Status::OK();
}

Status CheckClusterFlags(const TrainCommandOptions& options) {
  if (options.status_port < -1 || options.status_port > 65535) {
    return InvalidArgument("--status-port " + std::to_string(options.status_port) +
                           ": must be a port in 0..65535 (0: any free port)");
  }
  AF_RETURN_IF_ERROR(CheckElasticFlags(options));
  if (!options.cluster.empty() && !options.trace_path.empty()) {
    return InvalidArgument("--trace traces a step of training in this process; drop --cluster "
                           "(a cluster run's steps: actorflow run --trace against a task)");
  }
  if (options.cluster.empty()) {
    if (options.status_port >= 0) {
      return InvalidArgument("--status-port needs --cluster (e.g. --cluster local:ps=1,worker=2)");
    }
    if (options.task >= 0 || options.replicas_to_aggregate != 0 || options.mode != "sync" ||
        options.max_restarts >= 0 || options.reconnect_timeout_ms > 0 ||
        options.checkpoint_every > 0) {
      return InvalidArgument(
          "--mode, --replicas-to-aggregate, --task, --max-restarts, --reconnect-timeout-ms and "
          "--checkpoint-every need --cluster (e.g. --cluster local:ps=1,worker=2)");
    }
    return Status::OK();
  }
  if (options.mode == "allreduce") return CheckAllReduceFlags(options);
  if (options.checkpoint_every > 0 && options.checkpoint_dir.empty()) {
    return InvalidArgument("--checkpoint-every needs --checkpoint-dir (where the checkpoints go)");
  }
  UpdateMode mode;
  int staleness = 0;
  AF_RETURN_IF_ERROR(ParseUpdateMode(options.mode, &mode, &staleness));
  if (options.replicas_to_aggregate < 0) {
    return InvalidArgument("--replicas-to-aggregate " +
                           std::to_string(options.replicas_to_aggregate) + ": must be >= 1");
  }
  if (options.replicas_to_aggregate > 0 && mode != UpdateMode::kSync) {
    return InvalidArgument("--replicas-to-aggregate applies to --mode sync only, not '" +
                           options.mode + "'");
  }
  if (options.cluster.rfind("sim:", 0) == 0) {
    if (options.task >= 0) {
      return InvalidArgument("--task: a simulated cluster runs every worker itself; drop --task");
    }
    return ParseSimClusterSpec(options.cluster).status().WithContext("--cluster");
  }
  if (!IsLocalCluster(options.cluster)) {
    if (options.task < 0) {
      return InvalidArgument("--cluster " + options.cluster +
                             ": a cluster file needs --task I (this process's worker index)");
    }
    return Status::OK();
  }
  if (options.task >= 0) {
    return InvalidArgument("--task: a local cluster runs every worker itself; drop --task");
  }
  if (options.max_restarts >= 0 || options.reconnect_timeout_ms > 0 ||
      options.checkpoint_every > 0) {
    return InvalidArgument(
        "--max-restarts, --reconnect-timeout-ms and --checkpoint-every apply to a cluster file "
        "(one worker per process), not to --cluster " + options.cluster);
  }
  AF_ASSIGN_OR_RETURN(auto shape, ParseLocalClusterFlag(options.cluster));
  for (const char* job : {kPsJob, "worker"}) {
    if (shape.count(job) == 0) {
      return InvalidArgument("--cluster " + options.cluster + ": needs a '" + job +
                             "' job, e.g. local:ps=1,worker=2");
    }
  }
  const int workers = shape.at("worker");
  if (options.replicas_to_aggregate > workers) {
    return InvalidArgument("--replicas-to-aggregate " +
                           std::to_string(options.replicas_to_aggregate) + " is more than the " +
                           std::to_string(workers) + " workers of --cluster " + options.cluster);
  }
  return Status::OK();
}

namespace {

// The live status page of a cluster run: the cluster's tasks (for a local cluster,
// its ps servers and this process's worker threads) on 127.0.0.1, or, for a cluster
// file, on this worker's host.
StatusOr<std::unique_ptr<StatusServer>> StartStatusPage(const TrainCommandOptions& options,
                                                        const ClusterSpec& cluster, int workers,
                                                        StatusBoard* board) {
  std::string host = "127.0.0.1";
  for (const TaskId& task : cluster.AllTasks()) {
    AF_ASSIGN_OR_RETURN(TaskAddress address, cluster.Address(task));
    board->AddTask(task.job + ":" + std::to_string(task.index), address.ToString(),
                   {ClusterSpec::TaskName(task) + "/device:CPU:0"});
    if (task.job == options.job && task.index == options.task) host = address.host;
  }
  if (IsLocalCluster(options.cluster)) {
    for (int w = 0; w < workers; ++w) {
      board->AddTask("worker:" + std::to_string(w), "in this process", {"/job:localhost/device:CPU:0"});
    }
  }
  return StatusServer::Start(board, host, options.status_port);
}

// The run ended: its state, and the workers that finished or were lost.
void EndStatusBoard(const std::vector<int>& lost, int workers, const Status& status,
                    StatusBoard* board) {
  for (int w = 0; w < workers; ++w) {
    board->WorkerDone(w, std::find(lost.begin(), lost.end(), w) != lost.end());
  }
  board->SetState(status.ok() ? "finished" : "failed", status.ok() ? "" : status.ToString());
}

}  // namespace

namespace {

// --cluster FILE: the workers of --job (with --elastic, at most --max-workers), checked
// against --task and the file's jobs; InvalidArgument naming the flag.
StatusOr<int> ClusterFileWorkers(const TrainCommandOptions& options, const ClusterSpec& cluster) {
  int workers = cluster.num_tasks(options.job);
  if (workers == 0) {
    return InvalidArgument("--job " + options.job + ": cluster " + options.cluster +
                           " has no such job");
  }
  if (options.task >= workers) {
    return InvalidArgument("--task " + std::to_string(options.task) + ": job " + options.job +
                           " has " + std::to_string(workers) + " tasks");
  }
  if (cluster.num_tasks(kPsJob) == 0) {
    return InvalidArgument("cluster " + options.cluster + " has no '" + kPsJob +
                           "' job for the variables");
  }
  if (options.elastic) {
    if (options.max_workers > workers) {
      return InvalidArgument("--max-workers " + std::to_string(options.max_workers) +
                             ": the cluster file has " + std::to_string(workers) +
                             " worker slots");
    }
    if (options.max_workers > 0) workers = options.max_workers;
    if (options.task >= workers) {
      return InvalidArgument("--task " + std::to_string(options.task) + " is outside the " +
                             std::to_string(workers) + " worker slots of --max-workers");
    }
  }
  if (options.replicas_to_aggregate > workers) {
    return InvalidArgument("--replicas-to-aggregate " +
                           std::to_string(options.replicas_to_aggregate) + " is more than the " +
                           std::to_string(workers) + " workers of job " + options.job);
  }
  return workers;
}

// --mode (sync, async, ssp:S) and the elastic flags as the trainer's policy.
StatusOr<TrainingPolicy> PolicyFromFlags(const TrainCommandOptions& options) {
  AF_ASSIGN_OR_RETURN(TrainingPolicy policy,
                      PsPolicyOfMode(options.mode, options.replicas_to_aggregate));
  if (options.elastic) {
    policy.kind = TrainingPolicyKind::kElastic;
    policy.min_workers = options.min_workers;
    policy.max_workers = options.max_workers;
    policy.lr_scaling =
        options.lr_scaling == "linear" ? LearningRateScaling::kLinear : LearningRateScaling::kNone;
    policy.ps_replicas = options.ps_replicas;
  }
  return policy;
}

}  // namespace

StatusOr<TrainingPolicy> PsPolicyOfMode(const std::string& mode, int replicas_to_aggregate) {
  UpdateMode update;
  TrainingPolicy policy;
  AF_RETURN_IF_ERROR(ParseUpdateMode(mode, &update, &policy.staleness_bound));
  policy.kind = update == UpdateMode::kAsync              ? TrainingPolicyKind::kAsync
                : update == UpdateMode::kStaleSynchronous ? TrainingPolicyKind::kStaleSynchronous
                                                          : TrainingPolicyKind::kSync;
  policy.replicas_to_aggregate = replicas_to_aggregate;
  return policy;
}

TrainerOptions TrainerOptionsOfCommonFlags(const TrainCommandOptions& options) {
  TrainerOptions trainer;
  trainer.optimizer = options.optimizer;
  trainer.learning_rate = options.learning_rate;
  trainer.batch_size = options.batch;
  trainer.seed = options.seed;
  trainer.timeout_ms = options.timeout_ms > 0 ? options.timeout_ms : 24 * 3600 * 1000;
  return trainer;
}

StatusOr<TrainerOptions> TrainerOptionsFromFlags(const TrainCommandOptions& options,
                                                 const DNNModelSpec& spec, int64_t train_rows) {
  TrainerOptions trainer = TrainerOptionsOfCommonFlags(options);
  trainer.model = spec;
  if (IsLocalCluster(options.cluster)) {
    AF_ASSIGN_OR_RETURN(auto shape, ParseLocalClusterFlag(options.cluster));
    trainer.cluster = TrainerCluster::Local(shape.at(kPsJob), shape.at("worker"));
  } else {
    AF_ASSIGN_OR_RETURN(ClusterSpec cluster, LoadClusterFile(options.cluster));
    AF_RETURN_IF_ERROR(ClusterFileWorkers(options, cluster).status());
    trainer.cluster =
        TrainerCluster::OfSpec(std::move(cluster), options.job, options.task, options.cluster);
  }
  AF_ASSIGN_OR_RETURN(trainer.policy, PolicyFromFlags(options));
  trainer.learning_rate_decay_per_epoch = options.lr_decay;
  trainer.scale_learning_rate_with_replicas = options.scale_lr_with_replicas;
  trainer.split_batch_over_replicas = options.split_batch_over_replicas;
  trainer.epochs = ClusterEpochs(options, train_rows);
  trainer.checkpoint_dir = ResolveUserPath(options.checkpoint_dir);
  // A named dataset is evaluated after every epoch, as in one process.
  trainer.evaluate_each_epoch = !options.dataset.empty() && options.epochs > 0 &&
                                trainer.policy.kind != TrainingPolicyKind::kElastic;
  if (options.max_restarts >= 0) trainer.recovery.max_restarts = options.max_restarts;
  if (options.reconnect_timeout_ms > 0) {
    trainer.recovery.reconnect_timeout_ms = options.reconnect_timeout_ms;
  }
  trainer.recovery.checkpoint_every = options.checkpoint_every;
  AF_ASSIGN_OR_RETURN(trainer.session_options.device_count, ParseDeviceCounts(options.devices));
  return trainer;
}

Status TrainOnCluster(const TrainCommandOptions& options, const DNNModelSpec& spec,
                      const LabeledData& train, const LabeledData& test, std::ostream& out,
                      std::ostream& progress, std::ostream& warnings, bool interactive) {
  const int64_t rows = train.features.dim(0);
  AF_ASSIGN_OR_RETURN(TrainerOptions trainer, TrainerOptionsFromFlags(options, spec, rows));
  const bool local = trainer.cluster.kind == TrainerCluster::Kind::kLocal;
  ClusterProgressPrinter printer(progress);
  std::unique_ptr<TerminalProgress> bars;  // set for a local cluster on a terminal
  TrainSummaries summaries(ResolveUserPath(options.logdir), options.batch, options.learning_rate,
                           warnings);
  StatusBoard board("actorflow train --cluster " + options.cluster + " --mode " + options.mode);
  // The board is only fed while a status page serves it: no work per step otherwise.
  const bool live_status = options.status_port >= 0;
  trainer.progress = [&printer, &bars, &summaries, &board, live_status](const WorkerProgress& p) {
    if (bars != nullptr) {
      bars->Report(p);
    } else {
      printer.Report(p);
    }
    summaries.Progress(p.worker, p.step, p.planned_steps, p.loss);
    if (live_status) {
      board.Step(p.worker, p.step, p.planned_steps, p.loss, p.global_step, p.applied);
    }
  };
  const int task = options.task;
  trainer.recovery_log = [&progress, task](const std::string& line) {
    progress << "worker " << task << ": " << line << "\n";
    progress.flush();
  };
  std::unique_ptr<StatusServer> status_page;
  int workers = 0;
  trainer.on_start = [&](const TrainerPlan& plan) -> Status {
    workers = plan.workers;
    progress << ShardRateLine(trainer, plan.data_parallel);
    summaries.SetBatchAndRate(plan.data_parallel.batch_size, plan.data_parallel.ps.learning_rate);
    ReportRescaledSteps(options, plan.data_parallel, rows, progress);
    if (live_status) {
      AF_ASSIGN_OR_RETURN(status_page, StartStatusPage(options, plan.cluster, workers, &board));
      progress << "status page: " << status_page->url() << "\n";
      progress.flush();
    }
    // A cluster file's worker keeps plain lines: its recovery lines interleave.
    if (local && interactive && !options.json) {
      bars = std::make_unique<TerminalProgress>(progress, workers,
                                                 plan.data_parallel.batch_size);
    }
    return Status::OK();
  };

  StatusOr<TrainerResult> ran = Train(trainer, train, test);
  if (bars != nullptr) bars->Finish();
  if (local) {
    EndStatusBoard(ran.ok() ? ran->workers_lost : std::vector<int>{}, workers, ran.status(),
                   &board);
  } else {
    EndStatusBoard({}, 0, ran.status(), &board);
    board.WorkerDone(task, !ran.ok());
  }
  AF_RETURN_IF_ERROR(ran.status());
  const DataParallelOptions& dp = ran->plan.data_parallel;
  if (trainer.policy.kind == TrainingPolicyKind::kElastic) {
    ReportElasticResult(options, dp, ran->details, &summaries, out);
    return Status::OK();
  }
  LogClusterResult(ran->details, &summaries);
  PrintClusterResult(options, dp, ran->details, ran->supervised ? &ran->recovery : nullptr, rows,
                     out);
  return Status::OK();
}

}  // namespace cli
}  // namespace actorflow
