// `actorflow simulate` with between-graph replication (the default): a worker driver
// per worker task, the shards on the ps tasks (actors/sim/sim_training.h), run by the
// library trainer (actors/trainer/cluster_trainer.h) on a simulated cluster.
#include <fstream>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "actors/sim/simulated_cluster.h"
#include "actors/trainer/cluster_trainer.h"
#include "tools/simulate_command.h"
#include "tools/train/train_cluster.h"
#include "tools/train/train_data.h"
#include "tools/train/train_flags.h"
#include "training/distributed/trainer_options.h"

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
  const TrainCommandOptions& o = options.train;
  AF_ASSIGN_OR_RETURN(SimClusterShape shape, ParseSimClusterSpec(options.cluster));
  if (shape.tasks.count("worker") == 0) {
    return InvalidArgument("--cluster " + options.cluster + ": needs worker tasks");
  }
  const int workers = shape.tasks.at("worker");
  AF_ASSIGN_OR_RETURN(TrainingData data, LoadTrainingData(o));
  AF_ASSIGN_OR_RETURN(const int64_t classes, ResolveClasses(data, o.classes));
  AF_ASSIGN_OR_RETURN(DNNClassifierOptions model, ClassifierOptionsFromFlags(o, data, classes));
  AF_ASSIGN_OR_RETURN(TrainerOptions trainer,
                      TrainerOptionsOfSimulation(options, shape, ModelSpecOf(model)));
  if (options.replicas_to_aggregate > workers) {
    return InvalidArgument("--replicas-to-aggregate " +
                           std::to_string(options.replicas_to_aggregate) + " exceeds the " +
                           std::to_string(workers) + " workers of " + options.cluster);
  }
  AF_ASSIGN_OR_RETURN(TrainerResult result, Train(trainer, {data.train.features, data.train.labels},
                                                  {data.test.features, data.test.labels}));
  const SimulatedTrainerRun& run = *result.simulation;
  const SimTrainingReport& report = run.report;
  if (trainer.cluster.simulation.trace) {
    AF_RETURN_IF_ERROR(WriteSimTrace(report, workers, ResolveUserPath(options.trace_path)));
  }
  const double wall_seconds = result.seconds;
  const int replicas_to_aggregate = result.plan.data_parallel.ps.replicas_to_aggregate;

  int64_t steps = 0;
  for (const SimWorkerCounts& c : report.workers) steps += c.steps;
  if (!o.json) {
    out << "simulated " << options.cluster << " (" << report.mode << ", "
        << replicas_to_aggregate << " of " << workers << " aggregated): global step "
        << report.global_step << " in " << report.virtual_seconds << " virtual s (" << wall_seconds
        << " s wall), " << run.messages << " messages, " << run.dropped << " dropped\n"
        << "event log " << run.event_log_hash << ", weights " << report.weights_hash << ", "
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
    AddSimulatedRunJson(run, wall_seconds, &j);
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
    j["replicas_to_aggregate"] = replicas_to_aggregate;
    j["stragglers"] = options.stragglers;
    j["seed"] = o.seed;
    out << j.dump() << "\n";
  }
  out.flush();
  (void)err;
  return SimulatedRunVerdict(run);
}

}  // namespace cli
}  // namespace actorflow
