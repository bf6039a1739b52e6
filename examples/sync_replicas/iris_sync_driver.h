// TrainIrisSync: synchronous between-graph training of a small Iris network with
// SyncReplicasOptimizer and MonitoredTrainingSession (examples/sync_replicas/iris_sync.cc
// says how a run goes). It reads its task from TfConfigFromEnv() and starts its
// server with Server::Start; worker 0 is the chief. Prints "Global step N, test set
// accuracy: A" at the end.
#ifndef ACTORFLOW_EXAMPLES_SYNC_REPLICAS_IRIS_SYNC_DRIVER_H_
#define ACTORFLOW_EXAMPLES_SYNC_REPLICAS_IRIS_SYNC_DRIVER_H_

#include <cstdint>
#include <string>

#include "graph/status.h"

namespace actorflow {

// model_dir: where the chief restores from and saves checkpoints ("" = none);
// last_step: the global step training stops at.
Status TrainIrisSync(const std::string& model_dir, int64_t last_step);

}  // namespace actorflow

#endif  // ACTORFLOW_EXAMPLES_SYNC_REPLICAS_IRIS_SYNC_DRIVER_H_
