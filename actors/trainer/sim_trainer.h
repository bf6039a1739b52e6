// Train's kSimulated part (actors/trainer/cluster_trainer.h): the ps policies on a
// simulated cluster. Internal to //actors/trainer:cluster_trainer.
#ifndef ACTORFLOW_ACTORS_TRAINER_SIM_TRAINER_H_
#define ACTORFLOW_ACTORS_TRAINER_SIM_TRAINER_H_

#include "graph/status.h"
#include "training/distributed/trainer.h"
#include "training/distributed/trainer_options.h"

namespace actorflow {

// `options` were validated (ValidateTrainerOptions) and name a simulated cluster.
StatusOr<TrainerResult> TrainOnSimulatedCluster(const TrainerOptions& options,
                                                const LabeledData& train, const LabeledData& test);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRAINER_SIM_TRAINER_H_
