#include "training/distributed/trainer_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/status_testing.h"
#include "training/distributed/allreduce_trainer.h"
#include "training/distributed/in_graph_trainer.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

TrainerOptions IrisLikeOptions() {
  TrainerOptions options;
  options.model.feature_columns = {NumericColumn{"a"}, NumericColumn{"b"}};
  options.model.hidden_units = {4};
  options.model.n_classes = 3;
  return options;
}

TEST(TrainerOptionsTest, TheDefaultsAreValidAndUseTheOneLearningRate) {
  const TrainerOptions options = IrisLikeOptions();
  EXPECT_OK(ValidateTrainerOptions(options));
  EXPECT_EQ(options.learning_rate, kDefaultLearningRate);
  EXPECT_EQ(ParameterServerOptions().learning_rate, kDefaultLearningRate);
  EXPECT_EQ(options.cluster.kind, TrainerCluster::Kind::kLocal);
  EXPECT_EQ(options.policy.kind, TrainingPolicyKind::kSync);
}

TEST(TrainerOptionsTest, ABadOptionIsInvalidArgumentNamingItsField) {
  const std::vector<std::pair<std::function<void(TrainerOptions*)>, std::string>> cases = {
      {[](TrainerOptions* o) { o->batch_size = 0; }, "TrainerOptions.batch_size"},
      {[](TrainerOptions* o) { o->epochs = 0; }, "TrainerOptions.epochs"},
      {[](TrainerOptions* o) { o->learning_rate = -1; }, "TrainerOptions.learning_rate"},
      {[](TrainerOptions* o) { o->optimizer = "rmsprop"; }, "TrainerOptions.optimizer"},
      {[](TrainerOptions* o) { o->timeout_ms = 0; }, "TrainerOptions.timeout_ms"},
      {[](TrainerOptions* o) { o->cluster.local_workers = 0; },
       "TrainerOptions.cluster.local_workers"},
      {[](TrainerOptions* o) { o->policy.replicas_to_aggregate = -1; },
       "TrainerOptions.policy.replicas_to_aggregate"},
      {[](TrainerOptions* o) {
         o->policy.kind = TrainingPolicyKind::kAsync;
         o->policy.replicas_to_aggregate = 1;
       },
       "TrainerOptions.policy.replicas_to_aggregate"},
      {[](TrainerOptions* o) { o->policy.kind = TrainingPolicyKind::kElastic; },
       "TrainerOptions.policy.kind"},
      {[](TrainerOptions* o) { o->recovery.checkpoint_every = 10; },
       "TrainerOptions.recovery.checkpoint_every"},
      {[](TrainerOptions* o) { o->model.n_classes = 1; }, "TrainerOptions.model"},
  };
  for (const auto& [spoil, field] : cases) {
    TrainerOptions options = IrisLikeOptions();
    spoil(&options);
    const Status status = ValidateTrainerOptions(options);
    EXPECT_EQ(status.code(), Code::kInvalidArgument) << field;
    EXPECT_THAT(status.message(), HasSubstr(field)) << status;
  }
}

TEST(TrainerOptionsTest, ASpecsJobAndTaskAreCheckedAgainstIt) {
  TrainerOptions options = IrisLikeOptions();
  ASSERT_OK_AND_ASSIGN(ClusterSpec spec,
                       ClusterSpec::FromJson(R"({"ps": ["127.0.0.1:1"],
                                                 "worker": ["127.0.0.1:2", "127.0.0.1:3"]})"));
  options.cluster = TrainerCluster::OfSpec(spec, "worker", 1, "c.json");
  ASSERT_OK_AND_ASSIGN(int workers, TrainerWorkers(options));
  EXPECT_EQ(workers, 2);
  options.cluster.task = 2;
  EXPECT_THAT(TrainerWorkers(options).status().message(), HasSubstr("TrainerOptions.cluster.task"));
  options.cluster = TrainerCluster::OfSpec(spec, "trainer", 0, "c.json");
  EXPECT_THAT(TrainerWorkers(options).status().message(),
              HasSubstr("cluster c.json has no such job"));
}

