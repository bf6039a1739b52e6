// `actorflow train --model word2vec`: skip-gram word2vec (training/estimators/word2vec.h)
// on a text file or directory, in one process or between-graph on a cluster
// (tools/train/graph_cluster_flag.h: local:ps=P,worker=W, sim:ps=P,worker=W, or a
// cluster file).
//
//   actorflow train --model word2vec --text FILE|DIR [--vocab-size 50000]
//       [--embedding-dim 128] [--num-sampled 64] [--skip-window 1] [--batch 128]
//       [--steps N] [--optimizer sgd] [--lr 1] [--seed N]
//       [--cluster local:ps=P,worker=W|FILE [--mode async]] [--checkpoint-dir DIR]
//       [--logdir DIR] [--timeout-ms N] [--json]
//
// Defaults for flags not given: SGD at rate 1, batch 128, --mode async. With
// --cluster (local:ps=P,worker=W, or a cluster file of ps and worker tasks) the W
// workers train asynchronously on their shards of the text, --steps steps in all. The result (stdout): the mean NCE loss of the
// last 100 steps beside that of the first 100, the traffic per step and each
// frequent word's nearest words; with --json one line holding "model", "loss",
// "first_loss", "bytes_pushed_per_step", "bytes_pulled_per_step",
// "dense_bytes_per_step", "rows_touched_per_step", "nearest" (word -> 5 words),
// "steps", "global_step", "seconds", "words_per_second" and "vocab_size".
//
// --checkpoint-dir DIR resumes from DIR's latest checkpoint and writes one at the end
// with the serving files (training/estimators/model_dir.h: `actorflow export
// --checkpoint-dir DIR` serves word ids -> unit embeddings) and DIR/vocabulary.txt;
// --logdir DIR writes each worker's loss to DIR/worker_<i>/ (train_summaries.h).
#ifndef ACTORFLOW_TOOLS_TRAIN_WORD2VEC_COMMAND_H_
#define ACTORFLOW_TOOLS_TRAIN_WORD2VEC_COMMAND_H_

#include <ostream>

#include "graph/status.h"
#include "tools/train/train_command.h"

namespace actorflow {
namespace cli {

// What can be judged without reading the text: InvalidArgument naming the flag.
Status CheckWord2VecFlags(const TrainCommandOptions& options);

// Trains; the result goes to `out`, progress to `progress`.
Status TrainWord2VecCommand(const TrainCommandOptions& options, std::ostream& out,
                            std::ostream& progress);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TRAIN_WORD2VEC_COMMAND_H_
