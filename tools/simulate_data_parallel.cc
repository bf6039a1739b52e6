// `actorflow simulate` with between-graph replication (the default): a worker driver
// per worker task, the shards on the ps tasks (actors/sim/sim_training.h).
#include <cblas.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "actors/sim/simulated_cluster.h"
#include "tools/simulate_command.h"
#include "tools/train/train_data.h"
#include "tools/train/train_flags.h"
#include "training/distributed/dnn_workload.h"

namespace actorflow {
namespace cli {
namespace {

// A Chrome trace of the run in virtual time: one track per worker device.
Status WriteSimTrace(const SimTrainingReport& report, int workers, const std::string& path) {
  nlohmann::json events = nlohmann::json::array();
  for (int w = 0; w < workers; ++w) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", w},
                      {"args", {{"name", "/job:worker/task:" + std::to_string(w) + "/device:CPU:0"}}}});
  }
  for (const SimTraceSpan& span : report.spans) {
    events.push_back({{"name", span.name},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", span.worker},
                      {"ts", span.start_us},
                      {"dur", span.duration_us}});
  }
  std::ofstream file(path);
  if (!file) return InvalidArgument("--trace " + path + ": cannot write the file");
  file << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << "\n";
  if (!file.good()) return Internal("--trace " + path + ": writing failed");
  return Status::OK();
}

}  // namespace

