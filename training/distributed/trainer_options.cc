#include "training/distributed/trainer_options.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace actorflow {
namespace {

constexpr char kPsJob[] = "ps";

Status BadField(const std::string& field, const std::string& why) {
  return InvalidArgument("TrainerOptions." + field + " " + why);
}

std::string ClusterName(const TrainerCluster& cluster) {
  return cluster.name.empty() ? "the cluster spec" : "cluster " + cluster.name;
}

Status ValidatePolicy(const TrainingPolicy& policy, const TrainerCluster& cluster) {
  using Kind = TrainingPolicyKind;
  if (policy.staleness_bound < 0) {
    return BadField("policy.staleness_bound", std::to_string(policy.staleness_bound) +
                                                  ": must be >= 0");
  }
  if (policy.staleness_bound > 0 && policy.kind != Kind::kStaleSynchronous) {
    return BadField("policy.staleness_bound", "applies to kStaleSynchronous only");
  }
  if (policy.replicas_to_aggregate < 0) {
    return BadField("policy.replicas_to_aggregate",
                    std::to_string(policy.replicas_to_aggregate) + ": must be >= 1 (0: every worker)");
  }
  if (policy.replicas_to_aggregate > 0 && policy.kind != Kind::kSync) {
    return BadField("policy.replicas_to_aggregate",
                    "applies to kSync only (kElastic averages the live workers' gradients)");
  }
  const bool elastic = policy.kind == Kind::kElastic;
  if (!elastic && (policy.min_workers != 1 || policy.max_workers != 0 ||
                   policy.lr_scaling != LearningRateScaling::kNone || policy.ps_replicas != 1)) {
    return BadField("policy", "min_workers, max_workers, lr_scaling and ps_replicas apply to "
                              "kElastic only");
  }
  if (policy.min_workers < 1) {
    return BadField("policy.min_workers", std::to_string(policy.min_workers) + ": must be >= 1");
  }
  if (policy.max_workers < 0) {
    return BadField("policy.max_workers",
                    std::to_string(policy.max_workers) + ": must be >= 1 (0: every worker slot)");
  }
  if (policy.max_workers > 0 && policy.min_workers > policy.max_workers) {
    return BadField("policy.min_workers", std::to_string(policy.min_workers) +
                                              " is more than max_workers " +
                                              std::to_string(policy.max_workers));
  }
  if (policy.ps_replicas < 1 || policy.ps_replicas > 2) {
    return BadField("policy.ps_replicas", std::to_string(policy.ps_replicas) + ": must be 1 or 2");
  }
  const bool allreduce = policy.kind == Kind::kAllReduce;
  if (!allreduce && (policy.bucket_bytes != kDefaultAllReduceBucketBytes ||
                     policy.members_per_task != 1)) {
    return BadField("policy", "bucket_bytes and members_per_task apply to kAllReduce only");
  }
  if (policy.bucket_bytes <= 0) {
    return BadField("policy.bucket_bytes", std::to_string(policy.bucket_bytes) + ": must be > 0");
  }
  if (policy.members_per_task < 1) {
    return BadField("policy.members_per_task",
                    std::to_string(policy.members_per_task) + ": must be >= 1");
  }
  if (allreduce && cluster.kind == TrainerCluster::Kind::kLocal && cluster.local_ps_tasks != 0) {
    return BadField("cluster.local_ps_tasks",
                    std::to_string(cluster.local_ps_tasks) +
                        ": kAllReduce keeps the variables on the workers, no ps task does "
                        "(TrainerCluster::Local(0, workers))");
  }
  if (elastic && cluster.kind != TrainerCluster::Kind::kSpec) {
    return BadField("policy.kind", "kElastic needs a cluster spec (TrainerCluster::OfSpec): its "
                                   "workers are processes that come and go");
  }
  return Status::OK();
}

// A simulated cluster needs worker tasks, and ps tasks but for kAllReduce; kAllReduce
// takes message faults only (its members run together, a lost one would end the
// run); kElastic needs processes that come and go.
Status ValidateSimulation(const TrainerCluster& cluster, const TrainingPolicy& policy) {
  if (policy.kind == TrainingPolicyKind::kElastic) {
    return BadField("policy.kind", "kElastic needs a cluster spec (TrainerCluster::OfSpec), "
                                   "not a simulated cluster");
  }
  const bool allreduce = policy.kind == TrainingPolicyKind::kAllReduce;
  const TrainerSimulation& sim = cluster.simulation;
  std::vector<const char*> jobs = {"worker"};
  if (!allreduce) jobs.push_back(kPsJob);
  for (const char* job : jobs) {
    const auto it = sim.shape.tasks.find(job);
    if (it == sim.shape.tasks.end() || it->second < 1) {
      return BadField("cluster.simulation.shape",
                      std::string("needs a '") + job + "' job (e.g. sim:ps=1,worker=2)");
    }
  }
  if (allreduce) {
    for (const Fault& fault : sim.faults.faults) {
      if (fault.action == Fault::Action::kKill || fault.action == Fault::Action::kRestart) {
        return BadField("cluster.simulation.faults",
                        "kAllReduce on a simulated cluster takes message faults; its kills and "
                        "restarts are for the ps policies");
      }
    }
    if (policy.members_per_task != 1) {
      return BadField("policy.members_per_task",
                      "a simulated cluster's worker task is one member (1)");
    }
  }
  if (policy.kind == TrainingPolicyKind::kInGraph) {
    for (const Fault& fault : sim.faults.faults) {
      if ((fault.action == Fault::Action::kKill || fault.action == Fault::Action::kRestart) &&
          fault.at_step < 0) {
        return BadField("cluster.simulation.faults",
                        "kInGraph on a simulated cluster kills and restarts at a global step "
                        "(at_step), not at a virtual time");
      }
    }
  }
  const Status link = sim.link.Validate();
  if (!link.ok()) return BadField("cluster.simulation.link", link.message());
  if (!(sim.device_gflops > 0)) {
    return BadField("cluster.simulation.device_gflops",
                    std::to_string(sim.device_gflops) + ": must be > 0");
  }
  if (sim.eval_every < 0) {
    return BadField("cluster.simulation.eval_every",
                    std::to_string(sim.eval_every) + ": must be >= 0");
  }
  if (!(sim.max_virtual_seconds > 0)) {
    return BadField("cluster.simulation.max_virtual_seconds",
                    std::to_string(sim.max_virtual_seconds) + ": must be > 0");
  }
  return Status::OK();
}

// kAllReduce's ps tasks (none) are checked with the policy; kInGraph runs without
// any (on CPU devices of this process).
Status ValidateCluster(const TrainerCluster& cluster, TrainingPolicyKind policy) {
  if (cluster.kind == TrainerCluster::Kind::kLocal) {
    const int least = policy == TrainingPolicyKind::kInGraph ? 0 : 1;
    if (policy != TrainingPolicyKind::kAllReduce && cluster.local_ps_tasks < least) {
      return BadField("cluster.local_ps_tasks", std::to_string(cluster.local_ps_tasks) +
                                                    ": must be >= " + std::to_string(least));
    }
    if (cluster.local_workers < 1) {
      return BadField("cluster.local_workers",
                      std::to_string(cluster.local_workers) + ": must be >= 1");
    }
    if (cluster.task >= 0) {
      return BadField("cluster.task", "a local cluster runs every worker itself: leave it -1");
    }
    return Status::OK();
  }
  if (cluster.job.empty()) return BadField("cluster.job", "is empty");
  if (cluster.task < 0) {
    return BadField("cluster.task", std::to_string(cluster.task) +
                                        ": a cluster spec needs this process's worker index");
  }
  return Status::OK();
}

// kAllReduce trains every replica at a constant rate and keeps no checkpoint.
Status ValidateAllReduceOptions(const TrainerOptions& options) {
  if (options.learning_rate_decay_per_epoch != 1.0) {
    return BadField("learning_rate_decay_per_epoch",
                    "applies to the ps policies only (kAllReduce trains at a constant rate)");
  }
  if (options.scale_learning_rate_with_replicas) {
    return BadField("scale_learning_rate_with_replicas", "applies to kSync only");
  }
  if (options.split_batch_over_replicas) {
    return BadField("split_batch_over_replicas", "applies to kSync only");
  }
  if (!options.checkpoint_dir.empty()) {
    return BadField("checkpoint_dir", "applies to the ps policies only (kAllReduce does not "
                                      "checkpoint its replicas)");
  }
  return Status::OK();
}

}  // namespace

