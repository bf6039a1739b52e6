#include "actors/trainer/sim_trainer.h"

#include <cblas.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "actors/sim/simulated_cluster.h"
#include "actors/trainer/cluster_trainer.h"
#include "training/distributed/allreduce_trainer.h"
#include "training/distributed/dnn_workload.h"
#include "training/distributed/in_graph_trainer.h"

namespace actorflow {
namespace {

// The variables' bytes, for the simulation's memory estimate.
int64_t ModelBytes(const std::map<std::string, Tensor>& values) {
  int64_t bytes = 0;
  for (const auto& [name, value] : values) bytes += static_cast<int64_t>(value.TotalBytes());
  return bytes;
}

SimTrainingOptions SimTrainingOptionsFor(const TrainerOptions& options, const TrainerPlan& plan,
                                         int64_t steps, TrainingWorkload* workload) {
  const TrainerSimulation& sim = options.cluster.simulation;
  SimTrainingOptions training;
  training.workload = workload;
  training.ps = plan.data_parallel.ps;
  training.steps = steps;
  training.timeout_ms = options.timeout_ms;
  training.eval_every = sim.eval_every;
  training.checkpoint_every = options.recovery.checkpoint_every;
  training.target_accuracy = sim.target_accuracy;
  training.stop_at_target = sim.stop_at_target;
  training.max_virtual_seconds = sim.max_virtual_seconds;
  training.compute.device_gflops = sim.device_gflops;
  training.compute.step_us = sim.step_us;
  training.compute.stragglers = sim.stragglers;
  training.trace = sim.trace;
  return training;
}

// The trainer's result fields from the simulated run's report.
void FillResult(const SimTrainingReport& report, TrainerResult* result) {
  result->accuracy = report.final_eval.accuracy;
  result->loss = report.final_eval.loss;
  result->global_step = report.global_step;
  result->updates_applied = report.updates_applied;
  result->dropped_stale = report.dropped_stale;
  for (size_t w = 0; w < report.workers.size(); ++w) {
    if (report.workers[w].killed > 0) result->workers_lost.push_back(static_cast<int>(w));
  }
}

// The ps policies: a worker driver per worker task (actors/sim/sim_training.h).
StatusOr<TrainerResult> TrainWithPsOnSimulatedCluster(const TrainerOptions& options,
                                                      SimulatedCluster& cluster,
                                                      const TrainerPlan& plan,
                                                      TrainingWorkload* workload,
                                                      SimulatedTrainerRun* run) {
  run->steps_per_worker = options.max_steps > 0
                              ? options.max_steps
                              : PlannedStepsPerWorker(plan.data_parallel, plan.train_rows);
  AF_ASSIGN_OR_RETURN(run->report, cluster.TrainDataParallel(SimTrainingOptionsFor(
                                       options, plan, run->steps_per_worker, workload)));
  TrainerResult result;
  FillResult(run->report, &result);
  return result;
}

// Carries out the plan's kill and restart entries due at `global_step`.
Status ApplyTaskFaults(SimulatedCluster& cluster, const FaultPlan& plan, int64_t global_step,
                       int64_t* workers_lost) {
  for (const Fault& f : plan.faults) {
    if (f.at_step != global_step) continue;
    if (f.action == Fault::Action::kKill) {
      AF_RETURN_IF_ERROR(cluster.KillTask(f.task));
      if (f.task.job == "worker") ++*workers_lost;
    } else if (f.action == Fault::Action::kRestart) {
      AF_RETURN_IF_ERROR(cluster.RestartTask(f.task));
    }
  }
  return Status::OK();
}

// kInGraph: one replicated graph (a tower per worker task, the variables on the ps
// tasks) driven from worker 0; the plan's kills and restarts act at their global
// step, and a step that loses a task ends training with an error naming it.
StatusOr<TrainerResult> TrainInGraphOnSimulatedCluster(const TrainerOptions& options,
                                                       SimulatedCluster& cluster,
                                                       const TrainerPlan& plan,
                                                       const LabeledData& train,
                                                       const LabeledData& test,
                                                       SimulatedTrainerRun* run) {
  const FaultPlan& faults = options.cluster.simulation.faults;
  int64_t workers_lost = 0;
  Status faults_applied = ApplyTaskFaults(cluster, faults, 0, &workers_lost);
  TrainerOptions with_faults = options;
  with_faults.progress = [&](const WorkerProgress& p) {
    if (faults_applied.ok()) {
      faults_applied = ApplyTaskFaults(cluster, faults, p.global_step, &workers_lost);
    }
    if (options.progress) options.progress(p);
  };
  SimulatedCluster* raw = &cluster;
  const SessionFactory chief = [raw](const Graph* graph) -> StatusOr<std::unique_ptr<Session>> {
    return raw->NewSession({"worker", 0}, graph);
  };
  StatusOr<TrainerResult> trained = RunInGraphTrainer(with_faults, plan, chief, train, test);
  AF_RETURN_IF_ERROR(faults_applied);
  if (!trained.ok()) {
    return trained.status().WithContext("simulated training (virtual time " +
                                        std::to_string(cluster.VirtualSeconds()) + " s, " +
                                        std::to_string(workers_lost) + " worker(s) lost)");
  }
  run->steps_per_worker = trained->in_graph.train.steps;
  SimTrainingReport& report = run->report;
  report.mode = "sync";
  report.global_step = trained->global_step;
  report.updates_applied = trained->in_graph.train.steps;
  report.workers_lost = workers_lost;
  report.final_eval.accuracy = trained->accuracy;
  report.final_eval.loss = trained->loss;
  report.parameters = trained->in_graph.parameters;
  report.weights_hash = HashParameters(report.parameters);
  return trained;
}

}  // namespace

StatusOr<TrainerResult> TrainOnSimulatedCluster(const TrainerOptions& options,
                                                const LabeledData& train, const LabeledData& test) {
  const auto wall_start = std::chrono::steady_clock::now();
  // One thread runs the simulation; OpenBLAS on one thread too, so that a matrix
  // product sums in the same order on every host, whatever its core count.
  if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) openblas_set_num_threads(1);
  const TrainerSimulation& sim = options.cluster.simulation;
  const TrainingPolicyKind policy = options.policy.kind;
  TrainerPlan plan;
  AF_ASSIGN_OR_RETURN(plan.cluster, sim.shape.ToClusterSpec());
  AF_ASSIGN_OR_RETURN(plan.workers, TrainerWorkers(options));
  plan.train_rows = train.features.dim(0);
  plan.data_parallel = DataParallelOptionsFor(options, plan.workers, plan.train_rows);
  if (policy == TrainingPolicyKind::kAllReduce) {
    // Only the plan's devices and model are used: the replicas run on the cluster's
    // sessions (RunTogether), not through factories.
    AF_ASSIGN_OR_RETURN(plan.allreduce,
                        AllReduceOptionsFor(options, std::vector<SessionFactory>(plan.workers)));
  }
  if (policy == TrainingPolicyKind::kInGraph) {
    plan.in_graph = InGraphReplicationFor(options, plan.workers, plan.cluster.num_tasks("ps"));
  }
  // The ps policies train this workload; every policy sizes the simulation by its
  // initial values (the memory estimate).
  DNNWorkloadOptions workload_options;
  workload_options.spec = options.model;
  workload_options.seed = options.seed;
  workload_options.batch_size = options.batch_size;
  workload_options.num_workers = plan.workers;
  workload_options.train = train;
  workload_options.test = test;
  AF_ASSIGN_OR_RETURN(std::unique_ptr<TrainingWorkload> workload, NewDNNWorkload(workload_options));
  AF_ASSIGN_OR_RETURN(auto initial, workload->InitialValues());

