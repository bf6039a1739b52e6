// Between-graph data-parallel training of the DNN classifier (TensorFlow 1.x's
// between-graph replication with a SyncReplicasOptimizer or plain async SGD): each
// worker runs its own driver with its own local graph (training/distributed/worker_model.h) and
// talks to the parameter servers only through a ParameterClient
// (kernels/parameter_client.h):
//
//   snapshot = Pull()
//   loop: gradients = local graph(snapshot, my next batch);
//         snapshot = PushAndPull(snapshot, gradients)   (one round trip: the shards
//         answer the push with their values; a straggler's delay pulls afresh)
//
// Worker 0 is the chief: it initializes the variables on the parameter servers with
// the seeded initial values (the same DNNClassifier starts from), or with the latest
// checkpoint of model_dir, while the others' first pulls wait for it; at the end it
// evaluates the final parameters and writes the checkpoint. When the ps tasks already
// hold the variables (a restarted chief, or an earlier run against the same ps
// tasks), the chief keeps them and training goes on from their global step; a sync
// run whose target global step (below) was reached already ends at once.
//
// Data: worker i of W walks a disjoint 1/W of every epoch (training/data/data_shard.h), so
// that an epoch is one pass over the training set for all workers together. Each
// worker runs S = StepsPerEpoch(N, W, batch) steps per epoch.
//   async, ssp: every worker pushes exactly epochs * S gradients.
//   sync: the workers go on until the global step reaches
//         ceil(epochs * S * W / replicas_to_aggregate): the updates whose applied
//         gradients cover epochs passes over the data. With replicas_to_aggregate = W
//         every worker pushes exactly epochs * S gradients in lock step; with fewer
//         (backup workers) the slowest pushes of each version are dropped as stale,
//         and the run still ends once the target is reached.
//
// Elastic (options.ps.elastic, sync only): workers join and leave while the run goes
// on. A worker checks that the ps hold its model (names and shapes), registers, and
// trains the global batches its rank in each version's membership gives it
// (training/data/data_shard.h's ElasticBatches) until the gradients applied cover
// `epochs` passes (epochs * ceil(N / batch) batches). A push answered "training
// paused" (fewer live workers than min_workers) is reported through progress and
// retried after a fresh pull. No restart, no checkpoint: a joiner pulls the current
// variables. A ps task that goes down (Unavailable) makes the driver fail over to
// the standby shards (ParameterClient::FailOver), or to empty replacements that the
// chief restores from its last coordinated checkpoint (checkpoint_every) while the
// others' pulls wait for it, and raise the global step to the highest any shard
// reached, so that it stays monotone. Nothing to fail over to: the error ends the run.
//
// Stopping: WorkerDriver::Stop ends a driver at its next step boundary (waking an
// injected delay at once); its Run then reports Cancelled. A stopped worker is what a
// lost worker looks like to the rest: DataParallelJob drops its client, so the
// shards see it go.
//
// Thread safety: a WorkerDriver runs on one thread; Stop may be called from any.
// DataParallelJob::Run runs on one thread; StopWorker may be called from any,
// progress callbacks included.
#ifndef ACTORFLOW_TRAINING_DISTRIBUTED_DATA_PARALLEL_H_
#define ACTORFLOW_TRAINING_DISTRIBUTED_DATA_PARALLEL_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/parameter_client.h"
#include "training/data/data_shard.h"
#include "training/estimators/dnn_classifier.h"
#include "training/estimators/model_spec.h"
#include "training/distributed/worker_model.h"