TrainerCluster TrainerCluster::Local(int ps_tasks, int workers) {
  TrainerCluster cluster;
  cluster.kind = Kind::kLocal;
  cluster.local_ps_tasks = ps_tasks;
  cluster.local_workers = workers;
  return cluster;
}

TrainerCluster TrainerCluster::Simulated(TrainerSimulation simulation) {
  TrainerCluster cluster;
  cluster.kind = Kind::kSimulated;
  cluster.simulation = std::move(simulation);
  return cluster;
}

TrainerCluster TrainerCluster::OfSpec(ClusterSpec spec, std::string job, int task,
                                      std::string name) {
  TrainerCluster cluster;
  cluster.kind = Kind::kSpec;
  cluster.spec = std::move(spec);
  cluster.job = std::move(job);
  cluster.task = task;
  cluster.name = std::move(name);
  return cluster;
}

Status ValidateTrainerOptions(const TrainerOptions& options) {
  const bool allreduce = options.policy.kind == TrainingPolicyKind::kAllReduce;
  AF_RETURN_IF_ERROR(options.cluster.kind == TrainerCluster::Kind::kSimulated
                         ? ValidateSimulation(options.cluster, options.policy)
                         : ValidateCluster(options.cluster, options.policy.kind));
  AF_RETURN_IF_ERROR(ValidatePolicy(options.policy, options.cluster));
  if (allreduce) AF_RETURN_IF_ERROR(ValidateAllReduceOptions(options));
  const bool in_graph = options.policy.kind == TrainingPolicyKind::kInGraph;
  if (in_graph && options.scale_learning_rate_with_replicas) {
    return BadField("scale_learning_rate_with_replicas", "applies to kSync only");
  }
  if (in_graph && options.split_batch_over_replicas) {
    return BadField("split_batch_over_replicas", "applies to kSync only");
  }
  if (options.split_batch_over_replicas && options.scale_learning_rate_with_replicas) {
    return BadField("split_batch_over_replicas",
                    "excludes scale_learning_rate_with_replicas: an update of batch_size rows "
                    "keeps its rate");
  }
  if (options.max_steps < 0) {
    return BadField("max_steps", std::to_string(options.max_steps) + ": must be >= 0");
  }
  const bool simulated = options.cluster.kind == TrainerCluster::Kind::kSimulated;
  if (options.max_steps > 0 && !in_graph && !simulated) {
    return BadField("max_steps", "applies to kInGraph and simulated clusters only (the others "
                                 "run whole epochs)");
  }
  if (simulated && !options.checkpoint_dir.empty()) {
    return BadField("checkpoint_dir", "a simulated cluster writes no files (its coordinated "
                                      "checkpoints are checked in memory: "
                                      "recovery.checkpoint_every)");
  }
  const std::string optimizer = OptimizerConfigError(options.optimizer, options.learning_rate);
  if (!optimizer.empty()) {
    const bool unknown = optimizer.rfind("unknown", 0) == 0;
    return BadField(unknown ? "optimizer" : "learning_rate", "(" + optimizer + ")");
  }
  if (!std::isfinite(options.learning_rate_decay_per_epoch) ||
      options.learning_rate_decay_per_epoch <= 0 || options.learning_rate_decay_per_epoch > 1) {
    return BadField("learning_rate_decay_per_epoch",
                    std::to_string(options.learning_rate_decay_per_epoch) +
                        ": must be in (0, 1] (1: a constant rate)");
  }
  if (options.batch_size < 1) {
    return BadField("batch_size", std::to_string(options.batch_size) + ": must be >= 1");
  }
  const bool repeat_until_max_steps = in_graph && options.epochs == 0 && options.max_steps > 0;
  if (options.epochs < 1 && !repeat_until_max_steps) {
    return BadField("epochs", std::to_string(options.epochs) +
                                  ": must be >= 1 (kInGraph: 0 with max_steps > 0)");
  }
  if (options.timeout_ms <= 0) {
    return BadField("timeout_ms", std::to_string(options.timeout_ms) + ": must be > 0");
  }
  const TrainerRecovery& recovery = options.recovery;
  if (recovery.max_restarts < 0) {
    return BadField("recovery.max_restarts",
                    std::to_string(recovery.max_restarts) + ": must be >= 0");
  }
  if (recovery.reconnect_timeout_ms <= 0) {
    return BadField("recovery.reconnect_timeout_ms",
                    std::to_string(recovery.reconnect_timeout_ms) + ": must be > 0");
  }
  if (recovery.checkpoint_every < 0) {
    return BadField("recovery.checkpoint_every",
                    std::to_string(recovery.checkpoint_every) + ": must be >= 0");
  }
  if (recovery.checkpoint_every > 0 && options.checkpoint_dir.empty() && !simulated) {
    return BadField("recovery.checkpoint_every", "needs checkpoint_dir (where they go)");
  }
  return ValidateModelSpec(options.model).WithContext("TrainerOptions.model");
}

