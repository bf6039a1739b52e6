#include "tools/simulate_command.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "actors/sim/simulated_cluster.h"
#include "tools/train/train_data.h"
#include "tools/train/train_flags.h"
#include "training/distributed/in_graph_classifier.h"

namespace actorflow {
namespace cli {
namespace {

const TaskId kChief{"worker", 0};

// The trainable variables' hash (HashParameters: names and bytes, in name order).
StatusOr<std::string> WeightsHash(const InGraphClassifier& classifier) {
  std::vector<std::string> names;
  for (const Output& v : classifier.model().variables) names.push_back(v.name());
  std::vector<Tensor> values;
  AF_RETURN_IF_ERROR(classifier.session()->Run({}, names, {}, &values));
  std::map<std::string, Tensor> parameters;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) parameters[names[i]] = values[i];
  return HashParameters(parameters);
}

// The variables' bytes: the features through --hidden to the classes.
int64_t ModelBytes(int64_t features, const std::vector<int64_t>& hidden, int64_t classes) {
  int64_t bytes = 0;
  int64_t in = features;
  for (int64_t units : hidden) {
    bytes += 4 * (in * units + units);
    in = units;
  }
  return bytes + 4 * (in * classes + classes);
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

}  // namespace

StatusOr<SimulatedCluster::Options> SimulationOptionsFromFlags(
    const SimulateCommandOptions& options, const SimClusterShape& shape, int64_t features,
    int64_t classes) {
  AF_ASSIGN_OR_RETURN(ClusterSpec spec, shape.ToClusterSpec());
  AF_ASSIGN_OR_RETURN(std::vector<int64_t> hidden, ParseHiddenUnits(options.train.hidden));
  SimulatedCluster::Options sim;
  sim.shape = shape;
  if (!options.faults_path.empty()) {
    AF_ASSIGN_OR_RETURN(sim.faults, LoadFaultPlan(ResolveUserPath(options.faults_path), spec));
  } else if (!options.faults_text.empty()) {
    AF_ASSIGN_OR_RETURN(sim.faults, ParseFaultPlan(options.faults_text, spec));
  }
  sim.link.latency_us = options.latency_us;
  sim.link.bandwidth_gbps = options.bandwidth_gbps;
  sim.link.jitter_us = options.jitter_us;
  sim.seed = options.train.seed;
  sim.model_bytes = ModelBytes(features, hidden, classes);
  return sim;
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
  // Between-graph replication trains any model of train (the library trainer's
  // workload); all-reduce and in-graph runs the MLP.
  const bool between_graph_ps = options.mode != "allreduce" && options.replication == "between-graph";
  if (options.train.model != "mlp" && !between_graph_ps) {
    return InvalidArgument("--model " + options.train.model + ": the simulator's " +
                           (options.mode == "allreduce" ? "--mode allreduce" : "--replication in-graph") +
                           " trains --model mlp (between-graph replication with ps tasks trains "
                           "every model)");
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
  const auto wall_start = std::chrono::steady_clock::now();
  const TrainCommandOptions& o = options.train;
  AF_ASSIGN_OR_RETURN(SimClusterShape shape, ParseSimClusterSpec(options.cluster));
  AF_ASSIGN_OR_RETURN(ClusterSpec spec, shape.ToClusterSpec());
  AF_ASSIGN_OR_RETURN(TrainingData data, LoadTrainingData(o));
  AF_ASSIGN_OR_RETURN(const int64_t classes, ResolveClasses(data, o.classes));
  AF_ASSIGN_OR_RETURN(std::vector<int64_t> hidden, ParseHiddenUnits(o.hidden));

  AF_ASSIGN_OR_RETURN(SimulatedCluster::Options sim,
                      SimulationOptionsFromFlags(options, shape, data.train.features.dim(1),
                                                 classes));
  AF_ASSIGN_OR_RETURN(std::unique_ptr<SimulatedCluster> cluster, SimulatedCluster::Start(sim));

  InGraphClassifierOptions classifier_options;
  AF_ASSIGN_OR_RETURN(classifier_options.model, ClassifierOptionsFromFlags(o, data, classes));
  SimulatedCluster* raw = cluster.get();
  classifier_options.model.session_factory =
      [raw](const Graph* graph) -> StatusOr<std::unique_ptr<Session>> {
    return raw->NewSession(kChief, graph);
  };
  const int workers = shape.tasks.at("worker");
  for (int k = 0; k < shape.tasks.at("ps"); ++k) {
    classifier_options.replication.ps_devices.push_back("/job:ps/task:" + std::to_string(k));
  }
  for (int i = 0; i < workers; ++i) {
    classifier_options.replication.tower_devices.push_back("/job:worker/task:" + std::to_string(i));
  }
  AF_ASSIGN_OR_RETURN(std::unique_ptr<InGraphClassifier> classifier,
                      InGraphClassifier::Create(std::move(classifier_options)));

  int64_t workers_lost = 0;
  Status faults_applied = ApplyTaskFaults(*cluster, sim.faults, 0, &workers_lost);
  const int64_t step_rows = o.batch * workers;
  StatusOr<TrainResult> trained = classifier->Train(
      TrainingInput(data.train, step_rows, o.seed, o.epochs), MaxTrainSteps(o),
      [&](const TrainProgress& p) {
        if (faults_applied.ok()) {
          faults_applied = ApplyTaskFaults(*cluster, sim.faults, p.global_step, &workers_lost);
        }
      });
  AF_RETURN_IF_ERROR(faults_applied);
  if (!trained.ok()) {
    return trained.status().WithContext("simulated training (virtual time " +
                                        std::to_string(cluster->VirtualSeconds()) + " s, " +
                                        std::to_string(workers_lost) + " worker(s) lost)");
  }
  AF_ASSIGN_OR_RETURN(EvalResult eval, classifier->Evaluate(EvaluationInput(data.test)));
  AF_ASSIGN_OR_RETURN(std::string weights_hash, WeightsHash(*classifier));
  const double wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

  const EventLog& log = cluster->event_log();
  if (!o.json) {
    out << "simulated " << options.cluster << ": " << trained->steps << " synchronous steps in "
        << cluster->VirtualSeconds() << " virtual s (" << wall_seconds << " s wall), "
        << log.count() << " messages, " << log.Count(SimEvent::Kind::kDropped) << " dropped\n"
        << "event log " << log.Hash() << ", weights " << weights_hash << "\n"
        << TestAccuracyLine(eval, wall_seconds) << "\n";
    out.flush();
    return Status::OK();
  }
  nlohmann::ordered_json j;
  j["accuracy"] = eval.accuracy;
  j["loss"] = eval.loss;
  j["global_step"] = trained->global_step;
  j["steps"] = trained->steps;
  j["virtual_seconds"] = cluster->VirtualSeconds();
  j["wall_seconds"] = wall_seconds;
  j["messages"] = log.count();
  j["dropped"] = log.Count(SimEvent::Kind::kDropped);
  j["event_log_hash"] = log.Hash();
  j["weights_hash"] = weights_hash;
  j["updates_applied"] = trained->steps;
  j["workers_lost"] = workers_lost;
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
