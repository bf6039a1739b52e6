// What the library trainer (training/distributed/trainer.h, run by Train in
// actors/trainer/cluster_trainer.h) trains, where and how: a workload (a model of
// training/estimators/dnn_model.h: the DNN, the cnn, the rnn, the convnets) x a
// cluster (ps tasks started in this process, or one worker of a cluster spec) x a
// policy (sync, async, SSP, elastic sync through ps tasks; all-reduce among the
// workers, without ps tasks; or in-graph replication, one client driving a tower
// per worker). Every field has one default; a program,
// `actorflow train --cluster` included, only fills the fields it cares about.
//
//   TrainerOptions options;
//   options.model = spec;                                  // the workload
//   options.cluster = TrainerCluster::Local(/*ps_tasks=*/1, /*workers=*/2);
//   options.policy.kind = TrainingPolicy::kSync;
//   options.epochs = 30;
//
// ValidateTrainerOptions checks everything that can be judged before a cluster is
// reached; its InvalidArgument names the field ("TrainerOptions.policy.min_workers
// ...").
#ifndef ACTORFLOW_TRAINING_DISTRIBUTED_TRAINER_OPTIONS_H_
#define ACTORFLOW_TRAINING_DISTRIBUTED_TRAINER_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "actors/sim/fault_injector.h"
#include "actors/sim/fault_plan.h"
#include "actors/sim/sim_cluster_spec.h"
#include "actors/sim/stragglers.h"
#include "graph/status.h"
#include "kernels/default_learning_rate.h"
#include "kernels/parameter_client.h"
#include "kernels/session.h"
#include "placement/cluster_spec.h"
#include "training/distributed/allreduce_training.h"
#include "training/distributed/data_parallel.h"
#include "training/distributed/in_graph_replication.h"
#include "training/estimators/model_spec.h"

namespace actorflow {

// How the workers' gradients become updates: on the ps tasks
// (kernels/parameter_client.h's UpdateMode; kElastic is sync with workers joining
// and leaving, training/distributed/data_parallel.h), or, for kAllReduce, on every
// worker's own replica after an all-reduce of the gradients among the workers
// (training/distributed/allreduce_training.h; no ps tasks: TrainerCluster::Local(0,
// W) or a spec whose worker tasks this process and its peers serve themselves).
// kInGraph is in-graph replication (training/distributed/in_graph_classifier.h):
// this process is the one client; its graph has a tower per worker and the
// variables on the ps tasks, and a step is one Session::Run over every tower (an
// update averages every tower's batch). Its cluster: TrainerCluster::Local(P, W)
// (P >= 1: servers started here; P = 0: W towers on CPU devices of an in-process
// session, the variables on its CPU:0) or a spec whose tasks run `actorflow server`.
enum class TrainingPolicyKind {
  kSync,
  kAsync,
  kStaleSynchronous,
  kElastic,
  kAllReduce,
  kInGraph,
};

// kAllReduce's default bucket: DDP's 25 MiB of gradients per all-reduce.
constexpr int64_t kDefaultAllReduceBucketBytes = int64_t{25} << 20;

// kElastic: how the rate follows the live workers.
enum class LearningRateScaling {
  kNone,    // the learning rate as given
  kLinear,  // learning_rate * live workers / worker slots (the linear scaling rule)
};

struct TrainingPolicy {
  TrainingPolicyKind kind = TrainingPolicyKind::kSync;
  // kStaleSynchronous: how many pushes a worker may run ahead of the slowest (>= 0).
  int staleness_bound = 0;
  // kSync: gradients averaged per update, in [1, workers]; 0: every worker (the
  // others are backup workers whose late gradients are dropped as stale).
  int replicas_to_aggregate = 0;
  // kElastic: fewer live workers pause training (>= 1); worker slots used (0: every
  // task of the cluster's worker job); the rate's scaling; copies of every
  // parameter shard (1 or 2: a standby on another ps task, switched to when the
  // shard's task dies).
  int min_workers = 1;
  int max_workers = 0;
  LearningRateScaling lr_scaling = LearningRateScaling::kNone;
  int ps_replicas = 1;
  // kAllReduce: bytes of gradients per all-reduce (> 0), and the CPU devices each
  // worker task serves, every one a member of the group (>= 1; members are tasks x
  // members_per_task, member r being CPU r mod N of task r / N).
  int64_t bucket_bytes = kDefaultAllReduceBucketBytes;
  int members_per_task = 1;
};

// A simulated cluster (actors/sim/simulated_cluster.h): every task in this process
// under one deterministic scheduler and a virtual clock, every message across a
// simulated link and the fault plan; the same options give the same run (event
// log, weights, virtual time) on every host. The ps policies run as
// actors/sim/sim_training.h says: a worker driver per worker task speaking the
// shards' protocol, the run's invariants judged at its end. kAllReduce: the
// replicas' steps run together and their weights are compared at every step
// (message faults only); kInGraph: kills and restarts at their global step.
struct TrainerSimulation {
  SimClusterShape shape;  // its ps and worker tasks (ParseSimClusterSpec("sim:ps=1,worker=2"))
  FaultPlan faults;       // message faults on every link; task kills and restarts when due
  LinkModel link;
  // A step's virtual compute time: the model's FLOPs / device_gflops (> 0), or
  // step_us when >= 0; times the stragglers' factor for (worker, step).
  double device_gflops = 10;
  double step_us = -1;
  StragglerSpec stragglers;
  int64_t eval_every = 0;       // evaluate every K global steps (0: at the end only)
  double target_accuracy = 0;   // > 0: note the virtual time an evaluation first reaches it
  bool stop_at_target = false;  // ... and end the run there
  double max_virtual_seconds = 3600;  // > 0
  bool trace = false;           // record the workers' compute and wait spans
};

// Where the workers and the ps tasks run.
struct TrainerCluster {
  enum class Kind {
    kLocal,  // ps tasks started in this process (real servers on 127.0.0.1), the
             // workers on threads of this process
    kSpec,   // this process is worker `task` of `job` in `spec`; the ps tasks of job
             // "ps" run elsewhere (`actorflow server --cluster FILE --job ps --task J`)
             // (kAllReduce: this process serves its task itself, its peers theirs;
             // a "ps" job of the spec is not used. kInGraph: every task runs
             // elsewhere; `task` is the worker whose master runs the steps)
    kSimulated,  // `simulation`: every task simulated in this process (every policy
                 // but kElastic; kAllReduce needs no ps task)
  };
  Kind kind = Kind::kLocal;
  int local_ps_tasks = 1;  // kLocal, >= 1 (kAllReduce: 0; kInGraph: >= 0)
  int local_workers = 2;   // kLocal, >= 1 (kAllReduce: worker tasks, each a server here)
  ClusterSpec spec;        // kSpec
  std::string job = "worker";
  int task = -1;           // kSpec: this process's worker index, in [0, tasks of job)
  // How messages name the cluster (e.g. its file); empty: "the cluster spec".
  std::string name;
  TrainerSimulation simulation;  // kSimulated

