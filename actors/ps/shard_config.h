// ShardConfig: how a parameter shard updates its variables (the update protocol and
// the optimizer), as the ParameterServerOptions of kernels/parameter_client.h reach a
// ps task. Every client of one shard must pass an equal config: a shard created with
// another one refuses the client (actors/ps/parameter_shard.h).
//
// CAF-free. Thread safety: a plain value.
#ifndef ACTORFLOW_ACTORS_PS_SHARD_CONFIG_H_
#define ACTORFLOW_ACTORS_PS_SHARD_CONFIG_H_

#include <string>

#include "graph/status.h"
#include "kernels/parameter_client.h"

namespace actorflow {

// How a shard updates; every client of one shard must agree on it.
struct ShardConfig {
  UpdateMode mode = UpdateMode::kAsync;
  int total_replicas = 1;
  int replicas_to_aggregate = 1;
  int staleness_bound = 0;
  std::string optimizer = "sgd";
  double learning_rate = 0.1;
  // Elastic membership (kSync): total_replicas is the number of worker slots, workers
  // come and go, and each update averages the gradients of the workers live for its
  // version (replicas_to_aggregate is not used). Below min_workers live workers the
  // update waits (training pauses) until enough return. See
  // actors/ps/parameter_shard_state.h.
  bool elastic = false;
  int min_workers = 1;
  // kSync elastic: "none" keeps learning_rate; "linear" scales it by
  // aggregated / total_replicas for each update (the linear scaling rule: the global
  // batch shrinks with the workers, so does the step).
  std::string lr_scaling = "none";

  // For messages: "sync 2 of 3, sgd lr=0.1", "sync elastic 1..3 workers, sgd lr=0.1", "async with 2 workers, adam lr=0.01",
  // "ssp:1 with 2 workers, sgd lr=0.1".
  std::string ToString() const;
  bool operator==(const ShardConfig& o) const;
  bool operator!=(const ShardConfig& o) const { return !(*this == o); }
};

ShardConfig ShardConfigFrom(const ParameterServerOptions& options);

// InvalidArgument for total_replicas < 1, replicas_to_aggregate outside
// 1..total_replicas (kSync), a negative staleness bound, or a bad optimizer / rate.
Status ValidateShardConfig(const ShardConfig& config);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_PS_SHARD_CONFIG_H_