StatusOr<int> TrainerWorkers(const TrainerOptions& options) {
  const TrainerCluster& cluster = options.cluster;
  const TrainingPolicy& policy = options.policy;
  const bool allreduce = policy.kind == TrainingPolicyKind::kAllReduce;
  int workers = cluster.local_workers;
  if (cluster.kind == TrainerCluster::Kind::kSimulated) {
    const auto it = cluster.simulation.shape.tasks.find("worker");
    workers = it == cluster.simulation.shape.tasks.end() ? 0 : it->second;
  }
  if (cluster.kind == TrainerCluster::Kind::kSpec) {
    workers = cluster.spec.num_tasks(cluster.job);
    if (workers == 0) {
      return BadField("cluster.job", cluster.job + ": " + ClusterName(cluster) +
                                         " has no such job");
    }
    if (cluster.task >= workers) {
      return BadField("cluster.task", std::to_string(cluster.task) + ": job " + cluster.job +
                                          " has " + std::to_string(workers) + " tasks");
    }
    if (!allreduce && cluster.spec.num_tasks(kPsJob) == 0) {
      return BadField("cluster.spec", ClusterName(cluster) + " has no '" + kPsJob +
                                          "' job for the variables");
    }
  }
  if (policy.kind == TrainingPolicyKind::kElastic) {
    if (policy.max_workers > workers) {
      return BadField("policy.max_workers", std::to_string(policy.max_workers) + ": " +
                                                ClusterName(cluster) + " has " +
                                                std::to_string(workers) + " worker slots");
    }
    if (policy.max_workers > 0) workers = policy.max_workers;
    if (cluster.task >= workers) {
      return BadField("cluster.task", std::to_string(cluster.task) + " is outside the " +
                                          std::to_string(workers) +
                                          " worker slots of policy.max_workers");
    }
  }
  if (policy.replicas_to_aggregate > workers) {
    return BadField("policy.replicas_to_aggregate",
                    std::to_string(policy.replicas_to_aggregate) + " is more than the " +
                        std::to_string(workers) + " workers of job " + cluster.job);
  }
  return allreduce ? workers * policy.members_per_task : workers;
}

