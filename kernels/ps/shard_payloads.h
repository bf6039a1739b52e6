// The payloads of the parameter shard protocol, as plain structs: the shard's
// config, a push as it reaches a shard, and the shard's replies and statistics.
// CAF-free, so that the shard's protocol state (kernels/ps/parameter_shard_state.h),
// its tests and its in-process users need no actor system; their `inspect`
// overloads and the shard's typed interface are in actors/protocol/shard_messages.h. Tensors in them share
// their buffers (read-only once sent).
//
// Thread safety: plain values.
#ifndef ACTORFLOW_KERNELS_PS_SHARD_PAYLOADS_H_
#define ACTORFLOW_KERNELS_PS_SHARD_PAYLOADS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/default_learning_rate.h"
#include "kernels/parameter_client.h"

namespace actorflow {

// How a shard updates; every client of one shard must agree on it.
struct ShardConfig {
  UpdateMode mode = UpdateMode::kAsync;
  int total_replicas = 1;
  int replicas_to_aggregate = 1;
  int staleness_bound = 0;
  std::string optimizer = "sgd";
  double learning_rate = kDefaultLearningRate;
  // Elastic membership (kSync): total_replicas is the number of worker slots, workers
  // come and go, and each update averages the gradients of the workers live for its
  // version (replicas_to_aggregate is not used). Below min_workers live workers the
  // update waits (training pauses) until enough return. See
  // kernels/ps/parameter_shard_state.h.
  bool elastic = false;
  int min_workers = 1;
  // kSync elastic: "none" keeps learning_rate; "linear" scales it by
  // aggregated / total_replicas for each update (the linear scaling rule: the global
  // batch shrinks with the workers, so does the step).
  std::string lr_scaling = "none";
  // The update that makes version v+1 uses learning_rate * lr_decay.ScaleAt(v)
  // (tf.train.exponential_decay by the shard's version; kernels/optimizer_rules.h).
  LearningRateDecay lr_decay;

  // For messages: "sync 2 of 3, sgd lr=0.1", "sync elastic 1..3 workers, sgd lr=0.1", "async with 2
  // workers, adam lr=0.01", "ssp:1 with 2 workers, sgd lr=0.1".
  std::string ToString() const;
  bool operator==(const ShardConfig& o) const;
  bool operator!=(const ShardConfig& o) const { return !(*this == o); }
};

// One push as it reaches a shard. `sequence` > 0 numbers a worker's pushes (a repeat
// of an already seen sequence is a duplicate and is not applied); 0 = unnumbered.
struct ShardPushArgs {
  int worker = 0;
  uint64_t sequence = 0;
  int64_t base_version = 0;
  std::vector<std::string> names;
  std::vector<Tensor> gradients;  // parallel to names
  // Non-empty: `gradients` is empty and gradient i comes apart from this message, as
  // the tensor keyed BulkGradientKey(bulk_key, i) (actors/ps/bulk_gradients.h); the
  // shard actor waits for all of them before the state sees the push.
  std::string bulk_key;
  // Push-and-pull only, both non-empty: the shard actor writes the reply's values on
  // its task's bulk channel to this endpoint (the worker's receiver, "host:port"),
  // keyed BulkGradientKey(values_key, i), instead of in the reply (see PushReply).
  std::string values_endpoint;
  std::string values_key;
  // Push-and-pull: the reply also carries the shard's values as they are when it is
  // answered (the actor attaches them; see PushReply), sparing the worker's next pull.
  bool return_values = false;
};

struct ShardPullReply {
  uint64_t id = 0;  // the shard state's RequestId
  Status status;
  int64_t version = 0;
  std::vector<std::string> names;  // sorted
  std::vector<Tensor> values;      // parallel to names; shared buffers, read-only
  // SnapshotAt only (an ordinary pull leaves them empty): the optimizer slots at
  // `version`, "<var>/<suffix>", sorted; shared buffers, read-only.
  std::vector<std::string> slot_names;
  std::vector<Tensor> slot_values;  // parallel to slot_names
  MembershipView membership;        // elastic only
};

struct ShardPushReply {
  uint64_t id = 0;  // the shard state's RequestId
  Status status;
  bool applied = false;
  int64_t staleness = 0;
  int64_t version = 0;  // the shard's version when answered
  // When the push asked for them (ShardPushArgs::return_values) and succeeded: every
  // variable (sorted names; shared buffers, read-only) at values_version, the
  // shard's version when the reply was sent. Filled by FillValues.
  std::vector<std::string> names;
  std::vector<Tensor> values;
  int64_t values_version = 0;
  // Non-empty: `values` is empty and value i comes apart from this reply, as the
  // tensor keyed BulkGradientKey(values_key, i) (ShardPushArgs::values_endpoint).
  std::string values_key;
  // kSync, applied: how many gradients the update it joined averaged.
  int aggregated = 0;
  MembershipView membership;  // elastic, with the values: as of values_version
};

struct ShardStats {
  bool initialized = false;
  int64_t variables = 0;
  int64_t version = 0;  // = updates applied
  int64_t gradients_dropped_stale = 0;
  int64_t staleness_sum = 0;    // over applied gradients
  int64_t staleness_count = 0;  // applied gradients
  int64_t max_staleness = 0;
  std::vector<int> workers_lost;  // sorted
  // How each of workers_lost was lost, in its order, as the ps task's transport saw
  // it (actors/transport/connection_ends.h); "" where it could not tell.
  std::vector<std::string> lost_causes;
  std::vector<int> workers_left;  // sorted
  std::vector<int64_t> clocks;    // pushes per worker, [total_replicas]
  int64_t parked_pulls = 0;
  int64_t parked_pushes = 0;
  int64_t accumulated = 0;  // kSync: gradients accumulated for the current version
  // Gradients of each worker that went into an update, [total_replicas].
  std::vector<int64_t> applied_by_worker;
  // Elastic: the live members (sorted), the number of membership changes seen, and
  // kSync updates by the number of gradients they averaged, [total_replicas + 1].
  std::vector<int> members;
  int64_t membership_epoch = 0;
  std::vector<int64_t> updates_by_aggregated;
  std::vector<MembershipChange> membership_changes;
  // Versions skipped by RaiseVersion on an initialized shard: the updates a
  // recovery lost (a standby behind its dead primary, an older checkpoint).
  int64_t updates_lost = 0;
};

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_PS_SHARD_PAYLOADS_H_
