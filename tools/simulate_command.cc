#include "tools/simulate_command.h"

#include <iostream>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "actors/sim/simulated_cluster.h"
#include "actors/trainer/cluster_trainer.h"
#include "tools/train/train_cluster.h"
#include "tools/train/train_data.h"
#include "tools/train/train_flags.h"

namespace actorflow {
namespace cli {

StatusOr<FaultPlan> FaultPlanFromFlags(const SimulateCommandOptions& options,
                                       const SimClusterShape& shape) {
  AF_ASSIGN_OR_RETURN(ClusterSpec spec, shape.ToClusterSpec());
  if (!options.faults_path.empty()) {
    return LoadFaultPlan(ResolveUserPath(options.faults_path), spec);
  }
  if (!options.faults_text.empty()) return ParseFaultPlan(options.faults_text, spec);
  return FaultPlan();
}

void AddSimulatedRunJson(const SimulatedTrainerRun& run, double wall_seconds,
                         nlohmann::ordered_json* j) {
  (*j)["virtual_seconds"] = run.report.virtual_seconds;
  (*j)["wall_seconds"] = wall_seconds;
  (*j)["messages"] = run.messages;
  (*j)["dropped"] = run.dropped;
  (*j)["event_log_hash"] = run.event_log_hash;
  (*j)["weights_hash"] = run.report.weights_hash;
}

StatusOr<TrainerOptions> TrainerOptionsOfSimulation(const SimulateCommandOptions& options,
                                                    const SimClusterShape& shape,
                                                    const DNNModelSpec& spec) {
  const TrainCommandOptions& o = options.train;
  TrainerOptions trainer = TrainerOptionsOfCommonFlags(o);
  trainer.model = spec;
  TrainingPolicy& policy = trainer.policy;
  if (options.mode == "allreduce") {
    policy.kind = TrainingPolicyKind::kAllReduce;
    policy.bucket_bytes = static_cast<int64_t>(o.bucket_mb * 1024 * 1024);
  } else if (options.replication == "in-graph") {
    policy.kind = TrainingPolicyKind::kInGraph;
  } else {
    AF_ASSIGN_OR_RETURN(policy, PsPolicyOfMode(options.mode, options.replicas_to_aggregate));
    trainer.learning_rate_decay_per_epoch = o.lr_decay;
    trainer.scale_learning_rate_with_replicas = o.scale_lr_with_replicas;
    trainer.split_batch_over_replicas = o.split_batch_over_replicas;
    trainer.recovery.checkpoint_every = o.checkpoint_every;
  }
  if (o.epochs > 0) {
    trainer.epochs = o.epochs;
  } else {
    trainer.max_steps = o.steps;
    // In-graph repeats the training set until max_steps.
    if (policy.kind == TrainingPolicyKind::kInGraph) trainer.epochs = 0;
  }
  TrainerSimulation simulation;
  simulation.shape = shape;
  AF_ASSIGN_OR_RETURN(simulation.faults, FaultPlanFromFlags(options, shape));
  simulation.link.latency_us = options.latency_us;
  simulation.link.bandwidth_gbps = options.bandwidth_gbps;
  simulation.link.jitter_us = options.jitter_us;
  simulation.device_gflops = options.device_gflops;
  simulation.step_us = options.compute_us;
  const auto workers = shape.tasks.find("worker");
  AF_ASSIGN_OR_RETURN(simulation.stragglers,
                      ParseStragglerSpec(options.stragglers,
                                         workers == shape.tasks.end() ? -1 : workers->second));
  simulation.eval_every = options.eval_every;
  simulation.target_accuracy = options.target_accuracy;
  simulation.stop_at_target = options.stop_at_target;
  simulation.max_virtual_seconds = options.max_virtual_seconds;
  simulation.trace = !options.trace_path.empty();
  trainer.cluster = TrainerCluster::Simulated(std::move(simulation));
  return trainer;
}

Status CheckSimulateOptions(const SimulateCommandOptions& options) {
  AF_ASSIGN_OR_RETURN(SimClusterShape shape, ParseSimClusterSpec(options.cluster));
  if (options.mode == "allreduce") {
    if (options.replication != "between-graph" || options.replicas_to_aggregate != 0 ||
        options.stragglers != "none") {
      return InvalidArgument("--mode allreduce takes neither --replication in-graph, "
                             "--replicas-to-aggregate nor --stragglers");
    }
  } else {
    UpdateMode mode;
    int staleness = 0;
    AF_RETURN_IF_ERROR(ParseUpdateMode(options.mode, &mode, &staleness));
    if (shape.tasks.count("ps") == 0) {
      return InvalidArgument("--cluster " + options.cluster + ": --mode " + options.mode +
                             " keeps the variables on ps tasks: add ps=P (or --mode allreduce)");
    }
  }
  if (options.replication != "between-graph" && options.replication != "in-graph") {
    return InvalidArgument("--replication " + options.replication +
                           ": expected between-graph or in-graph");
  }
  if (options.replication == "in-graph" && options.mode != "sync") {
    return InvalidArgument("--mode " + options.mode +
                           ": in-graph replication trains synchronously; use "
                           "--replication between-graph for async and ssp");
  }
  if (options.replicas_to_aggregate < 0) {
    return InvalidArgument("--replicas-to-aggregate must be >= 1 (0: every worker)");
  }
  if (shape.tasks.count("worker") && options.replicas_to_aggregate > shape.tasks.at("worker")) {
    return InvalidArgument("--replicas-to-aggregate " + std::to_string(options.replicas_to_aggregate) +
                           " exceeds the " + std::to_string(shape.tasks.at("worker")) +
                           " workers of " + options.cluster);
  }
  const int workers = shape.tasks.count("worker") ? shape.tasks.at("worker") : -1;
  AF_RETURN_IF_ERROR(ParseStragglerSpec(options.stragglers, workers).status().WithContext("--stragglers"));
  if (!(options.device_gflops > 0)) return InvalidArgument("--device-gflops must be > 0");
  if (options.eval_every < 0) return InvalidArgument("--eval-every must be >= 0");
  if (!(options.max_virtual_seconds > 0)) return InvalidArgument("--max-virtual-seconds must be > 0");
  // Between-graph replication (ps or all-reduce) trains any model of train; the
  // in-graph run replicates the MLP, as `train --replication in-graph` does.
  if (options.train.model != "mlp" && options.replication == "in-graph") {
    return InvalidArgument("--model " + options.train.model + ": the simulator's "
                           "--replication in-graph trains --model mlp (between-graph "
                           "replication trains every model)");
  }
  LinkModel link;
  link.latency_us = options.latency_us;
  link.bandwidth_gbps = options.bandwidth_gbps;
  link.jitter_us = options.jitter_us;
  Status valid = link.Validate();
  if (!valid.ok()) return InvalidArgument("--latency-us/--bandwidth-gbps/--jitter-us: " + valid.message());
  return CheckModelAndTrainingFlags(options.train);
}

Status Simulate(const SimulateCommandOptions& options, std::ostream& out, std::ostream& err) {
  if (options.mode == "allreduce") return SimulateAllReduce(options, out);
  if (options.replication == "between-graph") return SimulateDataParallel(options, out, err);
  const TrainCommandOptions& o = options.train;
  AF_ASSIGN_OR_RETURN(SimClusterShape shape, ParseSimClusterSpec(options.cluster));
  AF_ASSIGN_OR_RETURN(TrainingData data, LoadTrainingData(o));
  AF_ASSIGN_OR_RETURN(const int64_t classes, ResolveClasses(data, o.classes));
  AF_ASSIGN_OR_RETURN(DNNClassifierOptions model, ClassifierOptionsFromFlags(o, data, classes));
  AF_ASSIGN_OR_RETURN(TrainerOptions trainer,
                      TrainerOptionsOfSimulation(options, shape, ModelSpecOf(model)));
  AF_ASSIGN_OR_RETURN(TrainerResult result, Train(trainer, {data.train.features, data.train.labels},
                                                  {data.test.features, data.test.labels}));
  const SimulatedTrainerRun& run = *result.simulation;
  const SimTrainingReport& report = run.report;
  const int64_t steps = result.in_graph.train.steps;
  if (!o.json) {
    out << "simulated " << options.cluster << ": " << steps << " synchronous steps in "
        << report.virtual_seconds << " virtual s (" << result.seconds << " s wall), "
        << run.messages << " messages, " << run.dropped << " dropped\n"
        << "event log " << run.event_log_hash << ", weights " << report.weights_hash << "\n"
        << TestAccuracyLine(result.in_graph.eval, result.seconds) << "\n";
    out.flush();
    return Status::OK();
  }
  nlohmann::ordered_json j;
  j["accuracy"] = result.accuracy;
  j["loss"] = result.loss;
  j["global_step"] = result.global_step;
  j["steps"] = steps;
  AddSimulatedRunJson(run, result.seconds, &j);
  j["updates_applied"] = steps;
  j["workers_lost"] = report.workers_lost;
  j["cluster"] = options.cluster;
  j["mode"] = options.mode;
  j["seed"] = o.seed;
  out << j.dump() << "\n";
  out.flush();
  (void)err;
  return Status::OK();
}

Subcommand AddSimulateSubcommand(CLI::App* parent) {
  auto options = std::make_shared<SimulateCommandOptions>();
  CLI::App* app = parent->add_subcommand(
      "simulate", "Train on a simulated cluster: deterministic, virtual time, injected faults");
  AddModelAndDataFlags(app, &options->train);
  app->add_option("--cluster", options->cluster, "sim:ps=P,worker=W[,devices=D]")->required();
  app->add_option("--mode", options->mode, "sync, async or ssp:S (ps), or allreduce (no ps)")
      ->capture_default_str();
  app->add_option("--replication", options->replication, "between-graph (ps) or in-graph (sync)")
      ->capture_default_str();
  app->add_option("--replicas-to-aggregate", options->replicas_to_aggregate,
                  "sync: gradients per update (default: every worker; fewer = backup workers)");
  app->add_option("--faults", options->faults_path, "A fault plan (JSON, see the README)");
  app->add_option("--stragglers", options->stragglers,
                  "none | lognormal:S | pareto:A[,p=P] | slow:I=F,... | at:I@S=F,... joined by +")
      ->capture_default_str();
  app->add_option("--device-gflops", options->device_gflops, "Virtual compute speed of a worker")
      ->capture_default_str();
  app->add_option("--compute-us", options->compute_us, "Declared virtual time of a step (overrides FLOPs)");
  app->add_option("--eval-every", options->eval_every, "Evaluate every K global steps");
  app->add_option("--checkpoint-every", options->train.checkpoint_every,
                  "Sync: the chief takes a coordinated checkpoint every K global steps");
  app->add_option("--target-accuracy", options->target_accuracy,
                  "Record the virtual time the test accuracy first reaches this");
  app->add_flag("--stop-at-target", options->stop_at_target, "End the run at the target accuracy");
  app->add_option("--max-virtual-seconds", options->max_virtual_seconds,
                  "A run still going after this much virtual time is a hang")
      ->capture_default_str();
  app->add_option("--trace", options->trace_path, "Chrome trace in virtual time (between-graph)");
  app->add_option("--latency-us", options->latency_us, "Link latency, virtual microseconds")
      ->capture_default_str();
  app->add_option("--bandwidth-gbps", options->bandwidth_gbps, "Link bandwidth, Gbit/s")
      ->capture_default_str();
  app->add_option("--jitter-us", options->jitter_us, "Link jitter, uniform [0, J) from the seed")
      ->capture_default_str();
  AddTimeoutMsOption(app, &options->train.timeout_ms)->capture_default_str();
  app->add_flag("--json", options->train.json, "End with one line of JSON");
  return Subcommand{app, [options]() {
                      return RunChecked(
                          std::cout, std::cerr, [options] { return CheckSimulateOptions(*options); },
                          [options] { return Simulate(*options, std::cout, std::cerr); });
                    }};
}

}  // namespace cli
}  // namespace actorflow