TEST(TrainerOptionsTest, SyncScalesTheRateByTheBatchesAnUpdateAveragesWhenAsked) {
  TrainerOptions options = IrisLikeOptions();
  options.learning_rate = 0.05;
  options.cluster = TrainerCluster::Local(1, 4);
  options.policy.replicas_to_aggregate = 3;
  DataParallelOptions dp = DataParallelOptionsFor(options, 4, 120);
  EXPECT_EQ(dp.ps.mode, UpdateMode::kSync);
  EXPECT_EQ(dp.ps.total_replicas, 4);
  EXPECT_EQ(dp.ps.replicas_to_aggregate, 3);
  EXPECT_DOUBLE_EQ(dp.ps.learning_rate, 0.05);
  options.scale_learning_rate_with_replicas = true;
  dp = DataParallelOptionsFor(options, 4, 120);
  EXPECT_DOUBLE_EQ(dp.ps.learning_rate, 0.15);
  options.policy = TrainingPolicy();
  options.policy.kind = TrainingPolicyKind::kStaleSynchronous;
  options.policy.staleness_bound = 2;
  dp = DataParallelOptionsFor(options, 4, 120);
  EXPECT_EQ(dp.ps.mode, UpdateMode::kStaleSynchronous);
  EXPECT_EQ(dp.ps.staleness_bound, 2);
  EXPECT_DOUBLE_EQ(dp.ps.learning_rate, 0.05);
}

TEST(TrainerOptionsTest, SyncSplitsTheUpdatesBatchOverTheBatchesItAveragesWhenAsked) {
  TrainerOptions options = IrisLikeOptions();
  options.learning_rate = 0.05;
  options.learning_rate_decay_per_epoch = 0.5;
  options.batch_size = 100;
  options.cluster = TrainerCluster::Local(1, 4);
  options.policy.replicas_to_aggregate = 3;
  options.split_batch_over_replicas = true;
  ASSERT_OK(ValidateTrainerOptions(options));
  EXPECT_TRUE(SplitsBatchOverReplicas(options));
  DataParallelOptions dp = DataParallelOptionsFor(options, 4, 1200);
  EXPECT_EQ(dp.batch_size, 33);  // 100 / 3 rows per worker step, 99 per update
  EXPECT_DOUBLE_EQ(dp.ps.learning_rate, 0.05);
  EXPECT_EQ(dp.ps.lr_decay.decay_steps, 13);  // ceil(1200 / 99) updates an epoch
  options.batch_size = 2;  // fewer rows than batches: one row each
  EXPECT_EQ(DataParallelOptionsFor(options, 4, 1200).batch_size, 1);
  // Async applies each worker's batch alone: batch_size rows each.
  options.batch_size = 100;
  options.policy = TrainingPolicy();
  options.policy.kind = TrainingPolicyKind::kAsync;
  EXPECT_FALSE(SplitsBatchOverReplicas(options));
  dp = DataParallelOptionsFor(options, 4, 1200);
  EXPECT_EQ(dp.batch_size, 100);
  EXPECT_EQ(dp.ps.lr_decay.decay_steps, 12);
  // Splitting the batch and scaling the rate answer one question: one at a time.
  options.policy = TrainingPolicy();
  options.scale_learning_rate_with_replicas = true;
  const Status both = ValidateTrainerOptions(options);
  EXPECT_EQ(both.code(), Code::kInvalidArgument);
  EXPECT_THAT(both.message(), HasSubstr("TrainerOptions.split_batch_over_replicas"));
}

TEST(TrainerOptionsTest, AllReduceRefusesPsTasksAndTheFieldsOfThePsPoliciesNamingThem) {
  auto all_reduce = [] {
    TrainerOptions options = IrisLikeOptions();
    options.policy.kind = TrainingPolicyKind::kAllReduce;
    options.cluster = TrainerCluster::Local(/*ps_tasks=*/0, /*workers=*/2);
    return options;
  };
  EXPECT_OK(ValidateTrainerOptions(all_reduce()));
  const std::vector<std::pair<std::function<void(TrainerOptions*)>, std::string>> cases = {
      {[](TrainerOptions* o) { o->cluster.local_ps_tasks = 1; },
       "TrainerOptions.cluster.local_ps_tasks"},
      {[](TrainerOptions* o) { o->policy.replicas_to_aggregate = 2; },
       "TrainerOptions.policy.replicas_to_aggregate"},
      {[](TrainerOptions* o) { o->policy.staleness_bound = 1; },
       "TrainerOptions.policy.staleness_bound"},
      {[](TrainerOptions* o) { o->policy.min_workers = 2; }, "TrainerOptions.policy"},
      {[](TrainerOptions* o) { o->policy.bucket_bytes = 0; },
       "TrainerOptions.policy.bucket_bytes"},
      {[](TrainerOptions* o) { o->policy.members_per_task = 0; },
       "TrainerOptions.policy.members_per_task"},
      {[](TrainerOptions* o) { o->learning_rate_decay_per_epoch = 0.5; },
       "TrainerOptions.learning_rate_decay_per_epoch"},
      {[](TrainerOptions* o) { o->scale_learning_rate_with_replicas = true; },
       "TrainerOptions.scale_learning_rate_with_replicas"},
      {[](TrainerOptions* o) { o->split_batch_over_replicas = true; },
       "TrainerOptions.split_batch_over_replicas"},
      {[](TrainerOptions* o) { o->checkpoint_dir = "/tmp/ckpt"; },
       "TrainerOptions.checkpoint_dir"},
      // The all-reduce fields under another policy.
      {[](TrainerOptions* o) {
         o->policy.kind = TrainingPolicyKind::kSync;
         o->cluster.local_ps_tasks = 1;
         o->policy.bucket_bytes = 1024;
       },
       "TrainerOptions.policy bucket_bytes"},
      {[](TrainerOptions* o) {
         o->policy.kind = TrainingPolicyKind::kSync;
         o->cluster.local_ps_tasks = 0;
       },
       "TrainerOptions.cluster.local_ps_tasks"},
  };
  for (const auto& [spoil, field] : cases) {
    TrainerOptions options = all_reduce();
    spoil(&options);
    const Status status = ValidateTrainerOptions(options);
    EXPECT_EQ(status.code(), Code::kInvalidArgument) << field;
    EXPECT_THAT(status.message(), HasSubstr(field)) << status;
  }
}

