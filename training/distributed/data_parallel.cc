#include "training/distributed/data_parallel.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "graph/steady_clock.h"
#include "training/checkpoint/checkpoint.h"

namespace actorflow {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

Status CheckLabelRange(const LabeledData& data, int64_t n_classes, const std::string& what) {
  if (data.labels.dtype() != DType::kInt32) {
    return InvalidArgument(what + " labels are " + data.labels.DebugString() + ", expected int32");
  }
  const int32_t* y = data.labels.data<int32_t>();
  for (int64_t i = 0; i < data.labels.NumElements(); ++i) {
    if (y[i] < 0 || y[i] >= n_classes) {
      return InvalidArgument(what + " row " + std::to_string(i) + ": label " +
                             std::to_string(y[i]) + " is outside [0, " +
                             std::to_string(n_classes) + ")");
    }
  }
  return Status::OK();
}

Status ValidateDataParallelOptions(const DataParallelOptions& options) {
  const ParameterServerOptions& ps = options.ps;
  if (ps.total_replicas < 1) {
    return InvalidArgument("data-parallel training needs at least 1 worker, got " +
                           std::to_string(ps.total_replicas));
  }
  if (ps.mode == UpdateMode::kSync &&
      (ps.replicas_to_aggregate < 1 || ps.replicas_to_aggregate > ps.total_replicas)) {
    return InvalidArgument("replicas to aggregate " + std::to_string(ps.replicas_to_aggregate) +
                           " must be in [1, " + std::to_string(ps.total_replicas) +
                           "]: there are " + std::to_string(ps.total_replicas) + " workers");
  }
  if (ps.elastic && ps.mode != UpdateMode::kSync) {
    return InvalidArgument("elastic training needs --mode sync");
  }
  if (ps.elastic && (ps.min_workers < 1 || ps.min_workers > ps.total_replicas)) {
    return InvalidArgument("--min-workers " + std::to_string(ps.min_workers) + " must be in [1, " +
                           std::to_string(ps.total_replicas) + "]: the cluster has " +
                           std::to_string(ps.total_replicas) + " worker slots");
  }
  if (ps.mode == UpdateMode::kStaleSynchronous && ps.staleness_bound < 0) {
    return InvalidArgument("staleness bound " + std::to_string(ps.staleness_bound) +
                           " must be >= 0");
  }
  if (options.batch_size < 1) {
    return InvalidArgument("batch size " + std::to_string(options.batch_size) + " must be >= 1");
  }
  if (options.epochs < 1) {
    return InvalidArgument("epochs " + std::to_string(options.epochs) + " must be >= 1");
  }
  if (options.timeout_ms <= 0) {
    return InvalidArgument("timeout " + std::to_string(options.timeout_ms) + " ms must be > 0");
  }
  if (!options.session_factory) return InvalidArgument("data-parallel training: no session factory");
  return ValidateModelSpec(options.spec);
}

int64_t PlannedStepsPerWorker(const DataParallelOptions& options, int64_t num_rows) {
  return options.epochs *
         StepsPerEpoch(num_rows, options.ps.total_replicas, options.batch_size);
}

int64_t SyncTargetGlobalStep(const DataParallelOptions& options, int64_t num_rows) {
  const int64_t pushes = PlannedStepsPerWorker(options, num_rows) * options.ps.total_replicas;
  const int64_t r = std::max(1, options.ps.replicas_to_aggregate);
  return (pushes + r - 1) / r;
}

StatusOr<std::unique_ptr<WorkerDriver>> WorkerDriver::Create(const DataParallelOptions& options,
                                                             const WorkerOptions& worker_options,
                                                             const LabeledData& train,
                                                             ParameterClient* client) {
  AF_RETURN_IF_ERROR(ValidateDataParallelOptions(options));
  if (client == nullptr) return InvalidArgument("worker driver: no parameter client");
  if (worker_options.worker < 0 || worker_options.worker >= options.ps.total_replicas) {
    return InvalidArgument("worker " + std::to_string(worker_options.worker) +
                           " is outside [0, " + std::to_string(options.ps.total_replicas) + ")");
  }
  AF_RETURN_IF_ERROR(CheckLabelRange(train, options.spec.n_classes, "training data"));
  std::unique_ptr<WorkerDriver> driver(new WorkerDriver());
  driver->options_ = options;
  driver->worker_options_ = worker_options;
  driver->client_ = client;
  ShardOptions shard;
  shard.batch_size = options.batch_size;
  shard.seed = options.seed;
  shard.worker = worker_options.worker;
  shard.num_workers = options.ps.total_replicas;
  AF_ASSIGN_OR_RETURN(ShardedBatches batches,
                      ShardedBatches::Create(train.features, train.labels, shard));
  driver->batches_ = std::make_unique<ShardedBatches>(std::move(batches));
  driver->batches_->Skip(std::max<int64_t>(worker_options.steps_done, 0));
  if (options.ps.elastic) {
    AF_ASSIGN_OR_RETURN(ElasticBatches elastic,
                        ElasticBatches::Create(train.features, train.labels, options.batch_size,
                                               options.seed));
    driver->elastic_batches_ = std::make_unique<ElasticBatches>(std::move(elastic));
  }
  driver->num_rows_ = train.features.dim(0);
  AF_ASSIGN_OR_RETURN(driver->model_, WorkerModel::Create(options.spec, options.seed,
                                                          options.session_factory,
                                                          options.timeout_ms,
                                                          worker_options.worker));
  return driver;
}

WorkerDriver::~WorkerDriver() = default;

void WorkerDriver::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_ = true;
  cv_.notify_all();
}

