#include "actors/trainer/graph_trainer.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actors/cluster/local_cluster.h"
#include "actors/cluster/session_factory.h"
#include "actors/sim/simulated_cluster.h"

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

// "actorflow://host:port" of every worker task of `spec`.
StatusOr<std::vector<std::string>> SpecTargets(const ClusterSpec& spec, const GraphCluster& cluster) {
  std::vector<std::string> targets;
  for (int w = 0; w < cluster.num_workers; ++w) {
    AF_ASSIGN_OR_RETURN(TaskAddress address, spec.Address(TaskId{cluster.job, w}));
    targets.push_back("actorflow://" + address.ToString());
  }
  return targets;
}

// The workload as the driver of worker 0's task on a simulated cluster; its sessions
// open on the simulated tasks through the drivers' environment.
StatusOr<GraphTrainerReport> TrainOnSimulatedCluster(const GraphTrainerOptions& options,
                                                     GraphCluster cluster,
                                                     const GraphWorkload& workload) {
  const TrainerSimulation& sim = options.cluster.simulation;
  SimulatedCluster::Options sim_options;
  sim_options.shape = sim.shape;
  sim_options.faults = sim.faults;
  sim_options.link = sim.link;
  sim_options.seed = options.seed;
  AF_ASSIGN_OR_RETURN(std::unique_ptr<SimulatedCluster> simulated,
                      SimulatedCluster::Start(sim_options));
  AF_ASSIGN_OR_RETURN(std::vector<std::string> targets,
                      SpecTargets(simulated->cluster(), cluster));
  cluster.sessions = RemoteSessions(cluster, std::move(targets), options.connect_timeout_ms);
  AF_ASSIGN_OR_RETURN(SimulatedCluster::DriversReport drivers,
                      simulated->RunDrivers([&] { return workload(cluster); },
                                            {TaskId{cluster.job, 0}}));
  // The last run decides: a run its task's kill ended is run again on the restart.
  if (!drivers.runs.empty()) AF_RETURN_IF_ERROR(drivers.runs.back().status);
  GraphTrainerReport report;
  report.cluster = cluster;
  report.cluster.sessions = nullptr;
  report.simulated = true;
  report.event_log_hash = simulated->EventLogHash();
  report.virtual_seconds = drivers.virtual_seconds;
  report.steps = drivers.steps;
  report.invariants = drivers.invariants;
  return report;
}

}  // namespace

StatusOr<GraphTrainerReport> TrainGraphWorkload(const GraphTrainerOptions& options,
                                                const GraphWorkload& workload) {
  if (options.connect_timeout_ms <= 0) {
    return InvalidArgument("GraphTrainerOptions.connect_timeout_ms " +
                           std::to_string(options.connect_timeout_ms) + ": must be > 0");
  }
  AF_ASSIGN_OR_RETURN(GraphCluster cluster, GraphClusterShape(options.cluster));
  GraphTrainerReport report;
  report.cluster = cluster;
  if (cluster.in_process) {
    const SessionOptions session_options = options.session_options;
    cluster.sessions = [session_options](const Graph* graph, int) {
      return NewSession(graph, session_options);
    };
    AF_RETURN_IF_ERROR(workload(cluster));
    return report;
  }
  if (options.cluster.kind == TrainerCluster::Kind::kSimulated) {
    return TrainOnSimulatedCluster(options, cluster, workload);
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
    AF_ASSIGN_OR_RETURN(targets, SpecTargets(options.cluster.spec, cluster));
  }
  cluster.sessions = RemoteSessions(cluster, std::move(targets), options.connect_timeout_ms);
  AF_RETURN_IF_ERROR(workload(cluster));
  return report;
}

}  // namespace actorflow
