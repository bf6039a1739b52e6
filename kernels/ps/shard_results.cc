#include "kernels/ps/shard_results.h"

#include <algorithm>
#include <set>

namespace actorflow {

Status AddShardPushReply(const ShardPushReply& reply, PushResult* result) {
  if (!reply.status.ok() && !reply.applied) return reply.status;
  result->applied = result->applied && reply.applied;
  result->staleness = std::max(result->staleness, reply.staleness);
  result->global_step = std::max(result->global_step, reply.version);
  // Shards complete a version each on their own: report the smallest count.
  if (reply.applied) {
    result->aggregated = result->aggregated == 0 ? reply.aggregated
                                                 : std::min(result->aggregated, reply.aggregated);
  }
  return Status::OK();
}

ParameterStats StatsOfShards(const std::vector<ShardStats>& shards) {
  ParameterStats stats;
  int64_t staleness_sum = 0, staleness_count = 0;
  std::set<int> lost, left;
  for (const ShardStats& s : shards) {
    stats.updates_applied = std::max(stats.updates_applied, s.version);
    stats.gradients_dropped_stale =
        std::max(stats.gradients_dropped_stale, s.gradients_dropped_stale);
    staleness_sum += s.staleness_sum;
    staleness_count += s.staleness_count;
    lost.insert(s.workers_lost.begin(), s.workers_lost.end());
    for (size_t i = 0; i < s.workers_lost.size() && i < s.lost_causes.size(); ++i) {
      if (!s.lost_causes[i].empty()) stats.lost_causes.emplace(s.workers_lost[i], s.lost_causes[i]);
    }
    left.insert(s.workers_left.begin(), s.workers_left.end());
    // Every shard sees the same joins and losses: the first one's record stands.
    stats.updates_lost = std::max(stats.updates_lost, s.updates_lost);
    if (!s.initialized) ++stats.shards_uninitialized;
    if (stats.updates_by_aggregated.empty()) {
      stats.updates_by_aggregated = s.updates_by_aggregated;
      stats.membership_changes = s.membership_changes;
    }
  }
  stats.mean_staleness =
      staleness_count > 0 ? static_cast<double>(staleness_sum) / staleness_count : 0.0;
  stats.workers_lost.assign(lost.begin(), lost.end());
  stats.workers_left.assign(left.begin(), left.end());
  return stats;
}

}  // namespace actorflow