  static TrainerCluster Local(int ps_tasks, int workers);
  static TrainerCluster Simulated(TrainerSimulation simulation);
  static TrainerCluster OfSpec(ClusterSpec spec, std::string job, int task,
                               std::string name = "");
};

// Supervision of a kSpec worker that is not elastic (training/distributed/recovery.h):
// a lost ps task is reconnected to and (chief) restored from the latest checkpoint.
struct TrainerRecovery {
  int max_restarts = 3;                  // >= 0
  int64_t reconnect_timeout_ms = 30000;  // > 0; also an elastic worker's rejoin budget
  // Chief: a coordinated checkpoint into checkpoint_dir every N global steps (0: only
  // at the end). Needs checkpoint_dir.
  int64_t checkpoint_every = 0;
};

// What the trainer settled on before the first step, given to on_start.
struct TrainerPlan {
  ClusterSpec cluster;   // for kLocal, the servers started in this process
  int workers = 0;       // worker slots W (kElastic: max_workers when set; kAllReduce:
                         // the members, tasks x policy.members_per_task)
  // As every worker here runs it (ps: W, R, rate); not used by kAllReduce.
  DataParallelOptions data_parallel;
  // kAllReduce only: what every member runs (its device in rank order, the members
  // this process runs in local_workers, empty for all of them).
  AllReduceTrainingOptions allreduce;
  // kInGraph only: where the variables and the towers go (workers: the towers).
  InGraphReplication in_graph;
  int64_t train_rows = 0;
};

struct TrainerOptions {
  // The workload: a model of training/estimators/dnn_model.h (model "mlp", "cnn",
  // "rnn", "convnet", "convnet-bn"; split "none").
  DNNModelSpec model;
  TrainerCluster cluster;
  TrainingPolicy policy;
  // The update rule the ps tasks apply ("sgd", "momentum", "adam", "adagrad") and
  // its rate per batch.
  std::string optimizer = "sgd";
  double learning_rate = kDefaultLearningRate;
  // The rate is multiplied by this over each epoch (1: constant), decaying with the
  // shards' version (kAllReduce: must be 1).
  double learning_rate_decay_per_epoch = 1.0;
  // kSync: an update averages R batches, so its rate is R x learning_rate.
  bool scale_learning_rate_with_replicas = false;
  int64_t batch_size = 32;  // rows per worker per step, >= 1
  // kSync: batch_size is the rows of one update instead, split over the R batches
  // it averages (each worker's step reads max(1, batch_size / R) rows), so that
  // the run takes one process's updates at learning_rate as it is (TF1's global
  // batch). The other policies apply each worker's batch alone and ignore it; it
  // excludes scale_learning_rate_with_replicas.
  bool split_batch_over_replicas = false;
  int64_t epochs = 1;       // passes over the training set, all workers together, >= 1
                            // (kInGraph: 0 repeats the set until max_steps)
  int64_t max_steps = 0;    // kInGraph: at most this many steps (0: until the epochs end);
                            // kSimulated: sync, the global step that ends the run,
                            // async/SSP, the pushes of each worker (0: the epochs')
  uint64_t seed = 1;        // the initial weights and the shuffles
  // Bounds every pull, push and local step (ms, > 0; kSimulated: virtual).
  int64_t timeout_ms = 30000;
  // The chief's checkpoint at the end (and where it resumes from); empty: none
  // (kAllReduce: must be empty, its replicas are not checkpointed; kInGraph: the
  // client's model directory, as DNNClassifier's).
  std::string checkpoint_dir;
  TrainerRecovery recovery;
  // Each worker's local session (target "": the actor runtime in this process).
  // kAllReduce, kInGraph: not used (each session is on a task's master; kInGraph
  // on Local(0, W): an in-process session with W CPU devices).
  SessionOptions session_options;
  // The chief evaluates on the test data after each of its epochs
  // (TrainerResult::details.workers' epochs). kLocal and kSpec ps training only.
  bool evaluate_each_epoch = false;

