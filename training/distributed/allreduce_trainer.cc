#include "training/distributed/allreduce_trainer.h"

#include <algorithm>
#include <string>
#include <utility>

namespace actorflow {

StatusOr<AllReduceTrainingOptions> AllReduceOptionsFor(
    const TrainerOptions& options, const std::vector<SessionFactory>& task_sessions) {
  if (options.policy.kind != TrainingPolicyKind::kAllReduce) {
    return InvalidArgument("AllReduceOptionsFor: TrainerOptions.policy.kind is not kAllReduce");
  }
  const TrainerCluster& cluster = options.cluster;
  const bool spec = cluster.kind == TrainerCluster::Kind::kSpec;
  const int tasks = static_cast<int>(task_sessions.size());
  if (tasks == 0) return InvalidArgument("AllReduceOptionsFor: no worker task to train on");
  if (spec && (cluster.task < 0 || cluster.task >= tasks)) {
    return InvalidArgument("AllReduceOptionsFor: TrainerOptions.cluster.task " +
                           std::to_string(cluster.task) + " is not one of the " +
                           std::to_string(tasks) + " worker tasks");
  }
  AllReduceTrainingOptions ar;
  ar.spec = options.model;
  ar.seed = options.seed;
  ar.batch_size = options.batch_size;
  ar.epochs = options.epochs;
  ar.optimizer = options.optimizer;
  ar.learning_rate = options.learning_rate;
  ar.bucket_bytes = options.policy.bucket_bytes;
  ar.timeout_ms = options.timeout_ms;
  const std::string job = spec ? cluster.job : "worker";
  const int cpus = options.policy.members_per_task;
  for (int task = 0; task < tasks; ++task) {
    for (int cpu = 0; cpu < cpus; ++cpu) {
      if (spec && task == cluster.task) {
        ar.local_workers.push_back(static_cast<int>(ar.devices.size()));
      }
      ar.devices.push_back("/job:" + job + "/replica:0/task:" + std::to_string(task) +
                           "/device:CPU:" + std::to_string(cpu));
      ar.session_factories.push_back(task_sessions[task]);
    }
  }
  ar.log = options.recovery_log;
  if (options.progress) {
    const WorkerProgressFn progress = options.progress;
    const int64_t epochs = options.epochs;
    ar.progress = [progress, epochs](int worker, int64_t step, int64_t planned, double loss) {
      WorkerProgress p;
      p.worker = worker;
      p.step = step;
      p.planned_steps = planned;
      p.epoch = (step - 1) / std::max<int64_t>(1, planned / epochs);
      p.loss = loss;
      p.global_step = step;  // every step is one all-reduce of every member
      progress(p);
    };
  }
  return ar;
}

StatusOr<TrainerResult> RunAllReduceTrainer(const TrainerPlan& plan, const LabeledData& train,
                                            const LabeledData& test) {
  AF_ASSIGN_OR_RETURN(AllReduceTrainingResult ran, TrainWithAllReduce(plan.allreduce, train, test));
  const std::vector<int>& local = plan.allreduce.local_workers;
  if (!local.empty()) {
    std::vector<AllReduceWorkerReport> here;
    for (AllReduceWorkerReport& w : ran.workers) {
      if (std::find(local.begin(), local.end(), w.worker) != local.end()) {
        here.push_back(std::move(w));
      }
    }
    ran.workers = std::move(here);
  }
  TrainerResult result;
  result.accuracy = ran.eval.accuracy;
  result.loss = ran.eval.loss;
  result.global_step = ran.eval.global_step;
  result.seconds = ran.seconds;
  result.plan = plan;
  result.allreduce = std::move(ran);
  return result;
}

}  // namespace actorflow
