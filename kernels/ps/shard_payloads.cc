#include "kernels/ps/shard_payloads.h"

#include <sstream>

namespace actorflow {

std::string ShardConfig::ToString() const {
  std::ostringstream os;
  switch (mode) {
    case UpdateMode::kAsync:
      os << "async";
      break;
    case UpdateMode::kSync:
      if (elastic) {
        os << "sync elastic " << min_workers << ".." << total_replicas << " workers";
      } else {
        os << "sync " << replicas_to_aggregate << " of " << total_replicas;
      }
      break;
    case UpdateMode::kStaleSynchronous:
      os << "ssp:" << staleness_bound;
      break;
  }
  if (mode != UpdateMode::kSync) os << " with " << total_replicas << " workers";
  os << ", " << optimizer << " lr=" << learning_rate;
  if (lr_scaling != "none") os << " (" << lr_scaling << " scaling)";
  if (lr_decay.enabled()) {
    os << " decaying x" << lr_decay.decay_rate << " every " << lr_decay.decay_steps << " updates";
  }
  return os.str();
}

bool ShardConfig::operator==(const ShardConfig& o) const {
  return mode == o.mode && total_replicas == o.total_replicas &&
         replicas_to_aggregate == o.replicas_to_aggregate && staleness_bound == o.staleness_bound &&
         optimizer == o.optimizer && learning_rate == o.learning_rate && elastic == o.elastic &&
         min_workers == o.min_workers && lr_scaling == o.lr_scaling && lr_decay == o.lr_decay;
}

}  // namespace actorflow