  // Optional callbacks, called on the trainer's threads.
  // After every push of every worker this process runs (thread-safe when W > 1);
  // kInGraph: after every step, as worker 0.
  WorkerProgressFn progress;
  // One line per failure, restore, checkpoint and recovery of a supervised worker
  // (kAllReduce: per membership change).
  std::function<void(const std::string&)> recovery_log;
  // Once the cluster is up and the options checked, before the first step; an error
  // ends the run before it trains.
  std::function<Status(const TrainerPlan&)> on_start;
};

// OK, or InvalidArgument naming the first bad field of `options` (see the comments
// above). Does not read the cluster's job sizes for kSpec (TrainerWorkers does).
Status ValidateTrainerOptions(const TrainerOptions& options);

// The worker slots of `options.cluster`, checked against the job and the policy:
// InvalidArgument when job has no task, task is outside it, the spec has no "ps" job
// (but for kAllReduce), max_workers exceeds the job or the task exceeds max_workers,
// or replicas_to_aggregate exceeds the workers. kAllReduce: the members, tasks x
// policy.members_per_task.
StatusOr<int> TrainerWorkers(const TrainerOptions& options);

// Whether a worker's step reads a share of batch_size: split_batch_over_replicas
// under kSync (the other policies ignore the field).
bool SplitsBatchOverReplicas(const TrainerOptions& options);

// The data-parallel options every worker runs with `workers` slots on `train_rows`
// rows: the policy's update mode, each worker's batch (split when
// split_batch_over_replicas), the rate (scaled, with its decay) on the shards.
// The session factory is left empty (the cluster side sets it).
DataParallelOptions DataParallelOptionsFor(const TrainerOptions& options, int workers,
                                           int64_t train_rows);

// The shards' rate for `rows` training rows of `batch` rows per worker step:
// `learning_rate` (x ps->replicas_to_aggregate for a sync update when
// `scale_with_replicas`), decaying by `decay_per_epoch` over each epoch. Reads
// ps->mode and ps->replicas_to_aggregate; sets ps->learning_rate and ps->lr_decay.
void SetShardLearningRate(double learning_rate, double decay_per_epoch,
                          bool scale_with_replicas, int64_t batch, int64_t rows,
                          ParameterServerOptions* ps);

// The rate decay that multiplies the rate by `factor_per_epoch` over each epoch of
// `rows` rows, `rows_per_update` per update; none for a factor of 1.
LearningRateDecay DecayPerEpoch(double factor_per_epoch, int64_t rows, int64_t rows_per_update);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DISTRIBUTED_TRAINER_OPTIONS_H_
