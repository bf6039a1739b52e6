// `actorflow train --replication in-graph`: trains the DNN classifier of `actorflow
// train` with in-graph replication, by the library trainer's kInGraph policy
// (actors/trainer/cluster_trainer.h, training/distributed/in_graph_trainer.h): this
// one client builds a graph with a tower per worker and the variables on the ps
// tasks, and runs every step as one Session::Run. This file maps the flags onto
// TrainerOptions and shows the run.
//
//   actorflow train --replication in-graph [--cluster local:ps=P,worker=W | FILE]
//                   [the model and data flags of train]
//
// - --cluster local:ps=P,worker=W starts a LocalCluster in this process (real servers
//   on 127.0.0.1); the towers go to the W worker tasks, the variables over the P ps
//   tasks, and the session's master is worker 0's.
// - --cluster FILE: cluster JSON whose "ps" and "worker" tasks run `actorflow server`;
//   the session's master is worker 0's.
// - Without --cluster: two towers on two CPU devices of an in-process session.
// - --batch is the rows of one tower's step, so one step trains on batch x towers
//   rows, as one synchronous step of W between-graph workers does; --epochs N runs N
//   passes over the training set, else --steps steps.
// - --replication between-graph (the default) is plain `actorflow train`, with or
//   without --cluster. --mode, --replicas-to-aggregate, --job and --task select
//   between-graph training and are usage errors with in-graph.
// - Output is `actorflow train`'s: progress (on stderr under --json), then `test
//   accuracy ...` or, with --json, stdout's only line: one JSON object with
//   "accuracy", "loss", "global_step", "seconds" (building, training and
//   evaluation), "steps", "train_loss", "examples", "classes",
//   "replication": "in-graph", "towers" and "ps_tasks". --checkpoint-dir works as in
//   `actorflow train` (the directory is a DNNClassifier model directory).
//
// Errors: one line `actorflow: <Status>` on stderr naming the flag, file or task;
// exit codes as cli_common.h.
#ifndef ACTORFLOW_TOOLS_TRAIN_IN_GRAPH_TRAIN_H_
#define ACTORFLOW_TOOLS_TRAIN_IN_GRAPH_TRAIN_H_

#include <memory>
#include <ostream>
#include <string>

#include "tools/cli/cli_common.h"
#include "tools/train/train_command.h"

namespace actorflow {
namespace cli {

// Runs in-graph training with the train flags in `options` on `cluster` (the
// --cluster value; empty: local CPU devices); streams as TrainCommand's. Returns the
// exit code. Never throws.
int InGraphTrainCommand(const TrainCommandOptions& options, const std::string& cluster,
                        std::ostream& out, std::ostream& err, bool interactive);

// Adds --replication to the `train` subcommand (and --cluster when `train` has none)
// and returns a Subcommand whose main runs InGraphTrainCommand for
// `--replication in-graph` and train's own main otherwise. `options` is what train's
// flags parse into; it must be the object train's main reads.
Subcommand WithReplicationFlag(Subcommand train, std::shared_ptr<const TrainCommandOptions> options);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TRAIN_IN_GRAPH_TRAIN_H_
