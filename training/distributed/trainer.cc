#include "training/distributed/trainer.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <utility>

namespace actorflow {
namespace {

// Calls `connect` with what is left of `budget_ms` until it succeeds, fails other
// than Unavailable, or the budget is spent. A task just known lost is refused at
// once (actors/transport/connect.h), so the attempts pause in between.
StatusOr<std::unique_ptr<ParameterClient>> ConnectWithin(
    int64_t budget_ms,
    const std::function<StatusOr<std::unique_ptr<ParameterClient>>(int64_t)>& connect) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(budget_ms);
  while (true) {
    const int64_t left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    StatusOr<std::unique_ptr<ParameterClient>> client = connect(std::max<int64_t>(left, 1));
    if (client.ok() || client.status().code() != Code::kUnavailable || left <= 0) return client;
    const auto pause = Clock::now() + std::chrono::milliseconds(250);
    std::this_thread::sleep_until(std::min(deadline, pause));
  }
}

TrainerResult ResultOf(const TrainerPlan& plan, DataParallelResult details) {
  TrainerResult result;
  result.accuracy = details.eval.accuracy;
  result.loss = details.eval.loss;
  result.global_step = details.eval.global_step;
  result.updates_applied = details.stats.updates_applied;
  result.dropped_stale = details.stats.gradients_dropped_stale;
  result.mean_staleness = details.stats.mean_staleness;
  result.workers_lost = details.workers_lost;
  result.seconds = details.seconds;
  result.plan = plan;
  result.details = std::move(details);
  return result;
}

// Every worker on a thread of this process.
StatusOr<TrainerResult> RunLocalWorkers(const TrainerOptions& options, const TrainerPlan& plan,
                                        const ParameterServerConnector& connect,
                                        const LabeledData& train, const LabeledData& test) {
  const int64_t timeout = plan.data_parallel.timeout_ms;
  DataParallelJob job(
      plan.data_parallel, [connect, timeout](int worker) { return connect(worker, timeout); },
      train, test);
  job.set_progress(options.progress);
  job.set_evaluate_each_epoch(options.evaluate_each_epoch);
  AF_ASSIGN_OR_RETURN(DataParallelResult ran, job.Run());
  return ResultOf(plan, std::move(ran));
}

// This process's worker of an elastic training; a non-chief that lost the ps tasks
// rejoins. Not the chief: running again, it would initialize the shards anew.
StatusOr<TrainerResult> RunElasticWorker(const TrainerOptions& options, const TrainerPlan& plan,
                                         const ParameterServerConnector& connect,
                                         const LabeledData& train, const LabeledData& test) {
  const int task = options.cluster.task;
  DataParallelOptions here = plan.data_parallel;
  if (task != 0) here.model_dir.clear();  // only the chief checkpoints
  here.checkpoint_every = options.recovery.checkpoint_every;
  WorkerOptions worker;
  worker.worker = task;
  worker.progress = options.progress;
  AF_ASSIGN_OR_RETURN(std::unique_ptr<ParameterClient> client, connect(task, here.timeout_ms));
  StatusOr<DataParallelResult> ran = RunDataParallelWorker(here, worker, client.get(), train, test);
  // A worker that lost its ps tasks (its link was cut, or it hung, and the failure
  // detector closed its connections: the shards evicted it meanwhile) rejoins as a
  // new member once it reaches them again.
  const int64_t rejoin_ms = options.recovery.reconnect_timeout_ms;
  while (!ran.ok() && task != 0 && ran.status().code() == Code::kUnavailable) {
    if (options.progress) {
      WorkerProgress lost;
      lost.worker = task;
      lost.failover = "lost the ps tasks (" + ran.status().message() + "); rejoining within " +
                      std::to_string(rejoin_ms) + " ms";
      options.progress(lost);
    }
    client.reset();
    StatusOr<std::unique_ptr<ParameterClient>> again = ConnectWithin(
        rejoin_ms, [&connect, task](int64_t budget_ms) { return connect(task, budget_ms); });
    if (!again.ok()) {
      ran = again.status().WithContext("worker " + std::to_string(task) +
                                       " lost the ps tasks and could not rejoin");
      break;
    }
    client = std::move(again).value();
    ran = RunDataParallelWorker(here, worker, client.get(), train, test);
  }
  AF_RETURN_IF_ERROR(ran.status());
  return ResultOf(plan, std::move(ran).value());
}

// This process's worker of a cluster spec under the recovery supervisor.
StatusOr<TrainerResult> RunSupervisedWorker(const TrainerOptions& options,
                                            const TrainerPlan& plan,
                                            const ParameterServerConnector& connect,
                                            const LabeledData& train, const LabeledData& test) {
  const TrainerCluster& cluster = options.cluster;
  DataParallelOptions dp = plan.data_parallel;
  WorkerOptions worker;
  worker.worker = cluster.task;
  worker.progress = options.progress;
  if (options.evaluate_each_epoch) worker.evaluate_each_epoch = &test;
  RecoveryOptions recovery;
  recovery.max_restarts = options.recovery.max_restarts;
  recovery.reconnect_timeout_ms = options.recovery.reconnect_timeout_ms;
  for (int w = 0; w < plan.cluster.num_tasks(cluster.job); ++w) {
    auto address = plan.cluster.Address(TaskId{cluster.job, w});
    recovery.worker_addresses.push_back(address.ok() ? address->ToString() : "");
  }
  if (cluster.task == 0) {
    recovery.checkpoint_dir = dp.model_dir;
    recovery.checkpoint_every_steps = options.recovery.checkpoint_every;
  } else {
    dp.model_dir.clear();
  }
  recovery.log = options.recovery_log;
  const int64_t connect_timeout = std::min(dp.timeout_ms, recovery.reconnect_timeout_ms);
  RecoverySupervisor supervisor(dp, worker, recovery, [connect, connect_timeout](int w) {
    return connect(w, connect_timeout);
  });
  RecoveryReport report;
  AF_RETURN_IF_ERROR(supervisor.Run(train, test, &report));
  TrainerResult result = ResultOf(plan, report.result);
  result.supervised = true;
  result.recovery = std::move(report);
  return result;
}

}  // namespace

StatusOr<TrainerResult> RunTrainerWorkers(const TrainerOptions& options, const TrainerPlan& plan,
                                          const ParameterServerConnector& connect,
                                          const LabeledData& train, const LabeledData& test) {
  if (!plan.data_parallel.session_factory) {
    return InvalidArgument("RunTrainerWorkers: the plan's data_parallel.session_factory is unset");
  }
  if (options.policy.kind == TrainingPolicyKind::kAllReduce) {
    return InvalidArgument("RunTrainerWorkers: kAllReduce has no ps tasks to connect to "
                           "(RunAllReduceTrainer runs it)");
  }
  if (options.policy.kind == TrainingPolicyKind::kInGraph) {
    return InvalidArgument("RunTrainerWorkers: kInGraph has one client, no workers "
                           "(RunInGraphTrainer runs it)");
  }
  if (options.cluster.kind == TrainerCluster::Kind::kLocal) {
    return RunLocalWorkers(options, plan, connect, train, test);
  }
  if (options.policy.kind == TrainingPolicyKind::kElastic) {
    return RunElasticWorker(options, plan, connect, train, test);
  }
  return RunSupervisedWorker(options, plan, connect, train, test);
}

}  // namespace actorflow