TEST(TrainerOptionsTest, AllReduceMembersAreEveryCpuOfEveryTaskAndASpecRunsItsOwnTasks) {
  TrainerOptions options = IrisLikeOptions();
  options.policy.kind = TrainingPolicyKind::kAllReduce;
  options.policy.members_per_task = 2;
  options.policy.bucket_bytes = 4096;
  ASSERT_OK_AND_ASSIGN(ClusterSpec spec,
                       ClusterSpec::FromJson(R"({"worker": ["127.0.0.1:2", "127.0.0.1:3"]})"));
  options.cluster = TrainerCluster::OfSpec(spec, "worker", 1, "c.json");
  ASSERT_OK(ValidateTrainerOptions(options));
  ASSERT_OK_AND_ASSIGN(int members, TrainerWorkers(options));  // no "ps" job needed
  EXPECT_EQ(members, 4);
  ASSERT_OK_AND_ASSIGN(AllReduceTrainingOptions ar,
                       AllReduceOptionsFor(options, std::vector<SessionFactory>(2)));
  EXPECT_EQ(ar.devices, (std::vector<std::string>{"/job:worker/replica:0/task:0/device:CPU:0",
                                                  "/job:worker/replica:0/task:0/device:CPU:1",
                                                  "/job:worker/replica:0/task:1/device:CPU:0",
                                                  "/job:worker/replica:0/task:1/device:CPU:1"}));
  EXPECT_EQ(ar.session_factories.size(), 4u);
  EXPECT_EQ(ar.local_workers, (std::vector<int>{2, 3}));  // task 1's members
  EXPECT_EQ(ar.bucket_bytes, 4096);

  options.cluster = TrainerCluster::Local(0, 2);
  ASSERT_OK_AND_ASSIGN(ar, AllReduceOptionsFor(options, std::vector<SessionFactory>(2)));
  EXPECT_TRUE(ar.local_workers.empty());  // a local cluster runs every member
}

TEST(TrainerOptionsTest, InGraphMayRepeatTheSetUntilMaxStepsAndPlacesATowerPerWorker) {
  TrainerOptions options = IrisLikeOptions();
  options.policy.kind = TrainingPolicyKind::kInGraph;
  options.cluster = TrainerCluster::Local(/*ps_tasks=*/0, /*workers=*/3);
  options.epochs = 0;
  EXPECT_THAT(ValidateTrainerOptions(options).message(), HasSubstr("TrainerOptions.epochs"));
  options.max_steps = 100;
  EXPECT_OK(ValidateTrainerOptions(options));
  EXPECT_EQ(PlannedInGraphSteps(options, 3, 120), 100);
  options.epochs = 2;  // 120 rows, 3 towers x 32 rows a step: 2 steps an epoch
  EXPECT_EQ(PlannedInGraphSteps(options, 3, 120), 4);

  InGraphReplication cpus = InGraphReplicationFor(options, 3, 0);
  EXPECT_EQ(cpus.ps_devices, (std::vector<std::string>{"/cpu:0"}));
  EXPECT_EQ(cpus.tower_devices, (std::vector<std::string>{"/cpu:0", "/cpu:1", "/cpu:2"}));
  InGraphReplication tasks = InGraphReplicationFor(options, 2, 2);
  EXPECT_EQ(tasks.ps_devices, (std::vector<std::string>{"/job:ps/task:0", "/job:ps/task:1"}));
  EXPECT_EQ(tasks.tower_devices,
            (std::vector<std::string>{"/job:worker/task:0", "/job:worker/task:1"}));

  options.cluster.local_ps_tasks = -1;
  EXPECT_THAT(ValidateTrainerOptions(options).message(),
              HasSubstr("TrainerOptions.cluster.local_ps_tasks"));
}

}  // namespace
}  // namespace actorflow
