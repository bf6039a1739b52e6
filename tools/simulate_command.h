// `actorflow simulate`: trains the DNN classifier on a simulated cluster
// (actors/sim/simulated_cluster.h) under a deterministic scheduler and a virtual
// clock, with a fault plan, and reports what happened.
//
//   actorflow simulate --cluster sim:ps=1,worker=4 --steps 200 --seed 7 \
//       [--faults FILE] [--latency-us 50 --bandwidth-gbps 10 --jitter-us 0] [--mode sync] \
//       [--train CSV --test CSV --normalize ...the model flags of train] [--json]
//
// Training is synchronous, in-graph (one replicated graph, a tower per worker task,
// the variables on the ps tasks: training/in_graph_classifier.h), driven from worker
// 0; the fault plan's message faults act on every link, its kill and restart entries
// at their global steps. --json prints one line:
//   {"accuracy", "loss", "global_step", "steps", "virtual_seconds", "wall_seconds",
//    "messages", "dropped", "event_log_hash", "weights_hash", "updates_applied",
//    "workers_lost", "cluster", "mode", "seed"}
// The same flags print the same line, save "wall_seconds", on every run.
#ifndef ACTORFLOW_TOOLS_SIMULATE_COMMAND_H_
#define ACTORFLOW_TOOLS_SIMULATE_COMMAND_H_

#include <ostream>
#include <string>

#include "graph/status.h"
#include "tools/cli_common.h"
#include "tools/train_command.h"

namespace actorflow {
namespace cli {

struct SimulateCommandOptions {
  TrainCommandOptions train;  // the model and data flags (train's)
  std::string cluster;        // sim:ps=P,worker=W[,devices=D]
  std::string mode = "sync";
  std::string faults_path;
  double latency_us = 50;
  double bandwidth_gbps = 10;
  double jitter_us = 0;
};

// Judges the flags without reading a file: InvalidArgument naming the flag.
Status CheckSimulateOptions(const SimulateCommandOptions& options);
// Runs the simulation and prints its result on `out` (progress on `err`).
Status Simulate(const SimulateCommandOptions& options, std::ostream& out, std::ostream& err);

Subcommand AddSimulateSubcommand(CLI::App* parent);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_SIMULATE_COMMAND_H_
