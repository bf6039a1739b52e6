#include "tools/train/train_cluster.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "actors/sim/sim_cluster_spec.h"
#include "tools/train/train_allreduce.h"
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/cluster/local_cluster.h"
#include "actors/ps/parameter_client_impl.h"
#include "placement/cluster_spec.h"
#include "tools/train/multi_progress.h"
#include "tools/cli/status_server.h"
#include "tools/train/train_elastic.h"
#include "tools/train/train_flags.h"
#include "tools/train/train_summaries.h"
#include "training/distributed/recovery.h"
#include "training/summary/status_board.h"

namespace actorflow {
namespace cli {
namespace {

constexpr char kPsJob[] = "ps";

// Prints one line per worker every ~10% of its planned steps (and its last step).
// Called from the worker threads.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(std::ostream& out) : out_(out) {}

  void Report(const WorkerProgress& p) {
    if (!p.paused.empty() || !p.failover.empty() || !p.members.empty()) return ReportElastic(p);
    const int64_t planned = std::max<int64_t>(p.planned_steps, 1);
    const int64_t tenth = std::max<int64_t>(planned / 10, 1);
    std::lock_guard<std::mutex> lock(mu_);
    Window& w = windows_[p.worker];
    w.loss_sum += p.loss;
    ++w.count;
    if (p.step % tenth != 0 && p.step != planned) return;
    char line[200];
    std::snprintf(line, sizeof(line),
                  "worker %d: step %lld/%lld (epoch %lld), loss %.4f, global step %lld%s",
                  p.worker, static_cast<long long>(p.step), static_cast<long long>(planned),
                  static_cast<long long>(p.epoch + 1), w.loss_sum / w.count,
                  static_cast<long long>(p.global_step), p.applied ? "" : " (dropped as stale)");
    out_ << line << "\n";
    out_.flush();
    w = Window();
  }

 private:
  // Elastic: a line per ~10% of the run's batches, and one for every membership
  // change and every pause.
  void ReportElastic(const WorkerProgress& p) {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t tenth = std::max<int64_t>(p.total_batches / 10, 1);
    const int64_t decile = p.batch_index / tenth;
    const bool changed = p.membership_epoch != last_membership_epoch_ || !p.paused.empty() ||
                         !p.failover.empty() || decile != last_decile_;
    if (!changed) return;
    last_membership_epoch_ = p.membership_epoch;
    last_decile_ = decile;
    out_ << ElasticProgressLine(p);
    if (p.paused.empty() && p.failover.empty() && !p.members.empty()) {
      // Name the tasks that joined or were lost since the last line.
      std::string joined, gone;
      for (int m : p.members) {
        if (have_members_ && !std::count(last_members_.begin(), last_members_.end(), m)) {
          joined += " /job:worker/task:" + std::to_string(m);
        }
      }
      for (int m : last_members_) {
        if (!std::count(p.members.begin(), p.members.end(), m)) {
          gone += " /job:worker/task:" + std::to_string(m);
        }
      }
      if (!joined.empty()) out_ << "; joined:" << joined;
      if (!gone.empty()) out_ << "; gone:" << gone;
      last_members_ = p.members;
      have_members_ = true;
    }
    out_ << "\n";
    out_.flush();
  }

  struct Window {
    double loss_sum = 0.0;
    int64_t count = 0;
  };
  int64_t last_membership_epoch_ = -1;
  int64_t last_decile_ = -1;
  std::vector<int> last_members_;
  bool have_members_ = false;
  std::ostream& out_;
  std::mutex mu_;
  std::map<int, Window> windows_;
};

// On a terminal: one bar per worker thread of a local cluster, redrawn in place
// (tools/train/multi_progress.h). Called from the worker threads.
class TerminalProgress {
 public:
  TerminalProgress(std::ostream& out, int workers, int64_t batch_size)
      : out_(out), bars_(workers, batch_size, MultiProgress::Clock::now()) {}

  void Report(const WorkerProgress& p) {
    std::lock_guard<std::mutex> lock(mu_);
    Write(bars_.Update(p.worker, p.step, p.planned_steps, p.loss, MultiProgress::Clock::now()));
  }
  // The final frame, before the result lines.
  void Finish() {
    std::lock_guard<std::mutex> lock(mu_);
    Write(bars_.Finish(MultiProgress::Clock::now()));
  }

