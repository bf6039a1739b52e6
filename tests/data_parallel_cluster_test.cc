// Between-graph data-parallel training on a LocalCluster: the ps tasks are real
// servers on 127.0.0.1 in this process, the workers are DataParallelJob threads that
// reach them through ConnectParameterServers. The three update modes train Iris; a
// straggler held back while the backup workers make every update; a worker lost
// during async and during sync training with a backup.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actors/cluster/local_cluster_fixture.h"
#include "actors/cluster/session_factory.h"
#include "graph/status_testing.h"
#include "training/distributed/data_parallel.h"
#include "training/distributed/iris_testing.h"

namespace actorflow {
namespace {

class DataParallelClusterTest : public LocalClusterTest {
 protected:
  void SetUp() override { ASSERT_OK_AND_ASSIGN(iris_, LoadIris()); }

  DataParallelOptions Options(UpdateMode mode, int workers, int aggregate = 0) const {
    DataParallelOptions options = IrisDataParallelOptions(iris_, mode, workers, aggregate);
    options.session_factory = [](const Graph* graph) {
      return NewSession(graph, SessionOptions());
    };
    options.timeout_ms = 30000;
    return options;
  }

  // A job on a fresh cluster (a ps task's shards are initialized once).
  std::unique_ptr<DataParallelJob> Job(const DataParallelOptions& options) {
    LocalCluster* cluster = StartCluster({{"ps", 1}});
    if (cluster == nullptr) return nullptr;
    return std::make_unique<DataParallelJob>(options, PsClients(*cluster, options.ps),
                                             iris_.train, iris_.test);
  }

  IrisData iris_;
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

// Async runs twice the sync run's epochs: how stale each push is depends on how the
// two workers' threads are scheduled. On a loaded machine, 40 runs of 30 epochs
// ended at 28 to 30 of the 30 test rows, and a 30-epoch run across processes
// (tests/data_parallel_process_test.cc) once ended at 26.
TEST_F(DataParallelClusterTest, AsyncWithTwoWorkersAppliesEveryPushAndLearnsIris) {
  DataParallelOptions options = Options(UpdateMode::kAsync, 2);
  options.epochs = 60;
  auto result = Job(options)->Run();
  ASSERT_TRUE(result.ok()) << result.status();
  const int64_t per_worker = 60 * StepsPerEpoch(120, 2, 16);
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

// With 2 of 3 gradients aggregated per update, the two other workers make every
// update on their own while worker 2 is held back after its first step (a wait on a
// condition, bounded; no sleep): the hold ends only once their progress reports the
// run's last global step, so a run that needed the straggler could not get there.
// Released, the straggler pushes once more on the values it pulled before the hold;
// that gradient is stale and dropped, and it stops at the reached target.
TEST_F(DataParallelClusterTest, SyncWithABackupWorkerOutrunsAStragglerAndDropsItsStaleGradients) {
  DataParallelOptions options = Options(UpdateMode::kSync, 3, /*aggregate=*/2);
  options.epochs = 10;
  const int64_t target = SyncTargetGlobalStep(options, 120);
  std::unique_ptr<DataParallelJob> job = Job(options);
  ASSERT_NE(job, nullptr);

  std::mutex mu;
  std::condition_variable progressed;
  int64_t backups_global_step = 0;  // the highest one workers 0 and 1 reported
  bool held = false;
  bool outrun = false;  // the backups reached `target` while the straggler was held
  job->set_progress([&](const WorkerProgress& p) {
    std::unique_lock<std::mutex> lock(mu);
    if (p.worker != 2) {
      backups_global_step = std::max(backups_global_step, p.global_step);
      progressed.notify_all();
      return;
    }
    if (held) return;
    held = true;
    outrun = progressed.wait_for(lock, std::chrono::seconds(60),
                                 [&] { return backups_global_step >= target; });
  });
  auto result = job->Run();
  ASSERT_OK(result);

  EXPECT_TRUE(outrun) << "the backups stopped at global step " << backups_global_step << " of "
                      << target << " without the straggler";
  EXPECT_EQ(result->stats.updates_applied, target);
  EXPECT_EQ(result->eval.global_step, target);
  const WorkerReport& straggler = result->workers[2];
  EXPECT_EQ(straggler.steps, 2) << "one step before the hold, one stale push after it";
  // The push after the hold is always stale (the backups finished meanwhile); the one
  // before it may have joined an update or come after the backups' first one.
  EXPECT_GE(straggler.dropped_stale, 1);
  EXPECT_LE(straggler.applied, 1);
  EXPECT_EQ(straggler.applied + straggler.dropped_stale, straggler.steps);
  EXPECT_TRUE(straggler.status.ok()) << straggler.status;
  // Every update but the one the straggler may have joined took a gradient of each
  // backup.
  EXPECT_GE(result->workers[0].applied, target - 1);
  EXPECT_GE(result->workers[1].applied, target - 1);
  EXPECT_GT(result->stats.gradients_dropped_stale, 0);
  EXPECT_TRUE(result->workers_lost.empty());
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