namespace actorflow {

// A labelled data set held in memory.
struct LabeledData {
  Tensor features;  // float32 [N, F]
  Tensor labels;    // int32 [N], each in [0, n_classes)
};

struct DataParallelOptions {
  DNNModelSpec spec;
  uint64_t seed = 1;         // the initial weights and the per-epoch shuffles
  int64_t batch_size = 32;   // rows per worker per step
  int64_t epochs = 1;        // passes over the training set, all workers together
  // ps.total_replicas is the number of workers W; ps.replicas_to_aggregate (kSync)
  // at most W; the optimizer and learning rate are applied on the shards.
  ParameterServerOptions ps;
  // Each worker's local graph (e.g. NewSession with target "").
  SessionFactory session_factory;
  // Bounds every pull, push and local step (ms, > 0). The first pull of a non-chief
  // worker waits this long for the chief's initialization.
  int64_t timeout_ms = 30000;
  // Chief: at the end, checkpoint + model.json here; at the start, resume from its
  // latest checkpoint when it has one (the model's variables and the global step;
  // the optimizer's slots live on the ps and start afresh). Empty: none.
  std::string model_dir;
  // Elastic: the chief's coordinated checkpoint into model_dir every N global steps
  // (0: none), from which a lost shard without a standby is restored.
  int64_t checkpoint_every = 0;
};

// OK when every label of `data` is int32 in [0, n_classes); InvalidArgument naming
// `what`, the row and the label otherwise.
Status CheckLabelRange(const LabeledData& data, int64_t n_classes, const std::string& what);

// InvalidArgument naming the culprit: W < 1, replicas_to_aggregate outside [1, W]
// in sync mode, a negative staleness bound, batch size or epochs < 1, timeout <= 0,
// a model spec ValidateModelSpec rejects, a missing session factory.
Status ValidateDataParallelOptions(const DataParallelOptions& options);

// Gradients each worker pushes per run in async/ssp mode, and the global step that
// ends a sync run (see the top of this file).
int64_t PlannedStepsPerWorker(const DataParallelOptions& options, int64_t num_rows);
int64_t SyncTargetGlobalStep(const DataParallelOptions& options, int64_t num_rows);

// After each push, on the worker's thread.
struct WorkerProgress {
  int worker = 0;
  int64_t step = 0;           // pushes so far, this one included (steps_done too)
  int64_t planned_steps = 0;  // async/ssp: exact; sync: the share of the target
  int64_t epoch = 0;          // of the batch (0-based)
  double loss = 0.0;          // the batch's loss at the pulled parameters
  int64_t global_step = 0;    // after the push, as the shards report it
  bool applied = true;
  int64_t staleness = 0;
  // Elastic sync only: the members of the version the push joined, the membership
  // epoch, the gradients its update averaged, the global batch index this worker
  // trained and the batches the run covers; `paused` is set (and the rest is as of
  // the last push) while the shards wait for --min-workers.
  std::vector<int> members;
  int64_t membership_epoch = 0;
  int aggregated = 0;
  int64_t batch_index = 0;
  int64_t total_batches = 0;
  std::string paused;
  // Elastic: set (once) when the shards of a lost ps task switched to their standbys.
  std::string failover;
};
using WorkerProgressFn = std::function<void(const WorkerProgress&)>;

// The chief's evaluation after one epoch (WorkerOptions::evaluate_each_epoch).
struct EpochEvaluation {
  int64_t epoch = 0;              // epochs done, counted from 1
  EvalResult eval;                // at the values the epoch's last push came back with
  double training_seconds = 0.0;  // since Run started, these evaluations excluded
};

struct WorkerReport {
  int worker = 0;
  int64_t steps = 0;          // gradients pushed
  int64_t applied = 0;
  int64_t dropped_stale = 0;
  double seconds = 0.0;       // wall time of Run
  double delay_seconds = 0.0; // spent in injected delays
  double last_loss = 0.0;
  int64_t global_step = 0;    // the last one seen
  double longest_push_seconds = 0.0;  // the longest push (and pull) round trip
  std::vector<EpochEvaluation> epochs;  // the chief's, when asked (WorkerOptions)
  int ps_failovers = 0;  // elastic: times lost shards switched (standby or replacement)
  // Elastic chief: versions between the checkpoint a lost shard was restored from
  // and the global step training went on from.
  int64_t updates_lost = 0;
  Status status;              // OK; Cancelled when stopped; else the error that ended it
};

struct WorkerOptions {
  int worker = 0;             // 0 = chief
  WorkerProgressFn progress;  // optional; must be thread-safe when shared
  // Straggler injection: after each step, a timed wait (woken by Stop) of
  // delay_factor x the worker's step time (its shortest step so far, the first one
  // excepted: pull, compute and push) plus delay_ms.
  double delay_factor = 0.0;
  int64_t delay_ms = 0;
  // Pushes this worker made in earlier runs of the same training (a supervisor
  // restarting its driver): the data goes on after those batches, and an async/SSP
  // driver pushes only the rest of its share.
  int64_t steps_done = 0;
  // Chief (worker 0) only, when set: after the push that ends each of its epochs
  // (every StepsPerEpoch pushes), evaluates the values that push came back with on
  // this data, which must outlive Run (WorkerReport::epochs). The other sync workers
  // wait for the chief meanwhile. Not for elastic training.
  const LabeledData* evaluate_each_epoch = nullptr;
};

class WorkerDriver {
 public:
  // `client` is used by Run only and must outlive it. Errors:
  // ValidateDataParallelOptions', the data's (ShardedBatches::Create), a label outside
  // [0, n_classes) (naming its row), WorkerModel::Create's.
  static StatusOr<std::unique_ptr<WorkerDriver>> Create(const DataParallelOptions& options,
                                                        const WorkerOptions& worker_options,
                                                        const LabeledData& train,
                                                        ParameterClient* client);
  ~WorkerDriver();

  // Registers, (chief) initializes, trains; see the top of this file. The report's
  // status says how it ended; errors are prefixed with "worker <i>: ".
  WorkerReport Run();

  // Ends Run at its next step boundary (a push in flight finishes first).
  void Stop();

