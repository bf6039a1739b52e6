// Train's kSimulated part (actors/trainer/cluster_trainer.h): the ps policies on a
// simulated cluster. Internal to //actors/trainer:cluster_trainer.
#ifndef ACTORFLOW_ACTORS_TRAINER_SIM_TRAINER_H_
#define ACTORFLOW_ACTORS_TRAINER_SIM_TRAINER_H_

#include "graph/status.h"
#include "training/distributed/trainer.h"
#include "training/distributed/trainer_options.h"

namespace actorflow {

class SimulatedCluster;

// kAllReduce on `cluster` (actors/trainer/sim_allreduce_trainer.cc): `plan.allreduce`
// gives the replicas' model and devices. Fills *run but its event log fields (the
// caller's, who sets the result's `simulation`).
StatusOr<TrainerResult> TrainAllReduceOnSimulatedCluster(const TrainerOptions& options,
                                                         SimulatedCluster& cluster,
                                                         const TrainerPlan& plan,
                                                         const LabeledData& train,
                                                         const LabeledData& test,
                                                         SimulatedTrainerRun* run);

// `options` were validated (ValidateTrainerOptions) and name a simulated cluster.
StatusOr<TrainerResult> TrainOnSimulatedCluster(const TrainerOptions& options,
                                                const LabeledData& train, const LabeledData& test);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRAINER_SIM_TRAINER_H_
