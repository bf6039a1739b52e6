// Train: the library trainer's entry point (training/distributed/trainer.h): starts
// or reaches the cluster of TrainerOptions.cluster, connects each worker this
// process runs to its ps tasks, and trains. What `actorflow train --cluster ...`
// runs; a program calls it the same way:
//
//   TrainerOptions options;
//   options.model.feature_columns = columns;   // e.g. Iris: 4 numeric columns
//   options.model.hidden_units = {10, 10};
//   options.model.n_classes = 3;
//   options.cluster = TrainerCluster::Local(/*ps_tasks=*/1, /*workers=*/2);
//   options.epochs = 30;
//   StatusOr<TrainerResult> result = Train(options, train, test);
//
// - kLocal: starts the ps tasks as a LocalCluster in this process (real servers on
//   127.0.0.1, stopped when Train returns); the workers are threads.
// - kSpec: this process is worker `task`; the ps tasks of the spec's job "ps" must
//   be running. The ps tasks send push replies to the host the spec gives this
//   worker; kElastic workers keep ps_replicas copies of every shard and replace lost
//   shards without a standby by empty ones for the chief to restore.
// - Each worker computes its gradients in its own local session
//   (TrainerOptions.session_options).
// - kAllReduce: no ps tasks. kLocal starts the worker tasks as a LocalCluster (real
//   servers on 127.0.0.1, policy.members_per_task CPUs each) and runs every member;
//   kSpec serves this process's task (the spec's address for it) and runs its
//   members, the other tasks' processes theirs. Each member's session is on its own
//   task's master (training/distributed/allreduce_trainer.h).
// - kInGraph: this process is the one client. kLocal with ps tasks starts the ps
//   and worker tasks as a LocalCluster and runs the steps through worker 0's
//   master; kLocal without ps tasks needs no server (the towers are CPU devices of
//   an in-process session); kSpec runs them through worker `task`'s master
//   (training/distributed/in_graph_trainer.h).
//
// - kSimulated: a simulated cluster in this process. The ps policies as
//   actors/sim/sim_training.h runs them: a worker driver per worker task on the
//   model's real kernels, compute in virtual time, the fault plan's faults, the
//   invariants judged at the end. kAllReduce: a replica per worker task, their steps
//   run together, the replicas compared byte for byte at every step (message faults
//   only). kInGraph: one replicated graph driven from worker 0, kills and restarts
//   at their global step. Train returns the run, whatever it found, in
//   result.simulation; SimulatedRunVerdict says whether it went well. No progress
//   callback (nothing runs on a worker thread), no files. OpenBLAS runs on one
//   thread (unless OPENBLAS_NUM_THREADS says otherwise), so that the same options
//   give the same weights on every host.
//
// CAF-free header. Errors: ValidateTrainerOptions', TrainerWorkers',
// LocalCluster::Start's, Server::Start's (kAllReduce, kSpec: the task's port in
// use), ConnectParameterServers' (a ps task that cannot be reached), the on_start
// callback's, RunTrainerWorkers', RunAllReduceTrainer's.
#ifndef ACTORFLOW_ACTORS_TRAINER_CLUSTER_TRAINER_H_
#define ACTORFLOW_ACTORS_TRAINER_CLUSTER_TRAINER_H_

#include <cstdint>
#include <string>

#include "actors/sim/sim_training.h"
#include "graph/status.h"
#include "training/distributed/data_parallel.h"
#include "training/distributed/trainer.h"
#include "training/distributed/trainer_options.h"

namespace actorflow {

// What TrainerResult::simulation holds.
struct SimulatedTrainerRun {
  SimTrainingReport report;
  std::string event_log_hash;  // identifies the run: the same options give the same
  int64_t messages = 0;        // messages between tasks
  int64_t dropped = 0;         // of which the fault plan dropped
  int64_t steps_per_worker = 0;  // sync: the global step that ends the run;
                                 // async/SSP: each worker's pushes; kAllReduce,
                                 // kInGraph: the steps
  // kAllReduce: the all-reduces per step, the last step's training loss, and the
  // step that failed (a chunk lost to a fault: its members' deadline), which ended
  // the run. Its invariant "identical weights" lists the steps whose members'
  // weights differed.
  int64_t allreduce_buckets = 0;
  double train_loss = 0;
  Status failure;
};

// OK for a simulated run that ended as planned; the failure of a kAllReduce run; DeadlineExceeded for one that hung
// (naming what each unfinished driver waited for) or ran out of virtual time;
// Aborted naming the first worker that failed (and the workers lost); Internal for
// invariant violations.
Status SimulatedRunVerdict(const SimulatedTrainerRun& run);

// Trains on `train` (features float32 [N, F], labels int32 [N]) and evaluates the
// final parameters on `test`; see the top of this file.
StatusOr<TrainerResult> Train(const TrainerOptions& options, const LabeledData& train,
                              const LabeledData& test);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRAINER_CLUSTER_TRAINER_H_