 private:
  void Write(const std::string& frame) {
    if (frame.empty()) return;
    out_ << frame;
    out_.flush();
  }

  std::ostream& out_;
  std::mutex mu_;
  MultiProgress bars_;
};

std::string LostList(const std::vector<int>& lost) {
  if (lost.empty()) return "none";
  std::string text;
  for (int w : lost) text += (text.empty() ? "" : ", ") + std::to_string(w);
  return text;
}

nlohmann::ordered_json RecoveryJson(const RecoveryReport& report) {
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  int64_t lost = 0;
  for (const RecoveryEvent& e : report.events) {
    nlohmann::ordered_json ej;
    ej["failure"] = e.failure.ToString();
    ej["step_at_failure"] = e.step_at_failure;
    ej["resumed_from"] = e.resumed_from;
    ej["waited_for_workers"] = e.waited_for_workers;
    ej["restored"] = e.restored;
    if (e.restored) {
      ej["checkpoint"] = e.checkpoint;
      ej["checkpoint_step"] = e.checkpoint_step;
    }
    ej["steps_lost"] = e.steps_lost;
    ej["recovery_seconds"] = e.recovery_seconds;
    events.push_back(ej);
    lost += e.steps_lost;
  }
  nlohmann::ordered_json j;
  j["restarts"] = report.restarts;
  j["steps_lost"] = lost;
  j["global_step_monotone"] = report.global_step_monotone;
  j["started_from_global_step"] = report.started_from;
  if (!report.start_checkpoint.empty()) {
    j["start_checkpoint"] = report.start_checkpoint;
    j["start_restored"] = report.start_restored;
  }
  if (!report.last_checkpoint.empty()) j["last_checkpoint"] = report.last_checkpoint;
  j["events"] = events;
  return j;
}

// Under --logdir: the end of each worker run here, at its last step.
void LogResult(const DataParallelResult& result, TrainSummaries* summaries) {
  const ParameterStats& stats = result.stats;
  const std::vector<std::pair<std::string, float>> scalars = {
      {"accuracy", static_cast<float>(result.eval.accuracy)},
      {"updates_applied", static_cast<float>(stats.updates_applied)},
      {"dropped_stale", static_cast<float>(stats.gradients_dropped_stale)},
      {"mean_staleness", static_cast<float>(stats.mean_staleness)},
      {"workers_lost", static_cast<float>(result.workers_lost.size())}};
  for (const WorkerReport& w : result.workers) summaries->End(w.worker, w.steps, scalars);
}

// `recovery`: the supervisor's report of a cluster file's worker (else null).
void PrintResult(const TrainCommandOptions& options, const DataParallelOptions& dp,
                 const DataParallelResult& result, const RecoveryReport* recovery,
                 std::ostream& out) {
  const ParameterStats& stats = result.stats;
  if (options.json) {
    nlohmann::ordered_json j = ResultJsonHead(result.eval, result.seconds);
    j["updates_applied"] = stats.updates_applied;
    j["dropped_stale"] = stats.gradients_dropped_stale;
    j["mean_staleness"] = stats.mean_staleness;
    j["workers_lost"] = result.workers_lost;
    j["mode"] = options.mode;
    j["workers"] = dp.ps.total_replicas;
    if (dp.ps.mode == UpdateMode::kSync) j["replicas_to_aggregate"] = dp.ps.replicas_to_aggregate;
    j["epochs"] = dp.epochs;
    j["examples"] = result.eval.num_examples;
    nlohmann::ordered_json workers = nlohmann::ordered_json::array();
    for (const WorkerReport& w : result.workers) {
      nlohmann::ordered_json wj;
      wj["worker"] = w.worker;
      wj["steps"] = w.steps;
      wj["dropped_stale"] = w.dropped_stale;
      wj["seconds"] = w.seconds;
      if (!w.status.ok()) wj["error"] = w.status.ToString();
      workers.push_back(wj);
    }
    j["worker_reports"] = workers;
    if (!result.checkpoint.empty()) j["checkpoint"] = result.checkpoint;
    if (recovery != nullptr) j["recovery"] = RecoveryJson(*recovery);
    out << j.dump() << "\n";
    out.flush();
    return;
  }
  char line[320];
  for (const WorkerReport& w : result.workers) {
    std::snprintf(line, sizeof(line), "worker %d: %lld steps, %lld dropped as stale, %.2f s%s%s",
                  w.worker, static_cast<long long>(w.steps),
                  static_cast<long long>(w.dropped_stale), w.seconds,
                  w.status.ok() ? "" : ", lost: ", w.status.ok() ? "" : w.status.ToString().c_str());
    out << line << "\n";
  }
  std::snprintf(line, sizeof(line),
                "updates applied %lld, gradients dropped as stale %lld, mean staleness %.2f, "
                "workers lost: %s",
                static_cast<long long>(stats.updates_applied),
                static_cast<long long>(stats.gradients_dropped_stale), stats.mean_staleness,
                LostList(result.workers_lost).c_str());
  out << line << "\n";
  if (!result.checkpoint.empty()) out << "checkpoint saved in " << options.checkpoint_dir << "\n";
  if (recovery != nullptr && (!recovery->events.empty() || recovery->started_from > 0)) {
    if (recovery->started_from > 0) {
      out << "recovery: started at global step " << recovery->started_from << "\n";
    }
    std::string summary = recovery->Summary();
    for (size_t at = 0, end; at < summary.size(); at = end + 1) {
      end = summary.find('\n', at);
      if (end == std::string::npos) end = summary.size();
      out << "recovery: " << summary.substr(at, end - at) << "\n";
    }
  }
  out << TestAccuracyLine(result.eval, result.seconds) << "\n";
  out.flush();
}

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

ParameterClientOptions WorkerClientOptions(const ClusterSpec& cluster,
                                           const TrainCommandOptions& options) {
  ParameterClientOptions client_options;
  auto address = cluster.Address(TaskId{options.job, options.task});
  if (address.ok()) client_options.bulk_reply_host = address->host;
  return client_options;
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

Status TrainOnCluster(const TrainCommandOptions& options, const DNNModelSpec& spec,
                      const LabeledData& train, const LabeledData& test, std::ostream& out,
                      std::ostream& progress, std::ostream& warnings, bool interactive) {
  DataParallelOptions dp;
  dp.spec = spec;
  dp.seed = options.seed;
  dp.batch_size = options.batch;
  dp.epochs = ClusterEpochs(options, train.features.dim(0));
  AF_RETURN_IF_ERROR(ParseUpdateMode(options.mode, &dp.ps.mode, &dp.ps.staleness_bound));
  dp.ps.optimizer = options.optimizer;
  dp.ps.learning_rate = options.learning_rate;
  dp.timeout_ms = options.timeout_ms > 0 ? options.timeout_ms : 24 * 3600 * 1000;
  dp.model_dir = ResolveUserPath(options.checkpoint_dir);
  SessionOptions session_options;  // target "": the actor runtime, per worker
  AF_ASSIGN_OR_RETURN(session_options.device_count, ParseDeviceCounts(options.devices));
  dp.session_factory = SessionFactoryFor(session_options);
  ProgressPrinter printer(progress);
  std::unique_ptr<TerminalProgress> bars;  // set for a local cluster on a terminal
  TrainSummaries summaries(ResolveUserPath(options.logdir), options.batch, options.learning_rate,
                           warnings);
  StatusBoard board("actorflow train --cluster " + options.cluster + " --mode " + options.mode);
  // The board is only fed while a status page serves it: no work per step otherwise.
  const bool live_status = options.status_port >= 0;
  const auto report_progress = [&printer, &bars, &summaries, &board,
                                live_status](const WorkerProgress& p) {
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

  ClusterSpec cluster;
  std::unique_ptr<LocalCluster> local;
  int workers = 0;
  if (IsLocalCluster(options.cluster)) {
    AF_ASSIGN_OR_RETURN(auto shape, ParseLocalClusterFlag(options.cluster));
    workers = shape.at("worker");
    // The workers are this process's threads; only the ps tasks need servers.
    AF_ASSIGN_OR_RETURN(local, LocalCluster::Start({{kPsJob, shape.at(kPsJob)}}));
    cluster = local->spec();
  } else {
    AF_ASSIGN_OR_RETURN(cluster, LoadClusterFile(options.cluster));
    workers = cluster.num_tasks(options.job);
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
    dp.ps.elastic = true;
    dp.ps.min_workers = options.min_workers;
    dp.ps.lr_scaling = options.lr_scaling;
  }
  dp.ps.total_replicas = workers;
  dp.ps.replicas_to_aggregate =
      options.replicas_to_aggregate > 0 ? options.replicas_to_aggregate : workers;
  if (dp.ps.replicas_to_aggregate > workers) {
    return InvalidArgument("--replicas-to-aggregate " +
                           std::to_string(dp.ps.replicas_to_aggregate) + " is more than the " +
                           std::to_string(workers) + " workers of job " + options.job);
  }
  progress << SetShardRateSchedule(options, train.features.dim(0), &dp.ps);
  AF_RETURN_IF_ERROR(ValidateDataParallelOptions(dp));
  ReportRescaledSteps(options, dp, train.features.dim(0), progress);
  std::unique_ptr<StatusServer> status_page;
  if (options.status_port >= 0) {
    AF_ASSIGN_OR_RETURN(status_page, StartStatusPage(options, cluster, workers, &board));
    progress << "status page: " << status_page->url() << "\n";
    progress.flush();
  }
  const ParameterServerOptions ps = dp.ps;
  const int64_t timeout = dp.timeout_ms;

  if (local != nullptr) {
    // A cluster file's worker keeps plain lines: its recovery lines interleave.
    if (interactive && !options.json) {
      bars = std::make_unique<TerminalProgress>(progress, workers, dp.batch_size);
    }
    DataParallelJob job(
        dp,
        [&cluster, ps, timeout](int) { return ConnectParameterServers(cluster, kPsJob, ps, timeout); },
        train, test);
    job.set_progress(report_progress);
    StatusOr<DataParallelResult> ran = job.Run();
    if (bars != nullptr) bars->Finish();
    EndStatusBoard(ran.ok() ? ran->workers_lost : std::vector<int>{}, workers, ran.status(),
                   &board);
    AF_RETURN_IF_ERROR(ran.status());
    const DataParallelResult& result = *ran;
    LogResult(result, &summaries);
    PrintResult(options, dp, result, nullptr, out);
    return Status::OK();
  }
  if (options.elastic) {
    return TrainElasticWorker(options, cluster, dp, report_progress, train, test, &summaries,
                              &board, out);
  }
  // One worker of a cluster file, under the recovery supervisor; only the chief
  // checkpoints.
  WorkerOptions worker;
  worker.worker = options.task;
  worker.progress = report_progress;
  RecoveryOptions recovery;
  recovery.max_restarts = options.max_restarts >= 0 ? options.max_restarts : 3;
  recovery.reconnect_timeout_ms =
      options.reconnect_timeout_ms > 0 ? options.reconnect_timeout_ms : 30000;
  for (int w = 0; w < cluster.num_tasks(options.job); ++w) {
    auto address = cluster.Address(TaskId{options.job, w});
    recovery.worker_addresses.push_back(address.ok() ? address->ToString() : "");
  }
  if (options.task == 0) {
    recovery.checkpoint_dir = dp.model_dir;
    recovery.checkpoint_every_steps = options.checkpoint_every;
  } else {
    dp.model_dir.clear();
  }
  const int task = options.task;
  recovery.log = [&progress, task](const std::string& line) {
    progress << "worker " << task << ": " << line << "\n";
    progress.flush();
  };
  const int64_t connect_timeout = std::min(timeout, recovery.reconnect_timeout_ms);
  const ParameterClientOptions client_options = WorkerClientOptions(cluster, options);
  RecoverySupervisor supervisor(
      dp, worker, recovery, [&cluster, ps, connect_timeout, client_options](int) {
        return ConnectParameterServers(cluster, kPsJob, ps, connect_timeout, client_options);
      });
  RecoveryReport report;
  const Status ran = supervisor.Run(train, test, &report);
  EndStatusBoard({}, 0, ran, &board);
  board.WorkerDone(options.task, !ran.ok());
  AF_RETURN_IF_ERROR(ran);
  LogResult(report.result, &summaries);
  PrintResult(options, dp, report.result, &report, out);
  return Status::OK();
}

}  // namespace cli
}  // namespace actorflow