  // The chief's global step offset (the resumed checkpoint's step; 0 otherwise),
  // known after Run initialized.
  int64_t global_step_offset() const { return global_step_offset_; }
  WorkerModel* model() { return model_.get(); }

 private:
  WorkerDriver() = default;
  Status RunLoop(WorkerReport* report);
  // Elastic sync (options.ps.elastic): see training/distributed/data_parallel_elastic.cc.
  Status RunElasticLoop(WorkerReport* report);
  // Elastic: OK when the variables on the ps have this model's names and shapes;
  // else InvalidArgument naming the first one that differs.
  Status CheckSameModel(const ParameterSnapshot& snapshot);
  Status InitializeAsChief();
  // Evaluates `values` (after `epochs_done` epochs) on
  // WorkerOptions::evaluate_each_epoch into report->epochs.
  Status EvaluateEpoch(const ParameterSnapshot& values, int64_t epochs_done,
                       WorkerReport* report);
  // Waits `seconds` unless stopped first; returns false when stopped.
  bool Delay(double seconds);
  bool stopped();

  DataParallelOptions options_;
  WorkerOptions worker_options_;
  ParameterClient* client_ = nullptr;
  std::unique_ptr<ShardedBatches> batches_;
  std::unique_ptr<ElasticBatches> elastic_batches_;  // elastic only
  std::unique_ptr<WorkerModel> model_;
  int64_t num_rows_ = 0;
  int64_t global_step_offset_ = 0;
  // Run's start and the time its epoch evaluations took (EvaluateEpoch).
  std::chrono::steady_clock::time_point run_started_;
  std::chrono::steady_clock::duration evaluating_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
};

struct DataParallelResult {
  EvalResult eval;            // at the final parameters; global_step includes a resume offset
  ParameterStats stats;       // from the shards
  std::vector<WorkerReport> workers;
  // Stats' workers_lost, plus workers whose run was stopped or failed.
  std::vector<int> workers_lost;
  double seconds = 0.0;       // training and evaluation
  std::string checkpoint;     // the path prefix written, when model_dir is set
};

// Evaluates the parameters `client` pulls on `test`, writes the checkpoint when
// options.model_dir is set, and fetches the shards' stats: what the chief does at the
// end (`model` from a WorkerDriver, or any WorkerModel of the same spec).
StatusOr<DataParallelResult> FinishDataParallel(const DataParallelOptions& options,
                                                ParameterClient* client, WorkerModel* model,
                                                const LabeledData& test,
                                                int64_t global_step_offset);

// One worker of a cluster, in this process (`actorflow train --cluster FILE --job
// worker --task I`): WorkerDriver::Run then FinishDataParallel (every worker
// evaluates the final parameters it pulls; only the chief checkpoints). The report's
// error, if any, is returned.
StatusOr<DataParallelResult> RunDataParallelWorker(const DataParallelOptions& options,
                                                   const WorkerOptions& worker_options,
                                                   ParameterClient* client,
                                                   const LabeledData& train,
                                                   const LabeledData& test);

// Opens worker `worker`'s connection to the parameter servers.
using ParameterClientFactory =
    std::function<StatusOr<std::unique_ptr<ParameterClient>>(int worker)>;

// All W workers of a run on W threads of this process (`actorflow train --cluster
// local:...`, tests).
class DataParallelJob {
 public:
  DataParallelJob(DataParallelOptions options, ParameterClientFactory client_factory,
                  LabeledData train, LabeledData test);
  ~DataParallelJob();

  // Per-worker progress (called from the worker threads) and straggler delays.
  void set_progress(WorkerProgressFn progress) { progress_ = std::move(progress); }
  void set_delay(int worker, double delay_factor, int64_t delay_ms = 0);
  // The chief evaluates on the test data after each of its epochs
  // (WorkerOptions::evaluate_each_epoch; the result's workers[0].epochs).
  void set_evaluate_each_epoch(bool evaluate) { evaluate_each_epoch_ = evaluate; }

  // Runs every worker to its end, then FinishDataParallel through the chief's client
  // (or, if the chief was lost, the first remaining worker's). Fails only when no
  // worker finished, or when the finish fails; a lost worker shows in the result.
  StatusOr<DataParallelResult> Run();

  // Stops worker `worker` as if it died: its driver ends, its client is dropped.
  void StopWorker(int worker);

 private:
  DataParallelOptions options_;
  ParameterClientFactory client_factory_;
  LabeledData train_;
  LabeledData test_;
  WorkerProgressFn progress_;
  std::map<int, std::pair<double, int64_t>> delays_;
  bool evaluate_each_epoch_ = false;
  std::mutex mu_;
  std::vector<WorkerDriver*> drivers_;  // guarded by mu_; null while not running
  std::vector<bool> stop_requested_;    // guarded by mu_
};

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DISTRIBUTED_DATA_PARALLEL_H_
