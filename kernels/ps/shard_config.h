// ShardConfig (kernels/ps/shard_payloads.h) from the ParameterServerOptions of
// kernels/parameter_client.h, and its validation (which knows the optimizers). Every client of one
// shard must pass an equal config: a shard created with another one refuses the client
// (actors/ps/parameter_shard.h).
//
// CAF-free. Thread safety: a plain value.
#ifndef ACTORFLOW_KERNELS_PS_SHARD_CONFIG_H_
#define ACTORFLOW_KERNELS_PS_SHARD_CONFIG_H_

#include "kernels/ps/shard_payloads.h"
#include "graph/status.h"
#include "kernels/parameter_client.h"

namespace actorflow {

ShardConfig ShardConfigFrom(const ParameterServerOptions& options);

// InvalidArgument for total_replicas < 1, replicas_to_aggregate outside
// 1..total_replicas (kSync), a negative staleness bound, or a bad optimizer / rate.
Status ValidateShardConfig(const ShardConfig& config);

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_PS_SHARD_CONFIG_H_
