// What a ParameterClient (kernels/parameter_client.h) over parameter shards makes
// of the shards' replies: a push's result and the stats, folded over the shards. One
// implementation for the client over shard actors (actors/ps/parameter_client_impl.h)
// and the in-process double (training/distributed/fake_parameter_server.h).
//
// CAF-free. Thread safety: plain functions.
#ifndef ACTORFLOW_KERNELS_PS_SHARD_RESULTS_H_
#define ACTORFLOW_KERNELS_PS_SHARD_RESULTS_H_

#include <vector>

#include "graph/status.h"
#include "kernels/parameter_client.h"
#include "kernels/ps/shard_payloads.h"

namespace actorflow {

// Folds one shard's answer to a push into `result` (start from a default PushResult
// and fold every shard's): applied = every shard applied it; staleness = the
// largest; global_step = the largest shard version; aggregated = the smallest count
// among the shards that applied it. The reply's error when the shard did not apply
// the push (an SSP push whose answer waited past its deadline was applied on
// arrival: it counts as applied, not as a failure).
Status AddShardPushReply(const ShardPushReply& reply, PushResult* result);

// The stats of every shard as one: updates_applied and gradients_dropped_stale the
// largest (each shard counts every push), mean_staleness over all applied gradients,
// workers lost and left the union, the membership record the first shard's.
ParameterStats StatsOfShards(const std::vector<ShardStats>& shards);

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_PS_SHARD_RESULTS_H_
