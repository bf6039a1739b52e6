// `actorflow train --model wide-deep`: the wide & deep classifier
// (training/estimators/wide_deep.h) on CSV files of tools/ctr_data.py's layout (user,
// item, site, category, hour, price and a 0/1 label), in one process or between-graph
// on a cluster (tools/train/graph_cluster_flag.h: local:ps=P,worker=W,
// sim:ps=P,worker=W, or a cluster file).
//
//   actorflow train --model wide-deep --train DIR/train.csv --test DIR/test.csv
//       [--label clicked] [--epochs 2] [--batch 256] [--lr 2] [--hidden 64,32]
//       [--seed N] [--cluster local:ps=P,worker=W|FILE [--mode async|sync]]
//       [--checkpoint-dir DIR] [--logdir DIR] [--json]
//
// --lr is the wide part's FTRL rate (the deep part trains by Adagrad at 0.05). On a
// cluster, --mode async (the default) trains the workers between-graph, each on its
// share of the rows; --mode sync builds a tower per worker in one graph, so every
// step applies all workers' gradients together (WideDeepOptions::sync). The
// result: the test AUC, accuracy and mean logistic loss; with --json one line holding
// "model", "auc", "accuracy", "loss", "steps", "global_step", "seconds",
// "bytes_pulled_per_step", "bytes_pushed_per_step", "dense_bytes_per_step" and
// "rows_touched_per_step".
//
// --checkpoint-dir DIR resumes from DIR's latest checkpoint and writes one at the end
// with the serving files (training/estimators/model_dir.h; `actorflow export
// --checkpoint-dir DIR` serves column ids and numbers -> "probability"); --logdir DIR
// writes each worker's loss to DIR/worker_<i>/ and the test AUC at the end.
#ifndef ACTORFLOW_TOOLS_TRAIN_WIDE_DEEP_COMMAND_H_
#define ACTORFLOW_TOOLS_TRAIN_WIDE_DEEP_COMMAND_H_

#include <ostream>

#include "graph/status.h"
#include "tools/train/train_command.h"

namespace actorflow {
namespace cli {

// What can be judged without reading the files: InvalidArgument naming the flag.
Status CheckWideDeepFlags(const TrainCommandOptions& options);

// Trains and evaluates; the result goes to `out`, progress to `progress`.
Status TrainWideDeepCommand(const TrainCommandOptions& options, std::ostream& out,
                            std::ostream& progress);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TRAIN_WIDE_DEEP_COMMAND_H_
