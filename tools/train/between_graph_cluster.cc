#include "tools/train/between_graph_cluster.h"

#include <map>
#include <utility>

#include "actors/cluster/local_cluster.h"
#include "actors/cluster/session_factory.h"
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

StatusOr<BetweenGraphCluster> BetweenGraphShape(const std::string& cluster_flag,
                                                const std::string& model) {
  BetweenGraphCluster cluster;
  if (cluster_flag.empty()) return cluster;
  std::map<std::string, int> shape;
  if (IsLocalCluster(cluster_flag)) {
    AF_ASSIGN_OR_RETURN(shape, ParseLocalClusterFlag(cluster_flag));
  } else {
    AF_ASSIGN_OR_RETURN(ClusterSpec spec, LoadClusterFile(cluster_flag));
    for (const std::string& job : spec.jobs()) shape[job] = spec.num_tasks(job);
  }
  AF_RETURN_IF_ERROR(NeedsPsAndWorkers(shape, cluster_flag, model));
  cluster.num_ps = shape.at("ps");
  cluster.num_workers = shape.at("worker");
  return cluster;
}

StatusOr<BetweenGraphCluster> OpenBetweenGraphCluster(const std::string& cluster_flag,
                                                      const std::string& model,
                                                      int64_t connect_timeout_ms) {
  AF_ASSIGN_OR_RETURN(BetweenGraphCluster cluster, BetweenGraphShape(cluster_flag, model));
  if (cluster_flag.empty()) {
    cluster.sessions = [](const Graph* graph, int) { return NewSession(graph, SessionOptions()); };
    return cluster;
  }
  std::vector<std::string> targets;
  if (IsLocalCluster(cluster_flag)) {
    AF_ASSIGN_OR_RETURN(std::unique_ptr<LocalCluster> local,
                        LocalCluster::Start({{"ps", cluster.num_ps},
                                             {"worker", cluster.num_workers}}));
    cluster.local = std::move(local);
    for (int w = 0; w < cluster.num_workers; ++w) {
      AF_ASSIGN_OR_RETURN(std::string target, cluster.local->Target("worker", w));
      targets.push_back(std::move(target));
    }
  } else {
    AF_ASSIGN_OR_RETURN(ClusterSpec spec, LoadClusterFile(cluster_flag));
    for (int w = 0; w < cluster.num_workers; ++w) {
      AF_ASSIGN_OR_RETURN(TaskAddress address, spec.Address(TaskId{"worker", w}));
      targets.push_back("actorflow://" + address.ToString());
    }
  }
  cluster.sessions = [targets, connect_timeout_ms](
                         const Graph* graph, int worker) -> StatusOr<std::unique_ptr<Session>> {
    SessionOptions options;
    options.target = targets.at(worker);
    options.connect_timeout_in_ms = connect_timeout_ms;
    return NewSession(graph, options);
  };
  return cluster;
}

}  // namespace cli
}  // namespace actorflow