  SimulatedCluster::Options cluster_options;
  cluster_options.shape = sim.shape;
  cluster_options.faults = sim.faults;
  cluster_options.link = sim.link;
  cluster_options.seed = options.seed;
  cluster_options.model_bytes = ModelBytes(initial);
  if (options.on_start) AF_RETURN_IF_ERROR(options.on_start(plan));
  AF_ASSIGN_OR_RETURN(std::unique_ptr<SimulatedCluster> cluster,
                      SimulatedCluster::Start(cluster_options));
  auto run = std::make_shared<SimulatedTrainerRun>();
  StatusOr<TrainerResult> result =
      policy == TrainingPolicyKind::kAllReduce
          ? TrainAllReduceOnSimulatedCluster(options, *cluster, plan, train, test, run.get())
      : policy == TrainingPolicyKind::kInGraph
          ? TrainInGraphOnSimulatedCluster(options, *cluster, plan, train, test, run.get())
          : TrainWithPsOnSimulatedCluster(options, *cluster, plan, workload.get(), run.get());
  AF_RETURN_IF_ERROR(result.status());
  const EventLog& log = cluster->event_log();
  run->event_log_hash = log.Hash();
  run->messages = log.count();
  run->dropped = log.Count(SimEvent::Kind::kDropped);
  // The ps run measures its own; the others end with the cluster's clock.
  if (run->report.virtual_seconds == 0) run->report.virtual_seconds = cluster->VirtualSeconds();
  result->simulation = std::move(run);
  result->plan = std::move(plan);
  result->seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

Status SimulatedRunVerdict(const SimulatedTrainerRun& run) {
  const SimTrainingReport& report = run.report;
  if (!run.failure.ok()) return run.failure;
  if (report.hung) return DeadlineExceeded("the simulated run hung: " + report.hang);
  if (report.out_of_time) {
    return DeadlineExceeded("the simulated run was still going after its max_virtual_seconds "
                            "(--max-virtual-seconds), at global step " +
                            std::to_string(report.global_step));
  }
  std::string lost;
  for (size_t w = 0; w < report.workers.size(); ++w) {
    if (report.workers[w].killed > 0) lost += " /job:worker/task:" + std::to_string(w);
  }
  for (size_t w = 0; w < report.workers.size(); ++w) {
    const SimWorkerCounts& c = report.workers[w];
    if (c.status.empty()) continue;
    return Aborted("simulated training failed: /job:worker/task:" + std::to_string(w) + ": " +
                   c.status + " (virtual time " + std::to_string(report.virtual_seconds) + " s, " +
                   std::to_string(report.workers_lost) + " worker(s) lost:" + lost + ")");
  }
  if (report.invariant_violations() > 0) {
    std::string first;
    for (const SimInvariantResult& r : report.invariants) {
      if (!r.violations.empty()) {
        first = r.name + ": " + r.violations.front();
        break;
      }
    }
    return Internal(std::to_string(report.invariant_violations()) +
                    " invariant violations, the first: " + first);
  }
  return Status::OK();
}

}  // namespace actorflow
