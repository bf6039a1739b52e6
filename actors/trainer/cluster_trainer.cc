#include "actors/trainer/cluster_trainer.h"

#include <memory>
#include <utility>

#include "actors/cluster/local_cluster.h"
#include "actors/cluster/session_factory.h"
#include "actors/ps/parameter_client_impl.h"

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

}  // namespace

StatusOr<TrainerResult> Train(const TrainerOptions& options, const LabeledData& train,
                              const LabeledData& test) {
  AF_RETURN_IF_ERROR(ValidateTrainerOptions(options));
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
