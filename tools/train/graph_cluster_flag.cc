#include "tools/train/graph_cluster_flag.h"

#include <map>
#include <utility>

#include "actors/sim/sim_cluster_spec.h"
#include "placement/cluster_spec.h"
#include "tools/cli/cli_common.h"

namespace actorflow {
namespace cli {
namespace {

Status NeedsPsAndWorkers(const std::map<std::string, int>& shape, const std::string& cluster_flag,
                         const std::string& model) {
  const auto count = [&](const char* job) {
    const auto it = shape.find(job);
    return it == shape.end() ? 0 : it->second;
  };
  if (count("ps") == 0 || count("worker") == 0) {
    return InvalidArgument("--model " + model + " --cluster " + cluster_flag +
                           ": needs ps and worker tasks (e.g. local:ps=2,worker=2, or a "
                           "cluster file with \"ps\" and \"worker\" jobs)");
  }
  return Status::OK();
}

}  // namespace

StatusOr<GraphTrainerOptions> GraphTrainerOptionsFromFlag(const std::string& cluster_flag,
                                                          const std::string& model,
                                                          int64_t timeout_ms) {
  GraphTrainerOptions options;
  options.connect_timeout_ms = timeout_ms > 0 ? timeout_ms : int64_t{24} * 3600 * 1000;
  if (cluster_flag.empty()) return options;  // Local(0, 1)
  if (cluster_flag.rfind("sim:", 0) == 0) {
    StatusOr<SimClusterShape> shape = ParseSimClusterSpec(cluster_flag);
    if (!shape.ok()) return shape.status().WithContext("--cluster");
    AF_RETURN_IF_ERROR(NeedsPsAndWorkers(shape->tasks, cluster_flag, model));
    TrainerSimulation simulation;
    simulation.shape = std::move(shape).value();
    options.cluster = TrainerCluster::Simulated(std::move(simulation));
    return options;
  }
  if (IsLocalCluster(cluster_flag)) {
    AF_ASSIGN_OR_RETURN(auto shape, ParseLocalClusterFlag(cluster_flag));
    AF_RETURN_IF_ERROR(NeedsPsAndWorkers(shape, cluster_flag, model));
    options.cluster = TrainerCluster::Local(shape.at("ps"), shape.at("worker"));
    return options;
  }
  AF_ASSIGN_OR_RETURN(ClusterSpec spec, LoadClusterFile(cluster_flag));
  std::map<std::string, int> shape;
  for (const std::string& job : spec.jobs()) shape[job] = spec.num_tasks(job);
  AF_RETURN_IF_ERROR(NeedsPsAndWorkers(shape, cluster_flag, model));
  options.cluster = TrainerCluster::OfSpec(std::move(spec), "worker", -1, cluster_flag);
  return options;
}

StatusOr<GraphCluster> GraphClusterOfFlag(const std::string& cluster_flag,
                                          const std::string& model) {
  AF_ASSIGN_OR_RETURN(GraphTrainerOptions options,
                      GraphTrainerOptionsFromFlag(cluster_flag, model, 0));
  return GraphClusterShape(options.cluster);
}

void AddSimulationFields(const GraphTrainerReport& report, nlohmann::ordered_json* j) {
  if (!report.simulated) return;
  int64_t violations = 0;
  for (const SimInvariantResult& r : report.invariants) {
    violations += static_cast<int64_t>(r.violations.size());
  }
  (*j)["event_log_hash"] = report.event_log_hash;
  (*j)["virtual_seconds"] = report.virtual_seconds;
  (*j)["invariant_violations"] = violations;
}

}  // namespace cli
}  // namespace actorflow
