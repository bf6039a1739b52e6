#include "tools/train/train_elastic.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "actors/ps/parameter_client_impl.h"
#include "tools/train/train_cluster.h"
#include "tools/train/train_flags.h"
#include "tools/train/train_summaries.h"
#include "training/summary/status_board.h"

namespace actorflow {
namespace cli {
namespace {

constexpr char kPsJob[] = "ps";

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

// Calls `connect` with what is left of `budget_ms` until it succeeds, fails other
// than Unavailable, or the budget is spent. A task just known lost is refused at
// once (actors/transport/connect.h), so the attempts pause in between.
StatusOr<std::unique_ptr<ParameterClient>> ConnectWithin(
    int64_t budget_ms,
    const std::function<StatusOr<std::unique_ptr<ParameterClient>>(int64_t)>& connect) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(budget_ms);
  while (true) {
    const int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(
                             deadline - Clock::now()).count();
    StatusOr<std::unique_ptr<ParameterClient>> client = connect(std::max<int64_t>(left, 1));
    if (client.ok() || client.status().code() != Code::kUnavailable || left <= 0) return client;
    const auto pause = Clock::now() + std::chrono::milliseconds(250);
    std::this_thread::sleep_until(std::min(deadline, pause));
  }
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

Status TrainElasticWorker(const TrainCommandOptions& options, const ClusterSpec& cluster,
                          const DataParallelOptions& dp, const WorkerProgressFn& progress,
                          const LabeledData& train, const LabeledData& test,
                          TrainSummaries* summaries, StatusBoard* board, std::ostream& out) {
  DataParallelOptions options_here = dp;
  if (options.task != 0) options_here.model_dir.clear();  // only the chief checkpoints
  WorkerOptions worker;
  worker.worker = options.task;
  worker.progress = progress;
  ParameterClientOptions client_options = WorkerClientOptions(cluster, options);
  client_options.ps_replicas = options.ps_replicas;
  client_options.replace_lost_shards = true;
  options_here.checkpoint_every = options.checkpoint_every;
  AF_ASSIGN_OR_RETURN(std::unique_ptr<ParameterClient> client,
                      ConnectParameterServers(cluster, kPsJob, dp.ps, dp.timeout_ms,
                                              client_options));
  StatusOr<DataParallelResult> ran =
      RunDataParallelWorker(options_here, worker, client.get(), train, test);
  // A worker that lost its ps tasks (its link was cut, or it hung, and the failure
  // detector closed its connections: the shards evicted it meanwhile) rejoins as a
  // new member once it reaches them again, within --reconnect-timeout-ms. Not the
  // chief: running again, it would initialize the shards anew.
  const int64_t rejoin_ms = options.reconnect_timeout_ms > 0 ? options.reconnect_timeout_ms : 30000;
  while (!ran.ok() && options.task != 0 && ran.status().code() == Code::kUnavailable) {
    if (progress) {
      WorkerProgress lost;
      lost.worker = options.task;
      lost.failover = "lost the ps tasks (" + ran.status().message() + "); rejoining within " +
                      std::to_string(rejoin_ms) + " ms";
      progress(lost);
    }
    client.reset();
    StatusOr<std::unique_ptr<ParameterClient>> again = ConnectWithin(
        rejoin_ms, [&](int64_t budget_ms) {
          return ConnectParameterServers(cluster, kPsJob, dp.ps, budget_ms, client_options);
        });
    if (!again.ok()) {
      ran = again.status().WithContext("worker " + std::to_string(options.task) +
                                       " lost the ps tasks and could not rejoin");
      break;
    }
    client = std::move(again).value();
    ran = RunDataParallelWorker(options_here, worker, client.get(), train, test);
  }
  board->SetState(ran.ok() ? "finished" : "failed", ran.ok() ? "" : ran.status().ToString());
  board->WorkerDone(options.task, !ran.ok());
  AF_RETURN_IF_ERROR(ran.status());
  const ParameterStats& stats = ran->stats;
  for (const WorkerReport& w : ran->workers) {
    summaries->End(w.worker, w.steps,
                   {{"accuracy", static_cast<float>(ran->eval.accuracy)},
                    {"updates_applied", static_cast<float>(stats.updates_applied)},
                    {"membership_changes", static_cast<float>(stats.membership_changes.size())}});
  }
  PrintElasticResult(options, dp, *ran, out);
  return Status::OK();
}

}  // namespace cli
}  // namespace actorflow
