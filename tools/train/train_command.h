// `actorflow train`: trains a DNNClassifier (training/estimators/dnn_classifier.h) on a labelled
// CSV file in the actor runtime and evaluates it on a test file.
//
//   actorflow train [--train FILE] [--test FILE] [--label COLUMN] [--hidden 10,10]
//                   [--classes N] [--optimizer sgd|momentum|adam|adagrad] [--lr X]
//                   [--batch N] [--steps N] [--epochs N] [--seed N] [--normalize]
//                   [--dataset fashion-mnist [--data-dir DIR] [--data-format idx|tfrecord]
//                    [--augment]]
//                   [--checkpoint-dir DIR] [--logdir DIR] [--timeout-ms N] [--json]
//                   [--model mlp|cnn|rnn] [--split none|layer|vertical|towers]
//                   [--devices cpu=N[,gpu=M]] [--pipeline M [--schedule gpipe|1f1b]]
//                   [--cluster local:ps=P,worker=W | --cluster FILE --job worker --task I]
//                   [--mode sync|async|ssp:S] [--replicas-to-aggregate N]
//                   [--max-restarts N] [--checkpoint-every N] [--reconnect-timeout-ms N]
//
// --dataset fashion-mnist trains on Fashion-MNIST instead of CSV files
// (tools/train/train_datasets.h), with its own defaults for the flags not given
// (Adam 1e-3, batch 100, 10 epochs; --model convnet|convnet-bn: a dense layer of 1024;
// mlp: 256,128,100). It evaluates the whole test set after every epoch; with --json
// the result adds "accuracy_by_epoch", "seconds_by_epoch" (cumulative training
// seconds, evaluation excluded), "samples_per_second" and "input_wait_fraction" (the
// share of training time spent waiting for the next batch); "accuracy" stays the
// final test accuracy.
// --model cnn|rnn trains the networks of training/estimators/model_parallel.h instead of the
// DNN (mlp, the default); --split layer|vertical|towers cuts the network over the
// local --devices (e.g. --devices cpu=2), one part per device. A cnn or rnn has its
// own defaults for --hidden, --optimizer, --lr, --batch and --epochs (those not
// given; see ApplyModelDefaults in train_flags.h). With --json the result adds
// "model", "split", "devices" (the devices the parts ran on) and
// "cross_device_bytes_per_step" (measured on the first step). --split needs a local
// session: with --cluster only --model mlp --split none is taken for now.
// --pipeline M (with --model mlp --split layer only) cuts each batch into M
// micro-batches that flow through the layer split's stages (training/estimators/pipeline.h) in
// --schedule order (default 1f1b); --batch must be a multiple of M. Checkpoints,
// evaluation and predict are as without it. With --json the result adds "pipeline",
// "schedule", "bubble_fraction" (the devices' mean idle share of one fully traced
// steady-state step) and "bubble_fraction_theory" ((K-1)/(M+K-1) for K stages).
//
// With --cluster it trains the same model data-parallel on a cluster of ps and
// worker tasks: see tools/train/train_cluster.h. The data and model flags are shared with
// `actorflow tune`: tools/train/train_data.h loads the files, tools/train/train_flags.h checks
// the flags and builds the model. Without --cluster:
// - With no flags it trains a DNN [10, 10] on the Iris split bundled in
//   examples/data and ends with the test accuracy. The bundled files are found under
//   `bazel run` ($BUILD_WORKSPACE_DIRECTORY, the runfiles) and from the repository
//   root.
// - The label is the --label column (default: the last one), an integer class index;
//   every other column is a float feature. --classes defaults to the training file's
//   largest label + 1.
// - --normalize z-scores each feature with the training file's mean and standard
//   deviation (a constant column is only centred).
// - Training runs --steps batches of --batch rows, reshuffled (with --seed) on every
//   pass; --epochs N runs N whole passes instead (and overrides --steps). The same
//   seed gives the same accuracy bit for bit.
// - --checkpoint-dir DIR saves a checkpoint and model.json there at the end (and
//   resumes from DIR's latest checkpoint when it has one); `actorflow predict
//   --checkpoint-dir DIR` needs nothing else.
// - --logdir DIR writes TensorBoard event files (tools/train/train_summaries.h) under
//   DIR/worker_<task>/: loss, learning_rate, examples_per_sec while training,
//   accuracy at the end. A failure to write them is a warning, never an error.
// - Progress goes to stdout, or to stderr under --json: a bar redrawn in place on a
//   terminal, else a line every ~10% of the steps. The result is the last line of
//   stdout: `test accuracy ...`; with --json stdout is exactly one line, a JSON
//   object with at least "accuracy", "loss" (the mean test cross-entropy),
//   "global_step" and "seconds" (training and evaluation wall time).
// - `--timeout-ms N` (default 30000) is every step's RunOptions::timeout_in_ms.
//
// Errors are one line `actorflow: <Status>` on stderr naming the culprit (the CSV
// file:line:column, the label and its row, the flag); see cli_common.h for the
// exit codes.
#ifndef ACTORFLOW_TOOLS_TRAIN_TRAIN_COMMAND_H_
#define ACTORFLOW_TOOLS_TRAIN_TRAIN_COMMAND_H_

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "graph/status.h"
#include "kernels/default_learning_rate.h"
#include "tools/cli/cli_common.h"

