// --cluster of the models that build their own graphs (`--model word2vec`,
// `wide-deep`, `char-lstm`, `char-transformer`) as the library trainer's cluster
// (actors/trainer/graph_trainer.h):
//   ""                      TrainerCluster::Local(0, 1): one process, one worker,
//                           no ps task;
//   "local:ps=P,worker=W"   TrainerCluster::Local(P, W): P + W servers started in
//                           this process;
//   a cluster file          its "ps" and "worker" tasks (placement/cluster_spec.h),
//                           each an `actorflow server` already running; this process
//                           drives every worker task (task -1);
//   "sim:ps=P,worker=W"     TrainerCluster::Simulated: the same on a simulated
//                           cluster in this process, deterministic in virtual time.
// A cluster given needs ps and worker tasks: the tables and variables live on the ps
// tasks.
#ifndef ACTORFLOW_TOOLS_TRAIN_GRAPH_CLUSTER_FLAG_H_
#define ACTORFLOW_TOOLS_TRAIN_GRAPH_CLUSTER_FLAG_H_

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/trainer/graph_trainer.h"
#include "graph/status.h"
#include "training/distributed/graph_workload.h"

namespace actorflow {
namespace cli {

// The trainer's options for --cluster `cluster_flag` of `model` (named in errors),
// each session's connection bounded by `timeout_ms` (<= 0: a day). InvalidArgument
// for a cluster without "ps" or "worker" tasks or a "local:" value that does not
// parse; a cluster file's own errors (NotFound naming it).
StatusOr<GraphTrainerOptions> GraphTrainerOptionsFromFlag(const std::string& cluster_flag,
                                                          const std::string& model,
                                                          int64_t timeout_ms);

// The shape --cluster gives, without starting or reaching anything; errors as above.
StatusOr<GraphCluster> GraphClusterOfFlag(const std::string& cluster_flag,
                                          const std::string& model);

// A simulated run's fields of a --json line (none for other clusters):
// "event_log_hash" (the same flags and seed give the same), "virtual_seconds",
// "invariant_violations" (the drivers' steps, SimulatedCluster::DriversReport).
void AddSimulationFields(const GraphTrainerReport& report, nlohmann::ordered_json* j);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TRAIN_GRAPH_CLUSTER_FLAG_H_
