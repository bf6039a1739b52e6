#include "kernels/ps/shard_config.h"

#include "kernels/ps/shard_optimizer.h"

namespace actorflow {

ShardConfig ShardConfigFrom(const ParameterServerOptions& options) {
  ShardConfig c;
  c.mode = options.mode;
  c.total_replicas = options.total_replicas;
  c.replicas_to_aggregate = options.replicas_to_aggregate;
  c.staleness_bound = options.staleness_bound;
  c.optimizer = options.optimizer;
  c.learning_rate = options.learning_rate;
  c.elastic = options.elastic;
  c.min_workers = options.min_workers;
  c.lr_scaling = options.lr_scaling;
  c.lr_decay = options.lr_decay;
  return c;
}

Status ValidateShardConfig(const ShardConfig& config) {
  if (config.total_replicas < 1) {
    return InvalidArgument("total_replicas must be at least 1, got " +
                           std::to_string(config.total_replicas));
  }
  if (config.elastic && config.mode != UpdateMode::kSync) {
    return InvalidArgument("elastic membership needs the sync mode (async and ssp need no "
                           "aggregation count)");
  }
  if (config.elastic && (config.min_workers < 1 || config.min_workers > config.total_replicas)) {
    return InvalidArgument("min_workers=" + std::to_string(config.min_workers) +
                           " must be between 1 and the number of worker slots (total_replicas=" +
                           std::to_string(config.total_replicas) + ")");
  }
  if (config.lr_scaling != "none" && config.lr_scaling != "linear") {
    return InvalidArgument("lr_scaling must be none or linear, got '" + config.lr_scaling + "'");
  }
  if (config.mode == UpdateMode::kSync && !config.elastic &&
      (config.replicas_to_aggregate < 1 || config.replicas_to_aggregate > config.total_replicas)) {
    return InvalidArgument("replicas_to_aggregate=" + std::to_string(config.replicas_to_aggregate) +
                           " must be between 1 and the number of workers (total_replicas=" +
                           std::to_string(config.total_replicas) + ")");
  }
  if (config.staleness_bound < 0) {
    return InvalidArgument("the staleness bound must be >= 0, got " +
                           std::to_string(config.staleness_bound));
  }
  const std::string decay_error = LearningRateDecayError(config.lr_decay);
  if (!decay_error.empty()) return InvalidArgument(decay_error);
  return ShardOptimizer::Create(config.optimizer, config.learning_rate).status();
}

}  // namespace actorflow