Status SimulateDataParallel(const SimulateCommandOptions& options, std::ostream& out,
                            std::ostream& err) {
  const auto wall_start = std::chrono::steady_clock::now();
  // One thread runs the simulation; OpenBLAS on one thread too, so that a matrix
  // product sums in the same order on every host, whatever its core count (the
  // weights hash is then the same everywhere). OPENBLAS_NUM_THREADS, when set, decides.
  if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) openblas_set_num_threads(1);
  const TrainCommandOptions& o = options.train;
  AF_ASSIGN_OR_RETURN(SimClusterShape shape, ParseSimClusterSpec(options.cluster));
  AF_ASSIGN_OR_RETURN(ClusterSpec spec, shape.ToClusterSpec());
  const int workers = shape.tasks.at("worker");
  AF_ASSIGN_OR_RETURN(TrainingData data, LoadTrainingData(o));
  AF_ASSIGN_OR_RETURN(const int64_t classes, ResolveClasses(data, o.classes));
  AF_ASSIGN_OR_RETURN(DNNClassifierOptions model, ClassifierOptionsFromFlags(o, data, classes));

  SimTrainingOptions training;
  AF_RETURN_IF_ERROR(ParseUpdateMode(options.mode, &training.ps.mode, &training.ps.staleness_bound));
  training.ps.optimizer = o.optimizer;
  training.ps.learning_rate = o.learning_rate;
  training.ps.replicas_to_aggregate =
      options.replicas_to_aggregate > 0 ? options.replicas_to_aggregate : workers;
  if (training.ps.mode == UpdateMode::kSync && training.ps.replicas_to_aggregate > workers) {
    return InvalidArgument("--replicas-to-aggregate " +
                           std::to_string(options.replicas_to_aggregate) + " exceeds the " +
                           std::to_string(workers) + " workers of " + options.cluster);
  }
  SetShardRateSchedule(o, data.train.features.dim(0), &training.ps);
  training.steps = o.steps;
  training.timeout_ms = o.timeout_ms;
  training.eval_every = options.eval_every;
  training.checkpoint_every = o.checkpoint_every;
  training.target_accuracy = options.target_accuracy;
  training.stop_at_target = options.stop_at_target;
  training.max_virtual_seconds = options.max_virtual_seconds;
  training.compute.device_gflops = options.device_gflops;
  training.compute.step_us = options.compute_us;
  AF_ASSIGN_OR_RETURN(training.compute.stragglers,
                      ParseStragglerSpec(options.stragglers, workers));
  training.trace = !options.trace_path.empty();

  DNNWorkloadOptions workload_options;
  workload_options.spec = ModelSpecOf(model);
  workload_options.seed = o.seed;
  workload_options.batch_size = o.batch;
  workload_options.num_workers = workers;
  workload_options.train = {data.train.features, data.train.labels};
  workload_options.test = {data.test.features, data.test.labels};
  AF_ASSIGN_OR_RETURN(std::unique_ptr<TrainingWorkload> workload, NewDNNWorkload(workload_options));
  training.workload = workload.get();

  AF_ASSIGN_OR_RETURN(SimulatedCluster::Options sim,
                      SimulationOptionsFromFlags(options, shape, data.train.features.dim(1),
                                                 classes));
  AF_ASSIGN_OR_RETURN(std::unique_ptr<SimulatedCluster> cluster, SimulatedCluster::Start(sim));
  AF_ASSIGN_OR_RETURN(SimTrainingReport report, cluster->TrainDataParallel(training));
  if (training.trace) AF_RETURN_IF_ERROR(WriteSimTrace(report, workers, ResolveUserPath(options.trace_path)));
  const double wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

  const EventLog& log = cluster->event_log();
  int64_t steps = 0;
  for (const SimWorkerCounts& c : report.workers) steps += c.steps;
  if (!o.json) {
    out << "simulated " << options.cluster << " (" << report.mode << ", "
        << training.ps.replicas_to_aggregate << " of " << workers << " aggregated): global step "
        << report.global_step << " in " << report.virtual_seconds << " virtual s (" << wall_seconds
        << " s wall), " << log.count() << " messages, " << log.Count(SimEvent::Kind::kDropped)
        << " dropped\n"
        << "event log " << log.Hash() << ", weights " << report.weights_hash << ", "
        << report.invariant_violations() << " invariant violations"
        << (report.hung ? ", HUNG: " + report.hang : std::string()) << "\n"
        << "test accuracy " << report.final_eval.accuracy << ", loss " << report.final_eval.loss
        << "\n";
  } else {
    nlohmann::ordered_json j;
    j["accuracy"] = report.final_eval.accuracy;
    j["loss"] = report.final_eval.loss;
    j["global_step"] = report.global_step;
    j["steps"] = steps;
    j["virtual_seconds"] = report.virtual_seconds;
    j["wall_seconds"] = wall_seconds;
    j["messages"] = log.count();
    j["dropped"] = log.Count(SimEvent::Kind::kDropped);
    j["event_log_hash"] = log.Hash();
    j["weights_hash"] = report.weights_hash;
    j["updates_applied"] = report.updates_applied;
    j["dropped_stale"] = report.dropped_stale;
    j["workers_lost"] = report.workers_lost;
    j["invariant_violations"] = report.invariant_violations();
    nlohmann::ordered_json by_name = nlohmann::ordered_json::object();
    nlohmann::json violations = nlohmann::json::array();
    for (const SimInvariantResult& r : report.invariants) {
      by_name[r.name] = r.violations.size();
      for (const std::string& v : r.violations) {
        if (violations.size() < 20) violations.push_back(r.name + ": " + v);
      }
    }
    j["invariants"] = by_name;
    j["violations"] = violations;
    j["hung"] = report.hung;
    j["out_of_time"] = report.out_of_time;
    j["seconds_to_target"] = report.seconds_to_target;
    j["pushes"] = report.pushes;
    j["pushes_failed"] = report.pushes_failed;
    j["gradients_applied"] = report.gradients_applied;
    int64_t taken = 0;
    for (const SimCheckpoint& c : report.checkpoints) {
      if (c.failure.empty() && c.answered == c.shards) ++taken;
    }
    j["checkpoints_taken"] = taken;
    j["checkpoints_failed"] = static_cast<int64_t>(report.checkpoints.size()) - taken;
    j["cluster"] = options.cluster;
    j["mode"] = report.mode;
    j["replication"] = "between-graph";
    j["replicas_to_aggregate"] = training.ps.replicas_to_aggregate;
    j["stragglers"] = options.stragglers;
    j["seed"] = o.seed;
    out << j.dump() << "\n";
  }
  out.flush();
  (void)err;
  if (report.hung) return DeadlineExceeded("the simulated run hung: " + report.hang);
  if (report.out_of_time) {
    return DeadlineExceeded("the simulated run was still going after --max-virtual-seconds " +
                            std::to_string(options.max_virtual_seconds) + " (global step " +
                            std::to_string(report.global_step) + ")");
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
    return Internal(std::to_string(report.invariant_violations()) +
                    " invariant violations (listed above)");
  }
  return Status::OK();
}

}  // namespace cli
}  // namespace actorflow
