// All-reduce data-parallel training of the DNN classifier's models (mlp, cnn, rnn:
// training/estimators/dnn_model.h), between-graph and without parameter servers:
// `actorflow train --cluster local:worker=W --mode allreduce`'s trainer.
//
// Worker r (one thread each here) builds the whole model on its member device
// (AllReduceTrainingOptions::devices[r]), wrapped in an AllReduceOptimizer over the
// group of all members, and opens its session with session_factories[r] (a session
// on the master of the task that owns that device). It runs the initializers, then
// BroadcastGlobalVariables from worker 0 (the chief), then its steps: each epoch
// shuffles the training rows (the same permutation on every worker, from the seed
// and the epoch) and worker r takes rows r, r+W, r+2W, ... of it, batch_size at a
// time; every worker runs the same number of steps (a step is an all-reduce every
// member must join; the run ends at steps_per_epoch(W) × epochs global steps). At
// the end the chief evaluates on the test rows, and the trainable variables of
// every member are compared byte for byte.
//
// Thread safety: Train runs the workers on threads of its own and returns when all
// have ended; the progress callback is called from them, one call at a time.
#ifndef ACTORFLOW_TRAINING_DISTRIBUTED_ALLREDUCE_TRAINING_H_
#define ACTORFLOW_TRAINING_DISTRIBUTED_ALLREDUCE_TRAINING_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/status.h"
#include "kernels/default_learning_rate.h"
#include "training/distributed/data_parallel.h"
#include "training/estimators/dnn_classifier.h"
#include "training/estimators/dnn_model.h"
#include "training/estimators/model_spec.h"

namespace actorflow {

struct AllReduceTrainingOptions {
  DNNModelSpec spec;
  uint64_t seed = 1;        // the initial weights (the chief's) and the shuffles
  int64_t batch_size = 32;  // rows per worker per step
  int64_t epochs = 1;
  std::string optimizer = "sgd";
  double learning_rate = kDefaultLearningRate;
  int64_t bucket_bytes = int64_t{25} << 20;
  std::string algorithm = "auto";
  // One full device name per worker, in rank order.
  std::vector<std::string> devices;
  // One per worker: opens a session of a graph on the worker's task.
  std::vector<SessionFactory> session_factories;
  // The workers this process runs (empty: all of them). The others run the same
  // training in other processes (one worker per process of a cluster file): their
  // factories are never called, the run cannot be elastic, and the result speaks of
  // this process's replicas only.
  std::vector<int> local_workers;
  int64_t timeout_ms = 0;  // bounds every step (0: none)
  // Elastic (AllReduceMembership): a worker whose task is lost leaves, the others go
  // on in a new membership epoch without it (at least min_workers of them), and it
  // joins again once its task answers (polled every rejoin_poll_ms, for at most
  // rejoin_timeout_ms), taking the chief's variables. Without it a lost worker ends
  // the run with its error.
  bool elastic = false;
  int min_workers = 1;
  int64_t rejoin_poll_ms = 100;
  int64_t rejoin_timeout_ms = 60000;
  // One line per membership change ("membership epoch 1: workers 0, 1 (lost 2)").
  std::function<void(const std::string& line)> log;
  // Called after each of a worker's steps (worker, step, planned steps, loss).
  std::function<void(int worker, int64_t step, int64_t planned, double loss)> progress;
};

struct AllReduceWorkerReport {
  int worker = 0;
  int64_t steps = 0;
  double seconds = 0.0;
  Status status;
};

struct AllReduceTrainingResult {
  EvalResult eval;  // the chief's replica on the test rows
  double seconds = 0.0;
  std::vector<AllReduceWorkerReport> workers;
  int64_t buckets = 0;             // all-reduces per step
  bool replicas_identical = false; // every trainable variable, byte for byte (local ones)
  // FNV-1a over the first local replica's trainable variables (name order as
  // built): replicas in other processes compare by it.
  std::string weights_hash;
  // Elastic runs: the membership epochs, the losses and joins, the last members.
  int64_t membership_epochs = 1;
  int64_t workers_lost = 0;
  int64_t workers_joined = 0;
  std::vector<int> final_members;
};

// Worker `worker`'s replica graph for a membership epoch whose members are
// `members` (worker indices, ascending) and whose broadcast root is rank `root`:
// the model on options.devices[worker], "train" (AllReduceOptimizer over the
// members' devices, group "allreduce_training/epoch<epoch>"), "broadcast"
// (BroadcastGlobalVariables from `root`), "init" and "global_step". What
// TrainWithAllReduce runs, for drivers that run the replicas themselves (the
// simulated cluster's).
struct AllReduceReplicaGraph {
  std::shared_ptr<Graph> graph;
  DNNModel model;
  std::vector<std::string> variables;  // the trainable variables' names
  int64_t buckets = 0;                 // all-reduces per step
};
StatusOr<AllReduceReplicaGraph> BuildAllReduceReplicaGraph(const AllReduceTrainingOptions& options,
                                                           int worker,
                                                           const std::vector<int>& members,
                                                           int64_t epoch, int root);

// InvalidArgument for no devices, factories not one per device, batch_size < 1,
// epochs < 1, fewer training rows than workers × batch_size, a local worker out of
// range, or elastic with workers elsewhere; the first worker's
// error otherwise (every worker's is in the report).
StatusOr<AllReduceTrainingResult> TrainWithAllReduce(const AllReduceTrainingOptions& options,
                                                     const LabeledData& train,
                                                     const LabeledData& test);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DISTRIBUTED_ALLREDUCE_TRAINING_H_
