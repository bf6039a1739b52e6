#include "actors/trainer/cluster_trainer.h"

#include <atomic>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/status_testing.h"
#include "training/distributed/iris_testing.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

// Iris as the drivers' tests train it, through the library trainer.
TrainerOptions IrisTrainerOptions(const IrisData& iris) {
  TrainerOptions options;
  options.model.feature_columns = iris.columns;
  options.model.hidden_units = {10, 10};
  options.model.n_classes = 3;
  options.seed = 3;
  options.batch_size = 16;
  options.epochs = 30;
  options.learning_rate = 0.2;
  options.cluster = TrainerCluster::Local(/*ps_tasks=*/1, /*workers=*/2);
  return options;
}

TEST(ClusterTrainerTest, IrisOnALocalClusterOfTwoSyncWorkersLearns) {
  ASSERT_OK_AND_ASSIGN(IrisData iris, LoadIris());
  TrainerOptions options = IrisTrainerOptions(iris);
  std::atomic<int64_t> pushes{0};
  options.progress = [&pushes](const WorkerProgress&) { ++pushes; };
  int started = 0;
  options.on_start = [&started](const TrainerPlan& plan) {
    ++started;
    EXPECT_EQ(plan.workers, 2);
    EXPECT_EQ(plan.data_parallel.ps.replicas_to_aggregate, 2);
    EXPECT_EQ(plan.cluster.num_tasks("ps"), 1);
    return Status::OK();
  };
  ASSERT_OK_AND_ASSIGN(TrainerResult result, Train(options, iris.train, iris.test));
  EXPECT_EQ(started, 1);
  EXPECT_GE(result.accuracy, 0.9);
  EXPECT_GT(result.global_step, 0);
  EXPECT_EQ(result.updates_applied, result.global_step);
  EXPECT_EQ(result.dropped_stale, 0);
  EXPECT_TRUE(result.workers_lost.empty());
  EXPECT_EQ(pushes.load(), 2 * result.global_step);  // every update averages both
  EXPECT_FALSE(result.supervised);
}

TEST(ClusterTrainerTest, ABadOptionIsRefusedNamingItsFieldBeforeAnyClusterStarts) {
  ASSERT_OK_AND_ASSIGN(IrisData iris, LoadIris());
  TrainerOptions options = IrisTrainerOptions(iris);
  options.policy.replicas_to_aggregate = 3;  // of 2 workers
  bool started = false;
  options.on_start = [&started](const TrainerPlan&) {
    started = true;
    return Status::OK();
  };
  StatusOr<TrainerResult> result = Train(options, iris.train, iris.test);
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("TrainerOptions.policy.replicas_to_aggregate"));
  EXPECT_FALSE(started);

  options = IrisTrainerOptions(iris);
  options.batch_size = 0;
  result = Train(options, iris.train, iris.test);
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("TrainerOptions.batch_size"));
}

TEST(ClusterTrainerTest, AnAsyncRunPushesEveryWorkersShare) {
  ASSERT_OK_AND_ASSIGN(IrisData iris, LoadIris());
  TrainerOptions options = IrisTrainerOptions(iris);
  options.policy.kind = TrainingPolicyKind::kAsync;
  options.epochs = 10;
  ASSERT_OK_AND_ASSIGN(TrainerResult result, Train(options, iris.train, iris.test));
  int64_t steps = 0;
  for (const WorkerReport& w : result.details.workers) steps += w.steps;
  EXPECT_EQ(result.updates_applied, steps);
  EXPECT_EQ(result.plan.data_parallel.ps.mode, UpdateMode::kAsync);
  EXPECT_GT(result.accuracy, 0.6);
}