bool WorkerDriver::stopped() {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
}

bool WorkerDriver::Delay(double seconds) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return stop_; });
}

Status WorkerDriver::InitializeAsChief() {
  ParameterMap initial;
  const std::string& dir = options_.model_dir;
  if (!dir.empty()) {
    StatusOr<DNNModelSpec> existing = ReadModelSpec(dir);
    if (existing.ok() && *existing != options_.spec) {
      return FailedPrecondition("model directory '" + dir +
                                "' holds another model: use another directory");
    }
    StatusOr<std::string> latest = LatestCheckpoint(dir);
    if (latest.ok()) {
      AF_ASSIGN_OR_RETURN(auto saved, ReadCheckpoint(*latest));
      for (const std::string& name : model_->variable_names()) {
        auto it = saved.find(name);
        if (it == saved.end()) {
          return NotFound("checkpoint " + *latest + " has no variable '" + name + "'");
        }
        initial[name] = it->second;
      }
      AF_ASSIGN_OR_RETURN(global_step_offset_, ReadCheckpointGlobalStep(*latest));
    } else if (latest.status().code() != Code::kNotFound) {
      return latest.status();
    }
  }
  if (initial.empty()) {
    AF_ASSIGN_OR_RETURN(initial, model_->InitialValues());
  }
  Status initialized = client_->Initialize(initial);
  // The ps tasks already hold the model (a restarted chief): keep it, as
  // TensorFlow's Supervisor does, and go on from its global step.
  if (initialized.code() == Code::kAlreadyExists) return Status::OK();
  return initialized;
}

Status WorkerDriver::RunLoop(WorkerReport* report) {
  if (elastic_batches_ != nullptr) return RunElasticLoop(report);
  const int worker = worker_options_.worker;
  AF_RETURN_IF_ERROR(client_->Register(worker));
  if (worker == 0) AF_RETURN_IF_ERROR(InitializeAsChief());
  const bool sync = options_.ps.mode == UpdateMode::kSync;
  const int64_t planned = PlannedStepsPerWorker(options_, num_rows_);
  const int64_t target = SyncTargetGlobalStep(options_, num_rows_);
  const int64_t steps_per_epoch =
      StepsPerEpoch(num_rows_, options_.ps.total_replicas, options_.batch_size);
  double shortest_step = 0.0;
  // The values the previous push came back with (push-and-pull): the next step's
  // snapshot, unless a delay made them old.
  ParameterSnapshot next;
  bool have_next = false;
  while (true) {
    if (stopped()) return Cancelled("stopped after " + std::to_string(report->steps) + " steps");
    if (!sync && worker_options_.steps_done + report->steps >= planned) return Status::OK();
    const Clock::time_point step_start = Clock::now();
    ParameterSnapshot snapshot;
    if (have_next) {
      snapshot = std::move(next);
      have_next = false;
    } else {
      AF_ASSIGN_OR_RETURN(snapshot, client_->Pull(options_.timeout_ms));
    }
    report->global_step = snapshot.global_step;
    if (sync && snapshot.global_step >= target) return Status::OK();
    Batch batch;
    batches_->Next(&batch);
    AF_ASSIGN_OR_RETURN(GradientStep step,
                        model_->ComputeGradients(snapshot.values, batch.features, batch.labels));
    AF_ASSIGN_OR_RETURN(PushResult pushed, client_->PushAndPull(snapshot, step.gradients,
                                                                options_.timeout_ms, &next));
    have_next = true;
    ++report->steps;
    if (pushed.applied) {
      ++report->applied;
    } else {
      ++report->dropped_stale;
    }
    report->last_loss = step.loss;
    report->global_step = pushed.global_step;
    if (worker_options_.progress) {
      WorkerProgress progress;
      progress.worker = worker;
      progress.step = worker_options_.steps_done + report->steps;
      progress.planned_steps = planned;
      progress.epoch = batch.epoch;
      progress.loss = step.loss;
      progress.global_step = pushed.global_step;
      progress.applied = pushed.applied;
      progress.staleness = pushed.staleness;
      worker_options_.progress(progress);
    }
    if (worker == 0 && worker_options_.evaluate_each_epoch != nullptr &&
        (worker_options_.steps_done + report->steps) % steps_per_epoch == 0) {
      AF_RETURN_IF_ERROR(EvaluateEpoch(
          next, (worker_options_.steps_done + report->steps) / steps_per_epoch, report));
    }
    if (sync && pushed.global_step >= target) return Status::OK();
    // The shortest step so far stands for the worker's step time; the first step is
    // left out (it builds the executors, often longer than the whole rest of a small
    // run, so a delay scaled by it would stand the straggler still), and a sync push
    // may wait for the others.
    const double step_seconds = SecondsSince(step_start);
    if (report->steps == 2 || (report->steps > 2 && step_seconds < shortest_step)) {
      shortest_step = step_seconds;
    }
    if (worker_options_.delay_factor > 0 || worker_options_.delay_ms > 0) {
      const double delay = worker_options_.delay_factor * shortest_step +
                           static_cast<double>(worker_options_.delay_ms) / 1000.0;
      const Clock::time_point delay_start = Clock::now();
      Delay(delay);
      report->delay_seconds += SecondsSince(delay_start);
      have_next = false;  // a straggler computes on what it pulls after its delay
    }
  }
}

