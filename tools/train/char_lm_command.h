// `actorflow train --model char-lstm|char-transformer`: a character language model
// (training/estimators/char_lm.h) on a text file or directory, e.g. Debian's fortunes.
//
//   actorflow train --model char-lstm --text FILE|DIR [--seq-len 64] [--batch 32]
//       [--steps N] [--lr R] [--seed S] [--embedding-dim 64] [--hidden 256,256]
//       [--eval-chars 65536] [--checkpoint-dir DIR] [--logdir DIR] [--json]
//   actorflow train --model char-transformer --text FILE|DIR [--width 128] [--heads 4]
//       [--blocks 4] ... (the same flags)
//
// Defaults for flags not given: Adam at 0.002 (char-lstm) or 0.001 (char-transformer),
// batch 32, 1000 steps; the LSTM layers are --hidden (256,256). The result: the
// validation bits per character after training beside those after the first 10
// steps; with --json one line holding "model", "bits_per_char", "first_bits_per_char",
// "samples_per_second", "steps", "global_step", "seconds", "vocab_size",
// "train_chars" and "validation_chars". --checkpoint-dir DIR resumes and ends with a
// checkpoint and char_lm.json (`actorflow sample --checkpoint-dir DIR` generates
// text from it); --logdir DIR logs the training loss for TensorBoard.
//
// Placement (training/estimators/char_lm.h's CharLmPlacement; the JSON adds "split",
// "devices" and "cross_device_bytes_per_step"):
//   --split layer --devices cpu=N   the LSTM's layers (the Transformer's blocks) spread
//                                   over the N devices (more than the model has are idle);
//   --pipeline M                    with --split layer: each batch cut into M
//                                   micro-batches flowing through the stages; the JSON
//                                   adds "pipeline", "bubble_fraction" (measured from a
//                                   traced step) and "bubble_fraction_theory";
//   --cluster local:ps=P,worker=W | FILE   synchronous data parallelism: a tower per
//                                   worker task, the variables over the ps tasks, one
//                                   graph driven from worker 0's session (--batch is
//                                   each tower's windows); the JSON adds "replication":
//                                   "in-graph", "towers" and "ps_tasks";
//   --trace FILE                    a Chrome trace of the third training step.
#ifndef ACTORFLOW_TOOLS_TRAIN_CHAR_LM_COMMAND_H_
#define ACTORFLOW_TOOLS_TRAIN_CHAR_LM_COMMAND_H_

#include <ostream>

#include "graph/status.h"
#include "tools/cli/cli_common.h"
#include "tools/train/train_command.h"

namespace actorflow {
namespace cli {

// What can be judged without reading the text: InvalidArgument naming the flag.
Status CheckCharLmFlags(const TrainCommandOptions& options);

// Trains; the result goes to `out`, progress to `progress`.
Status TrainCharLmCommand(const TrainCommandOptions& options, std::ostream& out,
                          std::ostream& progress);

// `actorflow sample --checkpoint-dir DIR [--length 200] [--seed S] [--prime TEXT]
// [--temperature 1]`: prints the prime and the text the model generates after it.
Subcommand AddSampleSubcommand(CLI::App* parent);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TRAIN_CHAR_LM_COMMAND_H_