TEST(ClusterTrainerTest, IrisAllReducedOnTwoLocalWorkersLearnsWithIdenticalReplicas) {
  ASSERT_OK_AND_ASSIGN(IrisData iris, LoadIris());
  TrainerOptions options = IrisTrainerOptions(iris);
  options.cluster = TrainerCluster::Local(/*ps_tasks=*/0, /*workers=*/2);
  options.policy.kind = TrainingPolicyKind::kAllReduce;
  options.policy.bucket_bytes = 256;  // several buckets per step
  std::atomic<int64_t> steps{0};
  options.progress = [&steps](const WorkerProgress&) { ++steps; };
  int started = 0;
  options.on_start = [&started](const TrainerPlan& plan) {
    ++started;
    EXPECT_EQ(plan.workers, 2);
    EXPECT_EQ(plan.cluster.num_tasks("worker"), 2);
    EXPECT_EQ(plan.cluster.num_tasks("ps"), 0);
    EXPECT_EQ(plan.allreduce.devices.size(), 2u);
    return Status::OK();
  };
  ASSERT_OK_AND_ASSIGN(TrainerResult result, Train(options, iris.train, iris.test));
  EXPECT_EQ(started, 1);
  EXPECT_GE(result.accuracy, 0.9);
  EXPECT_TRUE(result.allreduce.replicas_identical);
  EXPECT_GT(result.allreduce.buckets, 1);
  EXPECT_FALSE(result.allreduce.weights_hash.empty());
  ASSERT_EQ(result.allreduce.workers.size(), 2u);
  EXPECT_EQ(result.allreduce.workers[0].steps, result.global_step);
  EXPECT_EQ(result.allreduce.workers[1].steps, result.global_step);
  EXPECT_EQ(steps.load(), 2 * result.global_step);
}

TEST(ClusterTrainerTest, AllReduceWithPsTasksIsRefusedNamingTheFieldBeforeAnyClusterStarts) {
  ASSERT_OK_AND_ASSIGN(IrisData iris, LoadIris());
  TrainerOptions options = IrisTrainerOptions(iris);
  options.policy.kind = TrainingPolicyKind::kAllReduce;  // on Local(1, 2): a ps task
  bool started = false;
  options.on_start = [&started](const TrainerPlan&) {
    started = true;
    return Status::OK();
  };
  StatusOr<TrainerResult> result = Train(options, iris.train, iris.test);
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("TrainerOptions.cluster.local_ps_tasks"));

  options.cluster = TrainerCluster::Local(0, 2);
  options.policy.replicas_to_aggregate = 2;  // a sync-only field
  result = Train(options, iris.train, iris.test);
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("TrainerOptions.policy.replicas_to_aggregate"));
  EXPECT_FALSE(started);
}

TEST(ClusterTrainerTest, InGraphIrisGivesTheSameResultOnLocalCpusAsOnALocalCluster) {
  ASSERT_OK_AND_ASSIGN(IrisData iris, LoadIris());
  TrainerOptions options = IrisTrainerOptions(iris);
  options.policy.kind = TrainingPolicyKind::kInGraph;
  options.epochs = 0;
  options.max_steps = 150;  // the set repeats until then
  int64_t reported = 0;
  options.progress = [&reported](const WorkerProgress& p) {
    EXPECT_EQ(p.worker, 0);
    EXPECT_EQ(p.planned_steps, 150);
    ++reported;
  };
  options.cluster = TrainerCluster::Local(/*ps_tasks=*/0, /*workers=*/2);  // 2 CPUs here
  ASSERT_OK_AND_ASSIGN(TrainerResult cpus, Train(options, iris.train, iris.test));
  EXPECT_EQ(cpus.plan.in_graph.tower_devices, (std::vector<std::string>{"/cpu:0", "/cpu:1"}));
  EXPECT_EQ(reported, 150);
  EXPECT_EQ(cpus.global_step, 150);
  EXPECT_EQ(cpus.in_graph.train.steps, 150);
  EXPECT_GE(cpus.accuracy, 0.9);

  options.cluster = TrainerCluster::Local(/*ps_tasks=*/1, /*workers=*/2);
  ASSERT_OK_AND_ASSIGN(TrainerResult tasks, Train(options, iris.train, iris.test));
  EXPECT_EQ(tasks.plan.in_graph.ps_devices, (std::vector<std::string>{"/job:ps/task:0"}));
  EXPECT_EQ(tasks.plan.cluster.num_tasks("worker"), 2);
  // The same graph, seeds and batches: the placement changes nothing.
  EXPECT_EQ(tasks.accuracy, cpus.accuracy);
  EXPECT_NEAR(tasks.loss, cpus.loss, 1e-6);
}

