// The library trainer's kInGraph policy (training/distributed/trainer_options.h):
// the CAF-free half of Train (actors/trainer/cluster_trainer.h) for in-graph
// replication. Train starts the cluster (ps and worker tasks of a local cluster, or
// none: CPU devices of an in-process session) and hands over the session that
// reaches it; this file places the towers and variables, builds the
// InGraphClassifier (training/distributed/in_graph_classifier.h), trains and
// evaluates it.
//
// A step trains batch_size rows on every tower: an epoch has `towers` times fewer
// steps than one worker alone would run, and the rate decays per epoch accordingly.
//
// Thread safety: runs on the caller's thread; TrainerOptions.progress is called
// from it.
#ifndef ACTORFLOW_TRAINING_DISTRIBUTED_IN_GRAPH_TRAINER_H_
#define ACTORFLOW_TRAINING_DISTRIBUTED_IN_GRAPH_TRAINER_H_

#include <cstdint>

#include "graph/status.h"
#include "training/distributed/data_parallel.h"
#include "training/distributed/in_graph_replication.h"
#include "training/distributed/trainer.h"
#include "training/distributed/trainer_options.h"
#include "training/estimators/dnn_classifier.h"

namespace actorflow {

// Where `options`' (kInGraph) variables and `towers` towers go: with ps tasks, a
// tower on every task of the worker job ("/job:worker/task:i") and the variables
// over the `ps_tasks` ps tasks ("/job:ps/task:k"); without (a local cluster of 0 ps
// tasks), tower i on "/cpu:i" of the in-process session and the variables on
// "/cpu:0".
InGraphReplication InGraphReplicationFor(const TrainerOptions& options, int towers,
                                         int ps_tasks);

// The steps a kInGraph run plans with `towers` towers on `train_rows` rows:
// max_steps when the epochs repeat until it, else the epochs' steps (at most
// max_steps when set).
int64_t PlannedInGraphSteps(const TrainerOptions& options, int towers, int64_t train_rows);

// Builds the client's replicated graph for `plan.in_graph` on sessions of
// `session` (a session on the master that runs the steps), initializes or restores
// the variables (checkpoint_dir), trains, and evaluates on `test`. The result's
// accuracy, loss and global_step are the evaluation's, `seconds` covers building,
// training and evaluation, and `in_graph` holds the evaluation and the training's
// steps and last loss. Errors: InGraphClassifier's (Create, Train, Evaluate).
StatusOr<TrainerResult> RunInGraphTrainer(const TrainerOptions& options, const TrainerPlan& plan,
                                          const SessionFactory& session,
                                          const LabeledData& train, const LabeledData& test);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DISTRIBUTED_IN_GRAPH_TRAINER_H_
