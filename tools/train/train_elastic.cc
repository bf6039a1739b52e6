#include "tools/train/train_elastic.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "tools/train/train_flags.h"
#include "tools/train/train_summaries.h"

namespace actorflow {
namespace cli {
namespace {

std::string MemberList(const std::vector<int>& members) {
  std::string out = "[";
  for (size_t i = 0; i < members.size(); ++i) out += (i ? "," : "") + std::to_string(members[i]);
  return out + "]";
}

void PrintElasticResult(const TrainCommandOptions& options, const DataParallelOptions& dp,
                        const DataParallelResult& result, std::ostream& out) {
  const ParameterStats& stats = result.stats;
  if (options.json) {
    nlohmann::ordered_json j = ResultJsonHead(result.eval, result.seconds);
    j["updates_applied"] = stats.updates_applied;
    j["dropped_stale"] = stats.gradients_dropped_stale;
    j["workers_lost"] = result.workers_lost;
    j["mode"] = options.mode;
    j["elastic"] = true;
    j["workers"] = dp.ps.total_replicas;
    j["min_workers"] = dp.ps.min_workers;
    j["lr_scaling"] = dp.ps.lr_scaling;
    j["epochs"] = dp.epochs;
    j["examples"] = result.eval.num_examples;
    nlohmann::ordered_json changes = nlohmann::ordered_json::array();
    for (const MembershipChange& c : stats.membership_changes) {
      changes.push_back({{"event", c.kind},
                         {"task", "/job:" + options.job + "/task:" + std::to_string(c.worker)},
                         {"worker", c.worker},
                         {"global_step", c.global_step}});
    }
    j["membership_changes"] = changes;
    j["updates_by_aggregated"] = stats.updates_by_aggregated;
    j["ps_replicas"] = options.ps_replicas;
    int failovers = 0;
    int64_t restored_lost = 0;
    for (const WorkerReport& w : result.workers) {
      failovers += w.ps_failovers;
      restored_lost += w.updates_lost;
    }
    j["ps_failovers"] = failovers;
    j["updates_lost"] = stats.updates_lost + restored_lost;
    nlohmann::ordered_json workers = nlohmann::ordered_json::array();
    for (const WorkerReport& w : result.workers) {
      workers.push_back({{"worker", w.worker},
                         {"steps", w.steps},
                         {"dropped_stale", w.dropped_stale},
                         {"seconds", w.seconds},
                         {"longest_push_seconds", w.longest_push_seconds}});
    }
    j["worker_reports"] = workers;
    if (!result.checkpoint.empty()) j["checkpoint"] = result.checkpoint;
    out << j.dump() << "\n";
    out.flush();
    return;
  }
  for (const MembershipChange& c : stats.membership_changes) {
    out << "membership: " << c.kind << " /job:" << options.job << "/task:" << c.worker
        << " at global step " << c.global_step << "\n";
  }
  out << "updates applied " << stats.updates_applied << ", gradients dropped as stale "
      << stats.gradients_dropped_stale << "\n";
  for (const WorkerReport& w : result.workers) {
    if (w.ps_failovers > 0) {
      out << "ps failovers " << w.ps_failovers << ", updates lost " << stats.updates_lost << "\n";
    }
  }
  if (!result.checkpoint.empty()) out << "checkpoint saved in " << options.checkpoint_dir << "\n";
  out << TestAccuracyLine(result.eval, result.seconds) << "\n";
  out.flush();
}

}  // namespace

std::string ElasticProgressLine(const WorkerProgress& p) {
  char line[400];
  if (!p.failover.empty()) {
    std::snprintf(line, sizeof(line), "worker %d: %s", p.worker, p.failover.c_str());
    return line;
  }
  if (!p.paused.empty()) {
    std::snprintf(line, sizeof(line), "worker %d: %s", p.worker, p.paused.c_str());
    return line;
  }
  std::snprintf(line, sizeof(line),
                "worker %d: batch %lld/%lld (epoch %lld), loss %.4f, global step %lld, "
                "members %s (membership epoch %lld), update averaged %d%s",
                p.worker, static_cast<long long>(p.batch_index + 1),
                static_cast<long long>(p.total_batches), static_cast<long long>(p.epoch + 1),
                p.loss, static_cast<long long>(p.global_step), MemberList(p.members).c_str(),
                static_cast<long long>(p.membership_epoch), p.aggregated,
                p.applied ? "" : " (dropped as stale)");
  return line;
}

void ReportElasticResult(const TrainCommandOptions& options, const DataParallelOptions& dp,
                         const DataParallelResult& result, TrainSummaries* summaries,
                         std::ostream& out) {
  const ParameterStats& stats = result.stats;
  for (const WorkerReport& w : result.workers) {
    summaries->End(w.worker, w.steps,
                   {{"accuracy", static_cast<float>(result.eval.accuracy)},
                    {"updates_applied", static_cast<float>(stats.updates_applied)},
                    {"membership_changes", static_cast<float>(stats.membership_changes.size())}});
  }
  PrintElasticResult(options, dp, result, out);
}

}  // namespace cli
}  // namespace actorflow