LearningRateDecay DecayPerEpoch(double factor_per_epoch, int64_t rows, int64_t rows_per_update) {
  if (factor_per_epoch == 1.0 || rows_per_update <= 0) return {};
  return {std::max<long long>(1, (rows + rows_per_update - 1) / rows_per_update), factor_per_epoch};
}

void SetShardLearningRate(double learning_rate, double decay_per_epoch, bool scale_with_replicas,
                          int64_t batch, int64_t rows, ParameterServerOptions* ps) {
  const int64_t batches_per_update = ps->mode == UpdateMode::kSync ? ps->replicas_to_aggregate : 1;
  ps->learning_rate = learning_rate;
  ps->lr_decay = DecayPerEpoch(decay_per_epoch, rows, batch * batches_per_update);
  if (scale_with_replicas && batches_per_update > 1) {
    ps->learning_rate *= static_cast<double>(batches_per_update);
  }
}

bool SplitsBatchOverReplicas(const TrainerOptions& options) {
  return options.split_batch_over_replicas && options.policy.kind == TrainingPolicyKind::kSync;
}

DataParallelOptions DataParallelOptionsFor(const TrainerOptions& options, int workers,
                                           int64_t train_rows) {
  DataParallelOptions dp;
  dp.spec = options.model;
  dp.seed = options.seed;
  dp.batch_size = options.batch_size;
  dp.epochs = options.epochs;
  dp.timeout_ms = options.timeout_ms;
  dp.model_dir = options.checkpoint_dir;
  const TrainingPolicy& policy = options.policy;
  switch (policy.kind) {
    case TrainingPolicyKind::kSync:
    case TrainingPolicyKind::kElastic:
    case TrainingPolicyKind::kAllReduce:  // not used: no ps tasks
    case TrainingPolicyKind::kInGraph:    // not used: one client
      dp.ps.mode = UpdateMode::kSync;
      break;
    case TrainingPolicyKind::kAsync:
      dp.ps.mode = UpdateMode::kAsync;
      break;
    case TrainingPolicyKind::kStaleSynchronous:
      dp.ps.mode = UpdateMode::kStaleSynchronous;
      break;
  }
  dp.ps.staleness_bound = policy.staleness_bound;
  dp.ps.optimizer = options.optimizer;
  if (policy.kind == TrainingPolicyKind::kElastic) {
    dp.ps.elastic = true;
    dp.ps.min_workers = policy.min_workers;
    dp.ps.lr_scaling = policy.lr_scaling == LearningRateScaling::kLinear ? "linear" : "none";
  }
  dp.ps.total_replicas = workers;
  dp.ps.replicas_to_aggregate =
      policy.replicas_to_aggregate > 0 ? policy.replicas_to_aggregate : workers;
  if (SplitsBatchOverReplicas(options)) {
    dp.batch_size = std::max<int64_t>(1, options.batch_size / dp.ps.replicas_to_aggregate);
  }
  SetShardLearningRate(options.learning_rate, options.learning_rate_decay_per_epoch,
                       options.scale_learning_rate_with_replicas, dp.batch_size, train_rows,
                       &dp.ps);
  return dp;
}

}  // namespace actorflow
