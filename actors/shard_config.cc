#include "actors/shard_config.h"

#include <sstream>

#include "actors/shard_optimizer.h"

namespace actorflow {

std::string ShardConfig::ToString() const {
  std::ostringstream os;
  switch (mode) {
    case UpdateMode::kAsync:
      os << "async";
      break;
    case UpdateMode::kSync:
      os << "sync " << replicas_to_aggregate << " of " << total_replicas;
      break;
    case UpdateMode::kStaleSynchronous:
      os << "ssp:" << staleness_bound;
      break;
  }
  if (mode != UpdateMode::kSync) os << " with " << total_replicas << " workers";
  os << ", " << optimizer << " lr=" << learning_rate;
  return os.str();
}

bool ShardConfig::operator==(const ShardConfig& o) const {
  return mode == o.mode && total_replicas == o.total_replicas &&
         replicas_to_aggregate == o.replicas_to_aggregate && staleness_bound == o.staleness_bound &&
         optimizer == o.optimizer && learning_rate == o.learning_rate;
}

ShardConfig ShardConfigFrom(const ParameterServerOptions& options) {
  ShardConfig c;
  c.mode = options.mode;
  c.total_replicas = options.total_replicas;
  c.replicas_to_aggregate = options.replicas_to_aggregate;
  c.staleness_bound = options.staleness_bound;
  c.optimizer = options.optimizer;
  c.learning_rate = options.learning_rate;
  return c;
}

Status ValidateShardConfig(const ShardConfig& config) {
  if (config.total_replicas < 1) {
    return InvalidArgument("total_replicas must be at least 1, got " +
                           std::to_string(config.total_replicas));
  }
  if (config.mode == UpdateMode::kSync &&
      (config.replicas_to_aggregate < 1 || config.replicas_to_aggregate > config.total_replicas)) {
    return InvalidArgument("replicas_to_aggregate=" + std::to_string(config.replicas_to_aggregate) +
                           " must be between 1 and the number of workers (total_replicas=" +
                           std::to_string(config.total_replicas) + ")");
  }
  if (config.staleness_bound < 0) {
    return InvalidArgument("the staleness bound must be >= 0, got " +
                           std::to_string(config.staleness_bound));
  }
  return ShardOptimizer::Create(config.optimizer, config.learning_rate).status();
}

}  // namespace actorflow