namespace actorflow {
namespace cli {

struct TrainCommandOptions {
  // CSV files; empty: the bundled Iris split. Relative paths go through
  // ResolveUserPath.
  std::string train_path;
  std::string test_path;
  // The label column's name; empty: the last column.
  std::string label;
  // Comma-separated layer sizes, as written on the command line (the cnn's head
  // layers, the rnn's units per recurrent layer).
  std::string hidden = "10,10";
  // The network (training/estimators/model_parallel.h): mlp, cnn or rnn, and how it is split
  // over the --devices: none, layer, vertical or towers. ApplyModelDefaults
  // (train_flags.h) gives a cnn or rnn its own defaults of the flags not given.
  std::string model = "mlp";
  std::string split = "none";
  // > 0: pipelined micro-batches per batch (--pipeline), in the --schedule order
  // (empty: not given, 1f1b).
  int64_t pipeline = 0;
  std::string schedule;
  // 0: the training file's largest label + 1.
  int64_t classes = 0;
  std::string optimizer = "adam";
  double learning_rate = kDefaultLearningRate;
  // --lr-decay: the learning rate is multiplied by this over each epoch, decaying
  // smoothly with the global step (tf.train.exponential_decay); 1 keeps it constant.
  double lr_decay = 1.0;
  // Set by a named dataset's defaults when --lr is not given: its rate is per batch
  // of its default batch. Without --batch, a sync update reads that batch split over
  // the R workers' batches it averages (split_batch_over_replicas: one process's
  // updates); with --batch, each worker reads --batch rows and the update's rate is
  // R times it (scale_lr_with_replicas, the linear scaling rule). --lr given is used
  // as it is, with --batch rows per worker.
  bool split_batch_over_replicas = false;
  bool scale_lr_with_replicas = false;
  int64_t batch = 32;
  // --mode allreduce: gradients per all-reduce bucket, in MiB (PyTorch DDP's 25).
  double bucket_mb = 25;
  int64_t steps = 1000;
  // > 0: passes over the training set (overrides steps).
  int64_t epochs = 0;
  uint64_t seed = 1;
  bool normalize = false;
  // A named dataset instead of --train/--test (tools/train/train_datasets.h), read
  // from data_dir (empty: the dataset's default directory) in data_format: "idx" or
  // "tfrecord". With a dataset, every epoch ends with an evaluation on the test set.
  std::string dataset;
  std::string data_dir;
  // --model word2vec (tools/train/word2vec_command.h): the text file or directory and
  // the model's sizes.
  std::string text_path;
  int64_t vocab_size = 50000;
  int64_t embedding_dim = 128;
  int64_t num_sampled = 64;
  int64_t skip_window = 1;
  // --model char-lstm|char-transformer (tools/train/char_lm_command.h): the window
  // length, the validation characters evaluated (0: all), and the Transformer's shape.
  int64_t seq_len = 64;
  int64_t eval_chars = 65536;
  int64_t width = 128;
  int64_t heads = 4;
  int64_t blocks = 4;
  std::string data_format = "idx";
  // With --data-format tfrecord: a record whose data fails its CRC (or a file cut
  // short) is skipped and counted on stderr instead of failing the run.
  bool skip_corrupt_records = false;
  // Images only: each training image mirrored left-right at random and cut from a
  // 2-pixel zero padding at a random offset (training/data/image_augmentation.h).
  bool augment = false;
  std::string checkpoint_dir;
  // TensorBoard event files go to logdir/worker_<task>/ (empty: none).
  std::string logdir;
  // > 0 (or 0 for any free port, -1: none): a live status page
  // (tools/cli/status_server.h) on 127.0.0.1, or on the task's host for a cluster file,
  // while a --cluster run trains.
  int status_port = -1;
  // Without --cluster: a Chrome trace of one steady-state training step
  // (kernels/chrome_trace.h) is written here (empty: none).
  std::string trace_path;
  int64_t timeout_ms = 30000;
  bool json = false;
  // The local session's devices, "cpu=N[,gpu=M]" (ParseDeviceCounts); empty: one CPU
  // and every GPU found.
  std::string devices;
  // Data-parallel training (tools/train/train_cluster.h). Empty cluster: one process.
  std::string cluster;
  std::string job = "worker";
  int task = -1;  // a cluster file's worker index
  std::string mode = "sync";
  int replicas_to_aggregate = 0;  // 0: every worker
  // A cluster file's worker runs under training/distributed/recovery.h's supervisor: driver
  // restarts after a lost ps task (-1: the default, 3), how long a reconnect or a
  // wait for lost workers may take (-1: 30000 ms), and the chief's coordinated
  // checkpoints into --checkpoint-dir every N global steps (0: only at the end).
  int max_restarts = -1;
  int64_t reconnect_timeout_ms = -1;
  int64_t checkpoint_every = 0;
  // Elastic sync training (a cluster file's workers): workers join and leave while it
  // runs, each update averages the live workers' gradients (lr_scaling "linear":
  // the rate scales with them), fewer than min_workers pause it; max_workers
  // (0: every worker slot of the cluster file) bounds the task indices.
  bool elastic = false;
  int min_workers = 1;
  int max_workers = 0;
  std::string lr_scaling = "none";
  // --elastic: 2 keeps a standby of every parameter shard on another ps task, which
  // the workers switch to when the shard's task dies (no restart).
  int ps_replicas = 1;
};

// Runs the command: the result goes to `out`, progress to `out` too or, under
// --json, to `err` (a bar when `interactive`), an error line to `err`. Returns the
// exit code. Never throws.
int TrainCommand(const TrainCommandOptions& options, std::ostream& out, std::ostream& err,
                 bool interactive);

// Declares `train` on `parent`; the returned main runs TrainCommand on std::cout /
// std::cerr, with a progress bar when the progress stream is a terminal.
Subcommand AddTrainSubcommand(CLI::App* parent);

// How `train --cluster sim:...` trains: `actorflow simulate`'s between-graph run
// with train's flags (tools/simulate_command.h; its report is the --json line). Set
// by the program that links the simulator (tools/actorflow.cc), which depends on
// this library; unset, such a cluster is refused with Unimplemented.
using SimulatedTrainer =
    std::function<Status(const TrainCommandOptions&, std::ostream& out, std::ostream& err)>;
SimulatedTrainer& SimulatedTrainerHook();

// Whether the stream progress goes to (stdout, or stderr under --json) is a terminal.
bool ProgressIsInteractive(const TrainCommandOptions& options);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TRAIN_TRAIN_COMMAND_H_
