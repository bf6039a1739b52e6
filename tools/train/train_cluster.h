// `actorflow train --cluster ...`: between-graph data-parallel training of the same
// model `actorflow train` trains alone, by the library trainer
// (actors/trainer/cluster_trainer.h, training/distributed/trainer.h): this file maps
// the flags onto TrainerOptions and shows the run (tools/train/cluster_report.h).
//
//   actorflow train --cluster local:ps=P,worker=W --mode sync|async|ssp:S
//                   [--replicas-to-aggregate N] [the model and data flags of train]
//   actorflow train --cluster FILE --job worker --task I --mode ... (one worker; the
//                   ps tasks run `actorflow server --cluster FILE --job ps --task J`)
//                   [--checkpoint-dir DIR --checkpoint-every N] [--max-restarts N]
//                   [--reconnect-timeout-ms N]
//
// - local: starts the P ps tasks as a LocalCluster in this process (real servers on
//   127.0.0.1) and runs the W workers on W threads; each connects to the ps tasks
//   with ConnectParameterServers.
// - FILE: this process is worker I of the cluster's `--job` (default "worker"); the
//   number of workers is that job's task count; the variables live on job "ps".
// - --mode: sync (replicas_to_aggregate of the W workers' gradients per update, by
//   default all of them; the others are backups), async, or ssp:S (bounded
//   staleness S). The optimizer (--optimizer, --lr) runs on the ps tasks.
// - Each worker computes its gradients in its own in-process session (the actor
//   runtime; --devices as for `actorflow train`).
// - An epoch is one pass over the training set by all workers together; --epochs N,
//   or, without it, the passes that --steps batches of --batch rows make (a
//   progress line says so, with the steps each worker then runs).
// - Progress (on stderr under --json, with the recovery lines below): one line per
//   worker every ~10% of its steps; for a local cluster whose progress stream is a
//   terminal (`interactive`) and without --json, one bar per worker redrawn in place
//   instead (tools/train/multi_progress.h). The end: one line per
//   worker, one with the updates applied, the gradients dropped as stale, the mean
//   staleness and the workers lost, then the test accuracy line; with --json
//   stdout's only line is one JSON object with "accuracy", "loss", "global_step", "seconds",
//   "updates_applied", "dropped_stale", "mean_staleness" and "workers_lost".
// - Worker 0 (the chief) initializes the variables and, with --checkpoint-dir, writes
//   the checkpoint that `actorflow predict` reads.
// - A cluster file's worker runs under training/distributed/recovery.h's supervisor: a lost ps
//   task is reconnected to (--reconnect-timeout-ms, default 30000) and, by the
//   chief, restored from the latest checkpoint of --checkpoint-dir, at most
//   --max-restarts times (default 3); in sync mode a worker waits for lost workers
//   (a killed chief being restarted) to rejoin; the chief writes a coordinated
//   checkpoint every --checkpoint-every global steps. A restarted chief continues
//   from the shards' global step. The global step never goes backwards. Each failure,
//   restore, checkpoint and recovery prints a line "worker I: ..."; the end adds
//   "recovery: ..." lines, and the JSON a "recovery" object: "restarts",
//   "steps_lost", "global_step_monotone", "started_from_global_step",
//   ["start_checkpoint", "start_restored"], ["last_checkpoint"] and "events" (each
//   with "failure", "step_at_failure", "resumed_from", "waited_for_workers",
//   "restored", ["checkpoint", "checkpoint_step"], "steps_lost",
//   "recovery_seconds"). Only the chief checkpoints.
#ifndef ACTORFLOW_TOOLS_TRAIN_TRAIN_CLUSTER_H_
#define ACTORFLOW_TOOLS_TRAIN_TRAIN_CLUSTER_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "graph/status.h"
#include "tools/train/train_command.h"
#include "training/distributed/data_parallel.h"
#include "training/distributed/trainer_options.h"
#include "training/estimators/model_spec.h"

namespace actorflow {
namespace cli {

// The library trainer's options (training/distributed/trainer_options.h) that the
// flags mean for `spec` on `train_rows` rows: --cluster (a local shape, or a cluster
// file read here and checked against --job, --task, --max-workers and
// --replicas-to-aggregate: InvalidArgument naming the flag), --mode and the elastic
// flags, the optimizer, rate, batch, epochs (ClusterEpochs), seed, timeout,
// checkpoint and recovery flags, and --devices. No callbacks.
StatusOr<TrainerOptions> TrainerOptionsFromFlags(const TrainCommandOptions& options,
                                                 const DNNModelSpec& spec, int64_t train_rows);

// --mode sync|async|ssp:S (ParseUpdateMode's errors) and --replicas-to-aggregate as
// the trainer's ps policy.
StatusOr<TrainingPolicy> PsPolicyOfMode(const std::string& mode, int replicas_to_aggregate);

// The flags every cluster mode maps alike: --optimizer, --lr, --batch, --seed and
// --timeout-ms (unset: a day). Each mode's own mapping starts from these.
TrainerOptions TrainerOptionsOfCommonFlags(const TrainCommandOptions& options);

// --epochs, or the passes over `rows` rows that --steps batches of --batch rows make
// (at least 1).
int64_t ClusterEpochs(const TrainCommandOptions& options, int64_t rows);

// Checks the cluster flags without reading a file (a cluster FILE is read later):
// InvalidArgument naming the flag for a bad --mode, a malformed local shape, a local
// shape without "ps" or "worker", --replicas-to-aggregate outside [1, W] (W known for
// local shapes), --job/--task or the recovery flags given with a local cluster,
// --task missing with a file, --checkpoint-every without --checkpoint-dir, and
// cluster flags given without --cluster.
Status CheckClusterFlags(const TrainCommandOptions& options);

// Runs the cluster mode on loaded data through Train (actors/trainer/cluster_trainer.h); writes the result to `out`, progress (and
// the recovery supervisor's lines) to `progress`, a --logdir warning to `warnings`;
// `interactive`: `progress` is a terminal (bars for a local cluster, see above).
// Under --logdir each worker this process runs logs to DIR/worker_<task>/
// (tools/train/train_summaries.h); the end adds accuracy, updates_applied,
// dropped_stale, mean_staleness and workers_lost (a count) at its last step.
Status TrainOnCluster(const TrainCommandOptions& options, const DNNModelSpec& spec,
                      const LabeledData& train, const LabeledData& test, std::ostream& out,
                      std::ostream& progress, std::ostream& warnings, bool interactive);

// Without --epochs, --steps becomes dp.epochs passes over the `rows` training rows
// shared by the workers: the line that says so and how many steps each worker then
// runs, e.g. "--steps 1000 of --batch 32 on 120 rows is 267 epoch(s) shared by 2
// worker(s): 534 steps per worker (--epochs N sets the passes directly)". "" under
// --epochs or when each worker runs exactly --steps steps.
std::string StepsRescaledLine(const TrainCommandOptions& options, const DataParallelOptions& dp,
                              int64_t rows);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TRAIN_TRAIN_CLUSTER_H_
