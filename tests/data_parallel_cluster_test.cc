// Between-graph data-parallel training on a LocalCluster: the ps tasks are real
// servers on 127.0.0.1 in this process, the workers are DataParallelJob threads that
// reach them through ConnectParameterServers. The three update modes train Iris; a
// straggler with a backup worker; a worker lost during async and during sync
// training with a backup. Rates are measured and printed, never asserted.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "actors/local_cluster.h"
#include "actors/parameter_client_impl.h"
#include "actors/session_factory.h"
#include "training/csv_dataset.h"
#include "training/data_parallel.h"

namespace actorflow {
namespace {

std::string DataPath(const std::string& file) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return std::string(srcdir ? srcdir : ".") + "/actorflow/examples/data/" + file;
}

class DataParallelClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto train = LoadCsv(DataPath("iris_training.csv"));
    ASSERT_TRUE(train.ok()) << train.status();
    auto test = LoadCsv(DataPath("iris_test.csv"));
    ASSERT_TRUE(test.ok()) << test.status();
    train_ = {train->features, train->labels};
    test_ = {test->features, test->labels};
    auto columns = NormalizedNumericColumns(train->feature_names, train->features);
    ASSERT_TRUE(columns.ok()) << columns.status();
    columns_ = *columns;
  }

  DataParallelOptions Options(UpdateMode mode, int workers, int aggregate = 0) const {
    DataParallelOptions options;
    options.spec.feature_columns = columns_;
    options.spec.hidden_units = {10, 10};
    options.spec.n_classes = 3;
    options.seed = 3;
    options.batch_size = 16;
    options.epochs = 30;
    options.ps.mode = mode;
    options.ps.total_replicas = workers;
    options.ps.replicas_to_aggregate = aggregate > 0 ? aggregate : workers;
    options.ps.optimizer = "sgd";
    options.ps.learning_rate = 0.2;
    options.session_factory = [](const Graph* graph) {
      return NewSession(graph, SessionOptions());
    };
    options.timeout_ms = 30000;
    return options;
  }

  // A job on a fresh cluster (a ps task's shards are initialized once).
  std::unique_ptr<DataParallelJob> Job(const DataParallelOptions& options) {
    auto cluster = LocalCluster::Start({{"ps", 1}});
    EXPECT_TRUE(cluster.ok()) << cluster.status();
    if (!cluster.ok()) return nullptr;
    clusters_.push_back(std::move(*cluster));
    const ClusterSpec spec = clusters_.back()->spec();
    const ParameterServerOptions ps = options.ps;
    return std::make_unique<DataParallelJob>(
        options,
        [spec, ps](int) { return ConnectParameterServers(spec, "ps", ps, 10000); }, train_,
        test_);
  }

  LabeledData train_;
  LabeledData test_;
  std::vector<NumericColumn> columns_;
  std::vector<std::unique_ptr<LocalCluster>> clusters_;
};

TEST_F(DataParallelClusterTest, SyncWithTwoWorkersStepsInLockStepAndLearnsIris) {
  auto result = Job(Options(UpdateMode::kSync, 2))->Run();
  ASSERT_TRUE(result.ok()) << result.status();
  const int64_t per_worker = 30 * StepsPerEpoch(120, 2, 16);
  EXPECT_EQ(result->stats.updates_applied, per_worker);
  EXPECT_EQ(result->stats.gradients_dropped_stale, 0);
  EXPECT_EQ(result->eval.global_step, per_worker);
  EXPECT_EQ(result->workers[0].steps, per_worker);
  EXPECT_EQ(result->workers[1].steps, per_worker);
  EXPECT_TRUE(result->workers_lost.empty());
  EXPECT_GE(result->eval.accuracy, 0.9);
}

TEST_F(DataParallelClusterTest, AsyncWithTwoWorkersAppliesEveryPushAndLearnsIris) {
  auto result = Job(Options(UpdateMode::kAsync, 2))->Run();
  ASSERT_TRUE(result.ok()) << result.status();
  const int64_t per_worker = 30 * StepsPerEpoch(120, 2, 16);
  EXPECT_EQ(result->stats.updates_applied, 2 * per_worker);
  EXPECT_EQ(result->stats.gradients_dropped_stale, 0);
  EXPECT_TRUE(result->workers_lost.empty());
  EXPECT_GE(result->eval.accuracy, 0.9);
}