TEST(ClusterTrainerTest, InGraphRefusesTheFieldsOfTheOtherPoliciesNamingThem) {
  ASSERT_OK_AND_ASSIGN(IrisData iris, LoadIris());
  TrainerOptions options = IrisTrainerOptions(iris);
  options.policy.kind = TrainingPolicyKind::kInGraph;
  options.policy.replicas_to_aggregate = 1;
  StatusOr<TrainerResult> result = Train(options, iris.train, iris.test);
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("TrainerOptions.policy.replicas_to_aggregate"));

  options = IrisTrainerOptions(iris);
  options.max_steps = 10;  // kSync runs whole epochs
  result = Train(options, iris.train, iris.test);
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("TrainerOptions.max_steps"));
}


// Iris on a simulated cluster: 1 ps task, `workers` workers, `steps` steps.
TrainerOptions SimulatedIrisOptions(const IrisData& iris, int workers, int64_t steps,
                                    const std::string& faults = "") {
  TrainerOptions options = IrisTrainerOptions(iris);
  TrainerSimulation simulation;
  simulation.shape = *ParseSimClusterSpec("sim:ps=1,worker=" + std::to_string(workers));
  if (!faults.empty()) {
    simulation.faults = *ParseFaultPlan(faults, *simulation.shape.ToClusterSpec());
  }
  simulation.step_us = 1000;
  options.cluster = TrainerCluster::Simulated(simulation);
  options.max_steps = steps;
  return options;
}

TEST(ClusterTrainerTest, OnASimulatedClusterTheSameOptionsGiveTheSameRunAndItLearns) {
  ASSERT_OK_AND_ASSIGN(IrisData iris, LoadIris());
  const TrainerOptions options = SimulatedIrisOptions(iris, 2, 200);
  ASSERT_OK_AND_ASSIGN(TrainerResult first, Train(options, iris.train, iris.test));
  ASSERT_OK_AND_ASSIGN(TrainerResult again, Train(options, iris.train, iris.test));
  ASSERT_NE(first.simulation, nullptr);
  EXPECT_OK(SimulatedRunVerdict(*first.simulation));
  EXPECT_EQ(first.global_step, 200);  // sync: the global step that ends the run
  EXPECT_EQ(first.updates_applied, 200);
  EXPECT_GE(first.accuracy, 0.8);
  EXPECT_EQ(first.simulation->report.invariant_violations(), 0);
  EXPECT_EQ(first.simulation->event_log_hash, again.simulation->event_log_hash);
  EXPECT_EQ(first.simulation->report.weights_hash, again.simulation->report.weights_hash);
  EXPECT_EQ(first.plan.data_parallel.ps.replicas_to_aggregate, 2);

  TrainerOptions other_seed = options;
  other_seed.seed = 4;
  ASSERT_OK_AND_ASSIGN(TrainerResult other, Train(other_seed, iris.train, iris.test));
  EXPECT_NE(first.simulation->report.weights_hash, other.simulation->report.weights_hash);
}

TEST(ClusterTrainerTest, ASimulatedWorkerKilledMidTrainingIsReportedAndTheOthersFinish) {
  ASSERT_OK_AND_ASSIGN(IrisData iris, LoadIris());
  TrainerOptions options = SimulatedIrisOptions(
      iris, 3, 40, R"({"faults": [{"kill": "/job:worker/task:2", "at_step": 10}]})");
  options.policy.kind = TrainingPolicyKind::kAsync;
  ASSERT_OK_AND_ASSIGN(TrainerResult result, Train(options, iris.train, iris.test));
  EXPECT_OK(SimulatedRunVerdict(*result.simulation));
  EXPECT_EQ(result.workers_lost, std::vector<int>{2});
  const auto& workers = result.simulation->report.workers;
  ASSERT_EQ(workers.size(), 3u);
  EXPECT_EQ(workers[0].steps, 40);  // async: each live worker's pushes
  EXPECT_EQ(workers[1].steps, 40);
  EXPECT_LT(workers[2].steps, 40);
  EXPECT_EQ(result.simulation->report.invariant_violations(), 0);
}

