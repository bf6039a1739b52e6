// The library trainer's kAllReduce policy (training/distributed/trainer_options.h):
// the CAF-free half of Train (actors/trainer/cluster_trainer.h) for collective data
// parallelism without ps tasks. Train starts the worker tasks' servers (every task of
// a local cluster, or this process's own task of a cluster spec) and hands over one
// session factory per task; this file turns the options into TrainWithAllReduce's
// (training/distributed/allreduce_training.h) and its result into a TrainerResult.
//
// Members: task t serves policy.members_per_task (N) CPU devices, each a member;
// member r is CPU r mod N of task r / N and opens its session with task r / N's
// factory. A kSpec process runs the members of its own task only; the others run
// the same training in their processes.
//
// Thread safety: as TrainWithAllReduce; TrainerOptions.progress is called from the
// members' threads, one call at a time.
#ifndef ACTORFLOW_TRAINING_DISTRIBUTED_ALLREDUCE_TRAINER_H_
#define ACTORFLOW_TRAINING_DISTRIBUTED_ALLREDUCE_TRAINER_H_

#include <cstdint>
#include <vector>

#include "graph/status.h"
#include "training/distributed/allreduce_training.h"
#include "training/distributed/data_parallel.h"
#include "training/distributed/trainer.h"
#include "training/distributed/trainer_options.h"

namespace actorflow {

// The all-reduce options every member runs for `options` (policy kAllReduce) with
// `task_sessions[t]` opening a session on the master of task t of options.cluster.job
// ("worker" for kLocal); the members this process runs are those of
// options.cluster.task for kSpec, all of them for kLocal. The progress and log
// callbacks forward to options.progress (worker, step, planned_steps, epoch, loss;
// global_step = step) and options.recovery_log. InvalidArgument when the policy is
// not kAllReduce, there is no task, or the kSpec task is not one of them.
StatusOr<AllReduceTrainingOptions> AllReduceOptionsFor(
    const TrainerOptions& options, const std::vector<SessionFactory>& task_sessions);

// Runs `plan.allreduce` (AllReduceOptionsFor's) on `train` and evaluates the chief
// replica of this process on `test`. The result's accuracy, loss, global_step and
// seconds are the chief's; `allreduce` holds the rest, its `workers` only this
// process's members. Errors: TrainWithAllReduce's.
StatusOr<TrainerResult> RunAllReduceTrainer(const TrainerPlan& plan, const LabeledData& train,
                                            const LabeledData& test);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DISTRIBUTED_ALLREDUCE_TRAINER_H_
