#include "actors/trainer/cluster_trainer.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actors/cluster/local_cluster.h"
#include "actors/cluster/server.h"
#include "actors/cluster/session_factory.h"
#include "actors/ps/parameter_client_impl.h"
#include "actors/trainer/sim_trainer.h"
#include "training/distributed/allreduce_trainer.h"
#include "training/distributed/in_graph_trainer.h"

namespace actorflow {
namespace {

constexpr char kPsJob[] = "ps";

// How worker `task` of a cluster spec talks to the ps tasks: replies to the host the
// spec gives it; elastic workers keep standbys and replace lost shards.
ParameterClientOptions SpecClientOptions(const TrainerOptions& options) {
  ParameterClientOptions client_options;
  const TrainerCluster& cluster = options.cluster;
  auto address = cluster.spec.Address(TaskId{cluster.job, cluster.task});
  if (address.ok()) client_options.bulk_reply_host = address->host;
  if (options.policy.kind == TrainingPolicyKind::kElastic) {
    client_options.ps_replicas = options.policy.ps_replicas;
    client_options.replace_lost_shards = true;
  }
  return client_options;
}

// A session factory on `target`'s master.
SessionFactory SessionsOn(const std::string& target) {
  SessionOptions session;
  session.target = target;
  return [session](const Graph* graph) { return NewSession(graph, session); };
}

// kAllReduce: serves the worker tasks (all of a local cluster's; a spec's own task,
// whose peers serve theirs), each with policy.members_per_task CPUs, then trains.
StatusOr<TrainerResult> TrainWithAllReduceOnCluster(const TrainerOptions& options,
                                                    const LabeledData& train,
                                                    const LabeledData& test) {
  const TrainerCluster& cluster = options.cluster;
  const int cpus = options.policy.members_per_task;
  TrainerPlan plan;
  AF_ASSIGN_OR_RETURN(plan.workers, TrainerWorkers(options));
  const int tasks = plan.workers / cpus;
  std::unique_ptr<LocalCluster> local;  // both stopped when training ends
  std::unique_ptr<Server> own;
  std::vector<SessionFactory> task_sessions;
  if (cluster.kind == TrainerCluster::Kind::kLocal) {
    AF_ASSIGN_OR_RETURN(local, LocalCluster::Start({{"worker", tasks}}, cpus));
    plan.cluster = local->spec();
    for (int t = 0; t < tasks; ++t) {
      AF_ASSIGN_OR_RETURN(std::string target, local->Target("worker", t));
      task_sessions.push_back(SessionsOn(target));
    }
  } else {
    plan.cluster = cluster.spec;
    ServerOptions server;
    server.cluster = cluster.spec;
    server.task = TaskId{cluster.job, cluster.task};
    server.cpus = cpus;
    AF_ASSIGN_OR_RETURN(own, Server::Start(server));
    // Only this task's factory is ever called: its peers run their own members.
    task_sessions.assign(tasks, SessionsOn(own->target()));
  }
  plan.train_rows = train.features.dim(0);
  AF_ASSIGN_OR_RETURN(plan.allreduce, AllReduceOptionsFor(options, task_sessions));
  if (options.on_start) AF_RETURN_IF_ERROR(options.on_start(plan));
  return RunAllReduceTrainer(plan, train, test);
}

// kInGraph: starts a local cluster's ps and worker tasks (none without ps tasks:
// the towers are CPU devices of an in-process session), then trains as the one
// client, through the master of worker 0 (a spec's: worker `task`).
StatusOr<TrainerResult> TrainInGraphOnCluster(const TrainerOptions& options,
                                              const LabeledData& train, const LabeledData& test) {
  const TrainerCluster& cluster = options.cluster;
  TrainerPlan plan;
  AF_ASSIGN_OR_RETURN(plan.workers, TrainerWorkers(options));
  std::unique_ptr<LocalCluster> local;  // stopped when training ends
  SessionOptions session;
  int ps_tasks = 0;
  if (cluster.kind == TrainerCluster::Kind::kLocal) {
    ps_tasks = cluster.local_ps_tasks;
    if (ps_tasks > 0) {
      AF_ASSIGN_OR_RETURN(local,
                          LocalCluster::Start({{kPsJob, ps_tasks}, {"worker", plan.workers}}));
      plan.cluster = local->spec();
      AF_ASSIGN_OR_RETURN(session.target, local->Target("worker", 0));
    } else {
      session.device_count = {{"CPU", plan.workers}};
    }
  } else {
    plan.cluster = cluster.spec;
    ps_tasks = cluster.spec.num_tasks(kPsJob);
    AF_ASSIGN_OR_RETURN(TaskAddress master,
                        cluster.spec.Address(TaskId{cluster.job, cluster.task}));
    session.target = "actorflow://" + master.ToString();
  }
  plan.train_rows = train.features.dim(0);
  plan.in_graph = InGraphReplicationFor(options, plan.workers, ps_tasks);
  if (options.on_start) AF_RETURN_IF_ERROR(options.on_start(plan));
  const SessionFactory sessions = [session](const Graph* graph) {
    return NewSession(graph, session);
  };
  return RunInGraphTrainer(options, plan, sessions, train, test);
}

}  // namespace

StatusOr<TrainerResult> Train(const TrainerOptions& options, const LabeledData& train,
                              const LabeledData& test) {
  AF_RETURN_IF_ERROR(ValidateTrainerOptions(options));
  if (options.cluster.kind == TrainerCluster::Kind::kSimulated) {
    return TrainOnSimulatedCluster(options, train, test);
  }
  if (options.policy.kind == TrainingPolicyKind::kAllReduce) {
    return TrainWithAllReduceOnCluster(options, train, test);
  }
  if (options.policy.kind == TrainingPolicyKind::kInGraph) {
    return TrainInGraphOnCluster(options, train, test);
  }
  TrainerPlan plan;
  std::unique_ptr<LocalCluster> local;  // stopped when training ends
  if (options.cluster.kind == TrainerCluster::Kind::kLocal) {
    // The workers are this process's threads; only the ps tasks need servers.
    AF_ASSIGN_OR_RETURN(local, LocalCluster::Start({{kPsJob, options.cluster.local_ps_tasks}}));
    plan.cluster = local->spec();
  } else {
    plan.cluster = options.cluster.spec;
  }
  AF_ASSIGN_OR_RETURN(plan.workers, TrainerWorkers(options));
  plan.train_rows = train.features.dim(0);
  plan.data_parallel = DataParallelOptionsFor(options, plan.workers, plan.train_rows);
  const SessionOptions session_options = options.session_options;
  plan.data_parallel.session_factory = [session_options](const Graph* graph) {
    return NewSession(graph, session_options);
  };
  AF_RETURN_IF_ERROR(ValidateDataParallelOptions(plan.data_parallel));
  if (options.on_start) AF_RETURN_IF_ERROR(options.on_start(plan));

  const ClusterSpec& cluster = plan.cluster;
  const ParameterServerOptions ps = plan.data_parallel.ps;
  const ParameterClientOptions client_options =
      local != nullptr ? ParameterClientOptions() : SpecClientOptions(options);
  const ParameterServerConnector connect = [&cluster, ps, client_options](int, int64_t timeout_ms) {
    return ConnectParameterServers(cluster, kPsJob, ps, timeout_ms, client_options);
  };
  return RunTrainerWorkers(options, plan, connect, train, test);
}

}  // namespace actorflow
