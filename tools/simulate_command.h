// `actorflow simulate`: trains the DNN classifier on a simulated cluster
// (actors/sim/simulated_cluster.h) under a deterministic scheduler and a virtual
// clock, with a fault plan, and reports what happened.
//
//   actorflow simulate --cluster sim:[ps=P,]worker=W[,devices=D] --steps N --seed S
//       [--mode sync|async|ssp:S|allreduce] [--replicas-to-aggregate N] [--faults FILE]
//       [--stragglers SPEC] [--device-gflops G | --compute-us X]
//       [--latency-us X --bandwidth-gbps Y --jitter-us J] [--eval-every K]
//       [--target-accuracy A [--stop-at-target]] [--checkpoint-every K] [--trace FILE]
//       [--max-virtual-seconds T] [--json]
//       [--replication between-graph|in-graph] [...the model and data flags of train]
//
// between-graph (default): TensorFlow 1.x's between-graph replication with parameter
// servers (actors/sim/sim_training.h), run by the library trainer on a simulated
// cluster (Train with TrainerCluster::Simulated, actors/trainer/cluster_trainer.h),
// so any --model of train: a worker driver per worker task, the
// variables on the ps tasks' shards, --mode's update protocol; sync with
// --replicas-to-aggregate below W has W - N backup workers. --steps: sync, the
// global step that ends the run; async/ssp, the gradients each worker pushes.
// Compute takes FLOPs / --device-gflops of virtual time per step (or --compute-us),
// times the --stragglers factor (actors/sim/stragglers.h). The plan's kill and
// restart entries act at their global step or virtual time. --json prints one line:
//   {"accuracy", "loss", "global_step", "steps", "virtual_seconds", "wall_seconds",
//    "messages", "dropped", "event_log_hash", "weights_hash", "updates_applied",
//    "dropped_stale", "workers_lost", "invariant_violations", "invariants" (name ->
//    violations), "violations" (the first 20), "hung", "seconds_to_target",
//    "pushes", "pushes_failed", "gradients_applied", "checkpoints_taken",
//    "checkpoints_failed", "out_of_time", "cluster", "mode",
//    "replication", "replicas_to_aggregate", "stragglers", "seed"}
// and the command fails (after printing) when the run hung or broke an invariant.
// --trace writes a Chrome trace in virtual time, one track per worker device.
//
// in-graph: sync only, one replicated graph (a tower per worker task, the variables
// on the ps tasks: training/distributed/in_graph_classifier.h) driven from worker 0; kills at
// their global steps end training with an error naming the task. Its --json line
// has the fields it can fill.
//
// The same flags print the same line, save "wall_seconds", on every run.
#ifndef ACTORFLOW_TOOLS_SIMULATE_COMMAND_H_
#define ACTORFLOW_TOOLS_SIMULATE_COMMAND_H_

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/sim/simulated_cluster.h"
#include "actors/trainer/cluster_trainer.h"
#include "graph/status.h"
#include "tools/cli/cli_common.h"
#include "tools/train/train_command.h"
#include "training/distributed/trainer_options.h"

namespace actorflow {
namespace cli {

struct SimulateCommandOptions {
  TrainCommandOptions train;  // the model and data flags (train's)
  std::string cluster;        // sim:ps=P,worker=W[,devices=D]
  std::string mode = "sync";
  std::string replication = "between-graph";
  int replicas_to_aggregate = 0;  // 0: every worker
  std::string faults_path;
  std::string faults_text;  // a plan given inline (used when faults_path is empty)
  std::string stragglers = "none";
  double device_gflops = 10;
  double compute_us = -1;
  int64_t eval_every = 0;
  double target_accuracy = 0;
  bool stop_at_target = false;
  double max_virtual_seconds = 3600;
  std::string trace_path;
  double latency_us = 50;
  double bandwidth_gbps = 10;
  double jitter_us = 0;
};

// Judges the flags without reading a file: InvalidArgument naming the flag.
Status CheckSimulateOptions(const SimulateCommandOptions& options);
// Runs the simulation and prints its result on `out` (progress on `err`).
Status Simulate(const SimulateCommandOptions& options, std::ostream& out, std::ostream& err);
// The fault plan of --faults (a file) or an inline plan, checked against `shape`'s
// tasks; none without either. Errors: the plan's, naming its source.
StatusOr<FaultPlan> FaultPlanFromFlags(const SimulateCommandOptions& options,
                                       const SimClusterShape& shape);

// The flags as the library trainer's options (actors/trainer/cluster_trainer.h):
// train's model and training flags, --mode's policy (kInGraph for --replication
// in-graph), and TrainerCluster::Simulated with the cluster, the plan, the link and
// the compute model. --epochs sets the run's length in passes; otherwise --steps
// (ps sync and in-graph: the global step that ends it; async/ssp: each worker's
// pushes; allreduce: the steps). Errors: the plan's, the stragglers'.
StatusOr<TrainerOptions> TrainerOptionsOfSimulation(const SimulateCommandOptions& options,
                                                    const SimClusterShape& shape,
                                                    const DNNModelSpec& spec);

// The fields every simulated run's --json line has, in this order: "virtual_seconds",
// "wall_seconds", "messages", "dropped", "event_log_hash", "weights_hash".
void AddSimulatedRunJson(const SimulatedTrainerRun& run, double wall_seconds,
                         nlohmann::ordered_json* j);

// --mode allreduce (tools/simulate_allreduce.cc): all-reduce data parallelism, no
// ps; every step checks that every member's weights are byte-identical (the run
// fails, after printing, when they are not). Message faults only. Its --json line:
//   {"accuracy", "loss", "train_loss", "global_step", "virtual_seconds",
//    "wall_seconds", "messages", "dropped", "event_log_hash", "weights_hash",
//    "buckets", "steps_with_differing_weights", "invariant_violations", "cluster",
//    "mode", "workers", "seed"}
Status SimulateAllReduce(const SimulateCommandOptions& options, std::ostream& out);

// The between-graph run (tools/simulate_data_parallel.cc).
Status SimulateDataParallel(const SimulateCommandOptions& options, std::ostream& out,
                            std::ostream& err);

Subcommand AddSimulateSubcommand(CLI::App* parent);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_SIMULATE_COMMAND_H_
