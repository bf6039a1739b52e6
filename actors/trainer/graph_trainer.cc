#include "actors/trainer/graph_trainer.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actors/cluster/local_cluster.h"
#include "actors/cluster/session_factory.h"

namespace actorflow {
namespace {

// Sessions on the servers `targets` (indexed by worker), for `shape.workers` only.
WorkerSessionFactory RemoteSessions(const GraphCluster& shape, std::vector<std::string> targets,
                                    int64_t connect_timeout_ms) {
  return [targets = std::move(targets), workers = shape.workers, connect_timeout_ms](
             const Graph* graph, int worker) -> StatusOr<std::unique_ptr<Session>> {
    if (std::find(workers.begin(), workers.end(), worker) == workers.end()) {
      return FailedPrecondition("worker " + std::to_string(worker) +
                                " is not driven by this process (TrainerCluster.task)");
    }
    SessionOptions options;
    options.target = targets.at(worker);
    options.connect_timeout_in_ms = connect_timeout_ms;
    return NewSession(graph, options);
  };
}

}  // namespace

Status TrainGraphWorkload(const GraphTrainerOptions& options, const GraphWorkload& workload) {
  if (options.connect_timeout_ms <= 0) {
    return InvalidArgument("GraphTrainerOptions.connect_timeout_ms " +
                           std::to_string(options.connect_timeout_ms) + ": must be > 0");
  }
  AF_ASSIGN_OR_RETURN(GraphCluster cluster, GraphClusterShape(options.cluster));
  if (cluster.in_process) {
    const SessionOptions session_options = options.session_options;
    cluster.sessions = [session_options](const Graph* graph, int) {
      return NewSession(graph, session_options);
    };
    return workload(cluster);
  }
  std::unique_ptr<LocalCluster> local;  // stopped when the workload returns
  std::vector<std::string> targets;
  if (options.cluster.kind == TrainerCluster::Kind::kLocal) {
    AF_ASSIGN_OR_RETURN(local, LocalCluster::Start({{"ps", cluster.num_ps},
                                                    {cluster.job, cluster.num_workers}}));
    for (int w = 0; w < cluster.num_workers; ++w) {
      AF_ASSIGN_OR_RETURN(std::string target, local->Target(cluster.job, w));
      targets.push_back(std::move(target));
    }
  } else {
    for (int w = 0; w < cluster.num_workers; ++w) {
      AF_ASSIGN_OR_RETURN(TaskAddress address,
                          options.cluster.spec.Address(TaskId{cluster.job, w}));
      targets.push_back("actorflow://" + address.ToString());
    }
  }
  cluster.sessions = RemoteSessions(cluster, std::move(targets), options.connect_timeout_ms);
  return workload(cluster);
}

}  // namespace actorflow