Status WorkerDriver::EvaluateEpoch(const ParameterSnapshot& values, int64_t epochs_done,
                                   WorkerReport* report) {
  const Clock::time_point now = Clock::now();
  EpochEvaluation epoch;
  epoch.epoch = epochs_done;
  epoch.training_seconds = std::chrono::duration<double>(now - run_started_ - evaluating_).count();
  const LabeledData& test = *worker_options_.evaluate_each_epoch;
  StatusOr<EvalResult> eval =
      model_->Evaluate(values.values, test.features, test.labels, values.global_step);
  evaluating_ += Clock::now() - now;
  if (!eval.ok()) {
    return eval.status().WithContext("evaluation after epoch " + std::to_string(epoch.epoch));
  }
  epoch.eval = *eval;
  report->epochs.push_back(epoch);
  return Status::OK();
}

WorkerReport WorkerDriver::Run() {
  const Clock::time_point start = Clock::now();
  run_started_ = start;
  evaluating_ = Clock::duration::zero();
  WorkerReport report;
  report.worker = worker_options_.worker;
  Status status = RunLoop(&report);
  report.seconds = SecondsSince(start);
  if (!status.ok()) status = status.WithContext("worker " + std::to_string(report.worker));
  report.status = status;
  return report;
}

StatusOr<DataParallelResult> FinishDataParallel(const DataParallelOptions& options,
                                                ParameterClient* client, WorkerModel* model,
                                                const LabeledData& test,
                                                int64_t global_step_offset) {
  AF_RETURN_IF_ERROR(CheckLabelRange(test, options.spec.n_classes, "test data"));
  DataParallelResult result;
  AF_ASSIGN_OR_RETURN(ParameterSnapshot final_values, client->Pull(options.timeout_ms));
  const int64_t global_step = global_step_offset + final_values.global_step;
  AF_ASSIGN_OR_RETURN(result.eval, model->Evaluate(final_values.values, test.features,
                                                   test.labels, global_step));
  if (!options.model_dir.empty()) {
    // A coordinated cut (training/checkpoint/ps_checkpoint.h) at this very global step holds these
    // values already: keep it and add the model description `predict` needs.
    StatusOr<std::string> cut = CheckpointAtStep(options.model_dir, global_step);
    if (cut.ok()) {
      AF_RETURN_IF_ERROR(WriteModelSpec(options.model_dir, options.spec));
      result.checkpoint = *cut;
    } else {
      AF_ASSIGN_OR_RETURN(result.checkpoint, model->SaveCheckpoint(final_values.values,
                                                                   global_step, options.model_dir));
    }
  }
  AF_ASSIGN_OR_RETURN(result.stats, client->Stats(options.timeout_ms));
  result.workers_lost = result.stats.workers_lost;
  return result;
}

StatusOr<DataParallelResult> RunDataParallelWorker(const DataParallelOptions& options,
                                                   const WorkerOptions& worker_options,
                                                   ParameterClient* client,
                                                   const LabeledData& train,
                                                   const LabeledData& test) {
  const Clock::time_point start = Clock::now();
  AF_ASSIGN_OR_RETURN(std::unique_ptr<WorkerDriver> driver,
                      WorkerDriver::Create(options, worker_options, train, client));
  WorkerReport report = driver->Run();
  AF_RETURN_IF_ERROR(report.status);
  AF_ASSIGN_OR_RETURN(DataParallelResult result,
                      FinishDataParallel(options, client, driver->model(), test,
                                         driver->global_step_offset()));
  result.workers.push_back(report);
  result.seconds = SecondsSince(start);
  return result;
}

}  // namespace actorflow