TEST_F(DataParallelClusterTest, StaleSynchronousWithTwoWorkersLearnsIris) {
  DataParallelOptions options = Options(UpdateMode::kStaleSynchronous, 2);
  options.ps.staleness_bound = 1;
  auto result = Job(options)->Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->stats.updates_applied, 2 * 30 * StepsPerEpoch(120, 2, 16));
  EXPECT_LE(result->stats.mean_staleness, 2.0);
  EXPECT_GE(result->eval.accuracy, 0.9);
}

// One of 3 workers sleeps (a timed wait, not a busy loop) 10x its own step time
// after every step; with 2 of 3 gradients aggregated per update, the run goes at
// the pace of the two others and the straggler's late gradients are dropped.
TEST_F(DataParallelClusterTest, SyncWithABackupWorkerOutrunsAStragglerAndDropsItsStaleGradients) {
  DataParallelOptions options = Options(UpdateMode::kSync, 3, /*aggregate=*/2);
  options.epochs = 40;
  auto baseline = Job(options)->Run();
  ASSERT_TRUE(baseline.ok()) << baseline.status();
  auto job = Job(options);
  job->set_delay(2, /*delay_factor=*/10.0);
  auto straggled = job->Run();
  ASSERT_TRUE(straggled.ok()) << straggled.status();

  EXPECT_EQ(straggled->stats.updates_applied, SyncTargetGlobalStep(options, 120));
  EXPECT_GT(straggled->stats.gradients_dropped_stale, 0);
  EXPECT_GT(straggled->workers[2].delay_seconds, 0.0);
  EXPECT_TRUE(straggled->workers_lost.empty());
  const double base_rate = baseline->stats.updates_applied / baseline->workers[0].seconds;
  const double rate = straggled->stats.updates_applied / straggled->workers[0].seconds;
  std::printf("straggler: %.0f updates/s without, %.0f with (ratio %.2f); dropped %lld of %lld\n",
              base_rate, rate, base_rate / rate,
              static_cast<long long>(straggled->stats.gradients_dropped_stale),
              static_cast<long long>(straggled->workers[0].steps + straggled->workers[1].steps +
                                     straggled->workers[2].steps));
  RecordProperty("rate_without_straggler", std::to_string(base_rate));
  RecordProperty("rate_with_straggler", std::to_string(rate));
}

TEST_F(DataParallelClusterTest, AsyncWorkerLostMidRunIsReportedAndTheOthersFinish) {
  DataParallelOptions options = Options(UpdateMode::kAsync, 3);
  options.epochs = 10;
  auto job = Job(options);
  DataParallelJob* raw = job.get();
  job->set_progress([raw](const WorkerProgress& p) {
    if (p.worker == 1 && p.step == 3) raw->StopWorker(1);
  });
  auto result = job->Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->workers_lost, std::vector<int>{1});
  EXPECT_EQ(result->workers[1].status.code(), Code::kCancelled);
  const int64_t planned = 10 * StepsPerEpoch(120, 3, 16);
  EXPECT_EQ(result->workers[0].steps, planned);
  EXPECT_EQ(result->workers[2].steps, planned);
  EXPECT_EQ(result->stats.updates_applied, 2 * planned + 3);
}

TEST_F(DataParallelClusterTest, SyncWithABackupWorkerContinuesWhenAWorkerIsLost) {
  DataParallelOptions options = Options(UpdateMode::kSync, 3, /*aggregate=*/2);
  options.epochs = 10;
  auto job = Job(options);
  DataParallelJob* raw = job.get();
  job->set_progress([raw](const WorkerProgress& p) {
    if (p.worker == 2 && p.step == 2) raw->StopWorker(2);
  });
  auto result = job->Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->workers_lost, std::vector<int>{2});
  EXPECT_EQ(result->stats.updates_applied, SyncTargetGlobalStep(options, 120));
  EXPECT_TRUE(result->workers[0].status.ok()) << result->workers[0].status;
  EXPECT_TRUE(result->workers[1].status.ok()) << result->workers[1].status;
  EXPECT_GE(result->eval.accuracy, 0.8);
}

}  // namespace
}  // namespace actorflow