TEST(ClusterTrainerTest, AllReduceAndInGraphOnASimulatedClusterLearnAndReplay) {
  ASSERT_OK_AND_ASSIGN(IrisData iris, LoadIris());
  TrainerOptions allreduce = SimulatedIrisOptions(iris, 3, 100);
  allreduce.cluster.simulation.shape = *ParseSimClusterSpec("sim:worker=3");
  allreduce.policy.kind = TrainingPolicyKind::kAllReduce;
  ASSERT_OK_AND_ASSIGN(TrainerResult first, Train(allreduce, iris.train, iris.test));
  ASSERT_OK_AND_ASSIGN(TrainerResult again, Train(allreduce, iris.train, iris.test));
  EXPECT_OK(SimulatedRunVerdict(*first.simulation));
  EXPECT_EQ(first.global_step, 100);
  EXPECT_GE(first.accuracy, 0.8);
  EXPECT_TRUE(first.allreduce.replicas_identical);
  EXPECT_EQ(first.simulation->report.invariants.at(0).name, "identical weights");
  EXPECT_EQ(first.simulation->event_log_hash, again.simulation->event_log_hash);
  EXPECT_EQ(first.allreduce.weights_hash, again.allreduce.weights_hash);

  TrainerOptions in_graph = SimulatedIrisOptions(iris, 2, 100);
  in_graph.policy.kind = TrainingPolicyKind::kInGraph;
  in_graph.epochs = 0;  // repeat the rows until max_steps
  ASSERT_OK_AND_ASSIGN(TrainerResult one, Train(in_graph, iris.train, iris.test));
  ASSERT_OK_AND_ASSIGN(TrainerResult two, Train(in_graph, iris.train, iris.test));
  EXPECT_EQ(one.in_graph.train.steps, 100);
  EXPECT_GE(one.accuracy, 0.8);
  EXPECT_FALSE(one.simulation->report.weights_hash.empty());
  EXPECT_EQ(one.simulation->report.weights_hash, two.simulation->report.weights_hash);
  EXPECT_EQ(one.simulation->event_log_hash, two.simulation->event_log_hash);
}

TEST(ClusterTrainerTest, ASimulatedClusterRefusesWhatItCannotRunNamingTheField) {
  ASSERT_OK_AND_ASSIGN(IrisData iris, LoadIris());
  TrainerOptions elastic = SimulatedIrisOptions(iris, 2, 10);
  elastic.policy.kind = TrainingPolicyKind::kElastic;
  EXPECT_THAT(Train(elastic, iris.train, iris.test).status().message(),
              HasSubstr("TrainerOptions.policy.kind"));
  TrainerOptions killing_allreduce = SimulatedIrisOptions(
      iris, 2, 10, R"({"faults": [{"kill": "/job:worker/task:1", "at_step": 3}]})");
  killing_allreduce.cluster.simulation.shape = *ParseSimClusterSpec("sim:ps=1,worker=2");
  killing_allreduce.policy.kind = TrainingPolicyKind::kAllReduce;
  EXPECT_THAT(Train(killing_allreduce, iris.train, iris.test).status().message(),
              HasSubstr("TrainerOptions.cluster.simulation.faults"));
  TrainerOptions no_ps = SimulatedIrisOptions(iris, 2, 10);
  no_ps.cluster.simulation.shape = *ParseSimClusterSpec("sim:worker=2");
  EXPECT_THAT(Train(no_ps, iris.train, iris.test).status().message(),
              HasSubstr("TrainerOptions.cluster.simulation.shape"));
  TrainerOptions too_many = SimulatedIrisOptions(iris, 2, 10);
  too_many.policy.replicas_to_aggregate = 3;
  EXPECT_THAT(Train(too_many, iris.train, iris.test).status().message(),
              HasSubstr("TrainerOptions.policy.replicas_to_aggregate"));
}

}  // namespace
}  // namespace actorflow
