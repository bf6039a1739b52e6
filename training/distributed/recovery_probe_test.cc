// The chief's first look at the shards (RecoverySupervisor, training/distributed/recovery.h): a
// cut of live shards that fails while they move under it is taken again, and never
// read as "the shards are empty", which would restore an older checkpoint over them.
#include "training/distributed/recovery.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>

#include "graph/status_testing.h"
#include "graph/test_files.h"
#include "kernels/direct_session.h"
#include "training/checkpoint/checkpoint.h"
#include "training/distributed/fake_parameter_server.h"
#include "training/distributed/iris_testing.h"

namespace actorflow {
namespace {

// What the clients of one test did.
struct Seen {
  std::atomic<int> failed_cuts{0};
  std::atomic<int> restores{0};
};

// A client of the fake server standing for live shards (its stats say so): its
// first `failures` cuts fail as a live shard's cut fails when a reconnecting worker
// relabels its version under it; it records restores (and applies none).
class RacingClient : public ParameterClient {
 public:
  RacingClient(std::unique_ptr<ParameterClient> inner, int failures, Seen* seen)
      : inner_(std::move(inner)), failures_(failures), seen_(seen) {}

  Status Register(int worker) override { return inner_->Register(worker); }
  Status Initialize(const std::map<std::string, Tensor>& values) override {
    return inner_->Initialize(values);
  }
  StatusOr<ParameterSnapshot> Pull(int64_t timeout_ms) override { return inner_->Pull(timeout_ms); }
  StatusOr<PushResult> Push(const ParameterSnapshot& base,
                            const std::map<std::string, Tensor>& gradients,
                            int64_t timeout_ms) override {
    return inner_->Push(base, gradients, timeout_ms);
  }
  StatusOr<ParameterStats> Stats(int64_t timeout_ms) override {
    AF_ASSIGN_OR_RETURN(ParameterStats stats, inner_->Stats(timeout_ms));
    stats.shards_uninitialized = 0;  // the shards this client stands for are live
    return stats;
  }
  StatusOr<ParameterSnapshot> Snapshot(int64_t, int64_t) override {
    if (seen_->failed_cuts.load() < failures_) {
      ++seen_->failed_cuts;
      return FailedPrecondition(
          "shard 'parameters/model' is at version 40 and no longer has version 31 (only the "
          "previous version is kept): cut at a newer version");
    }
    ParameterSnapshot cut;  // the live shards' cut, at global step 40
    cut.global_step = 40;
    return cut;
  }
  Status Restore(const std::map<std::string, Tensor>&, int64_t, int64_t) override {
    ++seen_->restores;
    return Status::OK();
  }

 private:
  std::unique_ptr<ParameterClient> inner_;
  const int failures_;
  Seen* seen_;
};

class RecoveryProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(iris_, LoadIris());
    options_ = IrisDataParallelOptions(iris_, UpdateMode::kAsync, 1);
    options_.session_factory = [](const Graph* graph) -> StatusOr<std::unique_ptr<Session>> {
      return NewDirectSession(graph);
    };
    options_.epochs = 1;
    options_.timeout_ms = 20000;
    // An older checkpoint that must not be restored over the live shards.
    dir_ = NewTestTempDir("recovery_probe");
    ASSERT_TRUE(WriteCheckpointTensors(dir_, 31, {{"w", Tensor::Scalar<float>(1)}}).ok());
  }

  // Runs the chief against a fake server whose first `failures` cuts fail.
  Status RunChief(int failures, RecoveryReport* report) {
    auto server = FakeParameterServer::Create(options_.ps);
    RecoveryOptions recovery;
    recovery.checkpoint_dir = dir_;
    recovery.reconnect_timeout_ms = 5000;
    Seen* seen = &seen_;
    RecoverySupervisor sup(options_, WorkerOptions{}, recovery,
                           [server, failures, seen](int) -> StatusOr<std::unique_ptr<ParameterClient>> {
                             return std::unique_ptr<ParameterClient>(
                                 new RacingClient(server->NewClient(), failures, seen));
                           });
    return sup.Run(iris_.train, iris_.test, report);
  }

  IrisData iris_;
  DataParallelOptions options_;
  std::string dir_;
  Seen seen_;
};

TEST_F(RecoveryProbeTest, ACutThatFailsOnLiveShardsIsTakenAgainNotRestoredOver) {
  RecoveryReport report;
  ASSERT_OK(RunChief(RecoverySupervisor::kProbeAttempts - 1, &report));
  EXPECT_EQ(seen_.failed_cuts.load(), RecoverySupervisor::kProbeAttempts - 1);
  EXPECT_EQ(seen_.restores.load(), 0);
  EXPECT_FALSE(report.start_restored);
  EXPECT_EQ(report.started_from, 40);  // the live shards' step, not the checkpoint's 31
}

TEST_F(RecoveryProbeTest, LiveShardsWhoseCutKeepsFailingEndTheChiefWithTheCutsError) {
  RecoveryReport report;
  const Status s = RunChief(RecoverySupervisor::kProbeAttempts, &report);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), ::testing::HasSubstr("cut at a newer version")) << s;
  EXPECT_EQ(seen_.restores.load(), 0);
}

}  // namespace
}  // namespace actorflow
