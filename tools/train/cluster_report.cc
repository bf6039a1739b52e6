#include "tools/train/cluster_report.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/train/epoch_evaluations.h"
#include "tools/train/train_elastic.h"
#include "tools/train/train_flags.h"
#include "tools/train/train_summaries.h"

namespace actorflow {
namespace cli {
namespace {

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

}  // namespace

void ClusterProgressPrinter::Report(const WorkerProgress& p) {
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

// Elastic: a line per ~10% of the run's batches, and one for every membership
// change and every pause.
void ClusterProgressPrinter::ReportElastic(const WorkerProgress& p) {
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

void TerminalProgress::Report(const WorkerProgress& p) {
  std::lock_guard<std::mutex> lock(mu_);
  Write(bars_.Update(p.worker, p.step, p.planned_steps, p.loss, MultiProgress::Clock::now()));
}

void TerminalProgress::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  Write(bars_.Finish(MultiProgress::Clock::now()));
}

void TerminalProgress::Write(const std::string& frame) {
  if (frame.empty()) return;
  out_ << frame;
  out_.flush();
}

// Under --logdir: the end of each worker run here, at its last step.
void LogClusterResult(const DataParallelResult& result, TrainSummaries* summaries) {
  const ParameterStats& stats = result.stats;
  const std::vector<std::pair<std::string, float>> scalars = {
      {"accuracy", static_cast<float>(result.eval.accuracy)},
      {"updates_applied", static_cast<float>(stats.updates_applied)},
      {"dropped_stale", static_cast<float>(stats.gradients_dropped_stale)},
      {"mean_staleness", static_cast<float>(stats.mean_staleness)},
      {"workers_lost", static_cast<float>(result.workers_lost.size())}};
  for (const WorkerReport& w : result.workers) summaries->End(w.worker, w.steps, scalars);
}

namespace {

// The chief's per-epoch evaluations as one process reports them (see the header).
void AddEpochJson(const DataParallelResult& result, int64_t train_rows,
                  nlohmann::ordered_json* out) {
  const WorkerReport* chief = nullptr;
  for (const WorkerReport& w : result.workers) {
    if (!w.epochs.empty()) chief = &w;
  }
  if (chief == nullptr) return;
  std::vector<double> accuracies, seconds;
  for (const EpochEvaluation& e : chief->epochs) {
    accuracies.push_back(e.eval.accuracy);
    seconds.push_back(e.training_seconds);
  }
  SetByEpochJson(accuracies, seconds, out);
  const EpochEvaluation& last = chief->epochs.back();
  (*out)["samples_per_second"] =
      last.training_seconds > 0
          ? static_cast<double>(train_rows * last.epoch) / last.training_seconds
          : 0.0;
}

}  // namespace

// `recovery`: the supervisor's report of a cluster file's worker (else null).
void PrintClusterResult(const TrainCommandOptions& options, const DataParallelOptions& dp,
                        const DataParallelResult& result, const RecoveryReport* recovery,
                        int64_t train_rows, std::ostream& out) {
  const ParameterStats& stats = result.stats;
  if (options.json) {
    nlohmann::ordered_json j = ResultJsonHead(result.eval, result.seconds);
    j["updates_applied"] = stats.updates_applied;
    j["dropped_stale"] = stats.gradients_dropped_stale;
    j["mean_staleness"] = stats.mean_staleness;
    j["workers_lost"] = result.workers_lost;
    j["mode"] = options.mode;
    j["workers"] = dp.ps.total_replicas;
    j["batch"] = dp.batch_size;  // rows of each worker's step
    if (dp.ps.mode == UpdateMode::kSync) j["replicas_to_aggregate"] = dp.ps.replicas_to_aggregate;
    j["epochs"] = dp.epochs;
    j["examples"] = result.eval.num_examples;
    AddEpochJson(result, train_rows, &j);
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

}  // namespace cli
}  // namespace actorflow
