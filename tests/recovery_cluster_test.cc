// Recovery of between-graph training on a LocalCluster (real Servers on loopback in
// this process): a ps task stopped in the middle of sync training (the chief's
// supervisor gets Unavailable naming it, reconnects once it is back, restores the
// shards from the last coordinated checkpoint, keeps the global step and finishes),
// a chief stopped and
// started again (it continues from the shards' global step), a restore with a
// shard unreachable, and a checkpoint of adam that restores its slots (the restored
// shards continue bit for bit). Every wait is bounded; no sleeps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/cluster/local_cluster_fixture.h"
#include "actors/ps/parameter_client_impl.h"
#include "actors/cluster/session_factory.h"
#include "graph/status_testing.h"
#include "graph/test_files.h"
#include "training/checkpoint/checkpoint.h"
#include "training/distributed/iris_testing.h"
#include "training/checkpoint/ps_checkpoint.h"
#include "training/distributed/recovery.h"

namespace actorflow {
namespace {

constexpr int64_t kTimeoutMs = 20000;

using ::testing::AnyOf;
using ::testing::HasSubstr;

// The global step never goes backwards: every one the worker saw (pulls and
// pushes) was at least the ones before it.
void ExpectMonotone(const RecoveryReport& report) {
  EXPECT_TRUE(report.global_step_monotone) << report.Summary();
  for (size_t i = 1; i < report.global_steps.size(); ++i) {
    ASSERT_GE(report.global_steps[i], report.global_steps[i - 1]) << "push " << i;
  }
}

class RecoveryClusterTest : public LocalClusterTest {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(const IrisData iris, LoadIris());
    train_ = iris.train;
    test_ = iris.test;
    options_ = IrisDataParallelOptions(iris, UpdateMode::kSync, /*workers=*/1);
    options_.epochs = 60;
    options_.session_factory = [](const Graph* graph) {
      return NewSession(graph, SessionOptions());
    };
    options_.timeout_ms = kTimeoutMs;
  }

  // A cluster of `ps` ps tasks that lives until the test ends.
  LocalCluster* Cluster(int ps) { return StartCluster({{"ps", ps}}); }

  ParameterClientFactory Factory(const LocalCluster& cluster) const {
    return PsClients(cluster, options_.ps, /*connect_timeout_ms=*/2000);
  }

  RecoveryOptions Recovery(const std::string& dir) const {
    RecoveryOptions r;
    r.max_restarts = 2;
    r.reconnect_timeout_ms = 10000;
    r.checkpoint_dir = TestTempPath(dir);
    r.checkpoint_every_steps = 10;
    return r;
  }

  // The accuracy of an uninterrupted run on a fresh cluster.
  double Uninterrupted() {
    auto cluster = Cluster(1);
    if (!cluster) return -1;
    RecoverySupervisor sup(options_, WorkerOptions{}, Recovery("uninterrupted"),
                           Factory(*cluster));
    RecoveryReport report;
    Status s = sup.Run(train_, test_, &report);
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_TRUE(report.events.empty());
    return report.result.eval.accuracy;
  }

  DataParallelOptions options_;
  LabeledData train_;
  LabeledData test_;
};

TEST_F(RecoveryClusterTest, PsStoppedMidTrainingIsRestoredFromTheLastCheckpoint) {
  const double baseline = Uninterrupted();
  auto cluster = Cluster(1);
  ASSERT_TRUE(cluster);
  LocalCluster* c = cluster;
  WorkerOptions worker;
  bool killed = false;
  worker.progress = [&](const WorkerProgress& p) {
    if (killed || p.global_step != 25) return;
    killed = true;
    // The ps task dies and comes back empty on the same port.
    EXPECT_TRUE(c->StopTask("ps", 0).ok());
    EXPECT_TRUE(c->RestartTask("ps", 0).ok());
  };
  RecoverySupervisor sup(options_, worker, Recovery("ps_stop"), Factory(*cluster));
  RecoveryReport report;
  Status s = sup.Run(train_, test_, &report);
  ASSERT_TRUE(s.ok()) << s << "\n" << report.Summary();
  ASSERT_EQ(report.events.size(), 1u) << report.Summary();
  const RecoveryEvent& e = report.events[0];
  EXPECT_EQ(e.failure.code(), Code::kUnavailable);
  EXPECT_THAT(e.failure.message(), HasSubstr("/job:ps")) << e.failure;
  EXPECT_TRUE(e.restored);
  EXPECT_EQ(e.checkpoint_step, 20);
  EXPECT_EQ(e.step_at_failure, 25);
  EXPECT_EQ(e.resumed_from, 25);  // the checkpoint's values, the global step kept
  EXPECT_EQ(e.steps_lost, 5);
  EXPECT_GT(e.recovery_seconds, 0);
  ExpectMonotone(report);
  EXPECT_EQ(report.global_steps.back(), SyncTargetGlobalStep(options_, train_.labels.NumElements()));
  EXPECT_NEAR(report.result.eval.accuracy, baseline, 0.015 + 1e-9)
      << "baseline " << baseline << "\n" << report.Summary();
  std::printf("ps stop: %s  accuracy %.4f (uninterrupted %.4f)\n", report.Summary().c_str(),
              report.result.eval.accuracy, baseline);
}

TEST_F(RecoveryClusterTest, TheChiefWritesModelJsonWithItsFirstCheckpoint) {
  auto cluster = Cluster(1);
  ASSERT_TRUE(cluster);
  RecoveryOptions recovery = Recovery("model_json");
  const std::string model_json = recovery.checkpoint_dir + "/model.json";
  int checkpoints_logged = 0;
  bool model_json_with_first = false;
  recovery.log = [&](const std::string& line) {
    // Logged right after a scheduled checkpoint is written, long before the end.
    if (line.rfind("checkpoint ", 0) != 0 || checkpoints_logged++ > 0) return;
    model_json_with_first = ReadTestFile(model_json).find("\"format\"") != std::string::npos;
  };
  RecoverySupervisor sup(options_, WorkerOptions{}, recovery, Factory(*cluster));
  RecoveryReport report;
  Status s = sup.Run(train_, test_, &report);
  ASSERT_TRUE(s.ok()) << s << "\n" << report.Summary();
  EXPECT_GE(checkpoints_logged, 1);
  EXPECT_TRUE(model_json_with_first) << model_json;
}

TEST_F(RecoveryClusterTest, AnAsyncWorkerPushesOnlyTheRestOfItsShareAfterARestore) {
  options_.ps.mode = UpdateMode::kAsync;
  auto cluster = Cluster(1);
  ASSERT_TRUE(cluster);
  LocalCluster* c = cluster;
  WorkerOptions worker;
  bool killed = false;
  std::vector<int64_t> steps;  // the worker's push count at each progress report
  worker.progress = [&](const WorkerProgress& p) {
    steps.push_back(p.step);
    if (killed || p.global_step != 25) return;
    killed = true;
    EXPECT_TRUE(c->StopTask("ps", 0).ok());
    EXPECT_TRUE(c->RestartTask("ps", 0).ok());
  };
  RecoverySupervisor sup(options_, worker, Recovery("async_ps_stop"), Factory(*cluster));
  RecoveryReport report;
  Status s = sup.Run(train_, test_, &report);
  ASSERT_TRUE(s.ok()) << s << "\n" << report.Summary();
  ASSERT_EQ(report.events.size(), 1u) << report.Summary();
  EXPECT_EQ(report.events[0].checkpoint_step, 20);
  const int64_t planned = PlannedStepsPerWorker(options_, train_.labels.NumElements());
  ASSERT_EQ(report.result.workers.size(), 1u);
  EXPECT_EQ(report.result.workers[0].steps, planned);  // not planned + 25
  // The push count went on from 25 after the restart instead of starting over.
  for (size_t i = 1; i < steps.size(); ++i) EXPECT_EQ(steps[i], steps[i - 1] + 1) << i;
  EXPECT_EQ(report.global_steps.back(), planned);  // 25 kept, then the rest of the share
  ExpectMonotone(report);
}

TEST_F(RecoveryClusterTest, RestartedChiefContinuesTheShardsGlobalStep) {
  auto cluster = Cluster(1);
  ASSERT_TRUE(cluster);
  RecoverySupervisor* current = nullptr;
  WorkerOptions worker;
  worker.progress = [&](const WorkerProgress& p) {
    if (p.global_step == 15 && current != nullptr) current->Stop();
  };
  RecoveryReport first;
  {
    RecoverySupervisor sup(options_, worker, Recovery("chief_restart"), Factory(*cluster));
    current = &sup;
    Status s = sup.Run(train_, test_, &first);
    EXPECT_EQ(s.code(), Code::kCancelled) << s;
    current = nullptr;
  }
  ASSERT_FALSE(first.global_steps.empty());
  EXPECT_EQ(first.global_steps.back(), 15);
  RecoverySupervisor again(options_, WorkerOptions{}, Recovery("chief_restart"),
                           Factory(*cluster));
  RecoveryReport second;
  Status s = again.Run(train_, test_, &second);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_GE(second.global_steps.size(), 2u);
  EXPECT_EQ(second.global_steps.front(), 15);  // where the shards were
  EXPECT_EQ(second.global_steps[1], 16);
  EXPECT_TRUE(second.events.empty());
  ExpectMonotone(second);
  EXPECT_EQ(second.global_steps.back(), SyncTargetGlobalStep(options_, train_.labels.NumElements()));
}

TEST_F(RecoveryClusterTest, SyncSnapshotCutsEveryShardAtOneVersionAndRestoresIt) {
  auto cluster = Cluster(2);
  ASSERT_TRUE(cluster);
  auto client = ConnectParameterServers(cluster->spec(), "ps", options_.ps, kTimeoutMs);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_TRUE((*client)->Register(0).ok());
  std::map<std::string, Tensor> init = {{"a", Tensor::FromVector<float>({1, 2})},
                                        {"b", Tensor::FromVector<float>({10})}};
  ASSERT_TRUE((*client)->Initialize(init).ok());
  for (int i = 0; i < 3; ++i) {
    auto base = (*client)->Pull(kTimeoutMs);
    ASSERT_TRUE(base.ok()) << base.status();
    std::map<std::string, Tensor> g = {{"a", Tensor::FromVector<float>({1, 1})},
                                       {"b", Tensor::FromVector<float>({1})}};
    ASSERT_TRUE((*client)->Push(*base, g, kTimeoutMs).ok());
  }
  const std::string dir = TestTempPath("cut");
  auto saved = SavePsCheckpoint(client->get(), dir, -1, kTimeoutMs);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->global_step, 3);
  auto step = ReadCheckpointGlobalStep(saved->prefix);
  ASSERT_TRUE(step.ok());
  EXPECT_EQ(*step, 3);
  // Restore into a fresh pair of ps tasks.
  auto fresh = Cluster(2);
  ASSERT_TRUE(fresh);
  auto other = ConnectParameterServers(fresh->spec(), "ps", options_.ps, kTimeoutMs);
  ASSERT_TRUE(other.ok());
  auto restored = RestorePsCheckpoint(other->get(), dir, kTimeoutMs);
  ASSERT_TRUE(restored.ok()) << restored.status();
  auto now = (*other)->Pull(kTimeoutMs);
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_EQ(now->shard_versions, (std::vector<int64_t>{3, 3}));
  EXPECT_FLOAT_EQ(now->values.at("a").data<float>()[0], 1 - 0.2f * 3);
}

// Pushes `steps` (gradients by variable) one by one, each on a fresh pull, and
// returns the values after each.
std::vector<std::map<std::string, Tensor>> PushAll(
    ParameterClient* client, const std::vector<std::map<std::string, Tensor>>& steps) {
  std::vector<std::map<std::string, Tensor>> after;
  for (const auto& g : steps) {
    auto base = client->Pull(kTimeoutMs);
    EXPECT_TRUE(base.ok()) << base.status();
    if (!base.ok()) break;
    auto pushed = client->Push(*base, g, kTimeoutMs);
    EXPECT_TRUE(pushed.ok()) << pushed.status();
    if (!pushed.ok() || !pushed->applied) break;
    auto now = client->Pull(kTimeoutMs);
    EXPECT_TRUE(now.ok()) << now.status();
    if (!now.ok()) break;
    std::map<std::string, Tensor> copies;
    for (const auto& [name, value] : now->values) copies[name] = value.DeepCopy();
    after.push_back(std::move(copies));
  }
  return after;
}

bool BitIdentical(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

TEST_F(RecoveryClusterTest, AdamCheckpointRestoresItsSlotsAndContinuesBitForBit) {
  options_.ps.optimizer = "adam";
  options_.ps.learning_rate = 0.05;
  auto grads = [](float a0, float a1, double b) {
    return std::map<std::string, Tensor>{{"a", Tensor::FromVector<float>({a0, a1})},
                                         {"b", Tensor::FromVector<double>({b})}};
  };
  const std::vector<std::map<std::string, Tensor>> before = {
      grads(1, -2, 0.5), grads(0.25f, 0.5f, -1.5), grads(-3, 1, 2)};
  const std::vector<std::map<std::string, Tensor>> later = {
      grads(0.5f, 0.5f, 0.5), grads(-1, 2, -0.25), grads(2, -0.125f, 1)};

  auto cluster = Cluster(2);
  ASSERT_TRUE(cluster);
  auto client = ConnectParameterServers(cluster->spec(), "ps", options_.ps, kTimeoutMs);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_TRUE((*client)->Register(0).ok());
  ASSERT_TRUE((*client)
                  ->Initialize({{"a", Tensor::FromVector<float>({1, 2})},
                                {"b", Tensor::FromVector<double>({10})}})
                  .ok());
  ASSERT_EQ(PushAll(client->get(), before).size(), before.size());
  const std::string dir = TestTempPath("adam_cut");
  auto saved = SavePsCheckpoint(client->get(), dir, -1, kTimeoutMs);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->global_step, 3);
  auto written = ReadCheckpoint(saved->prefix);
  ASSERT_TRUE(written.ok()) << written.status();
  for (const char* name : {"a", "b", "a/Adam_m", "a/Adam_v", "a/Adam_beta1_power",
                           "b/Adam_m", "b/Adam_v", "b/Adam_beta2_power", "global_step"}) {
    EXPECT_EQ(written->count(name), 1u) << name;
  }
  const auto expected = PushAll(client->get(), later);
  ASSERT_EQ(expected.size(), later.size());

  // A fresh pair of ps tasks, restored from the checkpoint, given the same pushes.
  auto fresh = Cluster(2);
  ASSERT_TRUE(fresh);
  auto other = ConnectParameterServers(fresh->spec(), "ps", options_.ps, kTimeoutMs);
  ASSERT_TRUE(other.ok()) << other.status();
  auto restored = RestorePsCheckpoint(other->get(), dir, kTimeoutMs);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->global_step, 3);
  ASSERT_TRUE((*other)->Register(0).ok());
  auto now = (*other)->Pull(kTimeoutMs);
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_TRUE(now->slots.empty());  // a pull carries no slots
  EXPECT_EQ(now->values.size(), 2u);  // the slots were not restored as variables
  const auto actual = PushAll(other->get(), later);
  ASSERT_EQ(actual.size(), later.size());
  for (size_t step = 0; step < later.size(); ++step) {
    for (const char* name : {"a", "b"}) {
      EXPECT_TRUE(BitIdentical(actual[step].at(name), expected[step].at(name)))
          << name << " after later push " << step << ": " << actual[step].at(name).ElementAsDouble(0)
          << " vs " << expected[step].at(name).ElementAsDouble(0);
    }
  }
}

TEST_F(RecoveryClusterTest, RestoreWithAShardUnreachableNamesIt) {
  auto cluster = Cluster(2);
  ASSERT_TRUE(cluster);
  auto client = ConnectParameterServers(cluster->spec(), "ps", options_.ps, kTimeoutMs);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_TRUE(cluster->StopTask("ps", 1).ok());
  Status s = (*client)->Restore({{"a", Tensor::FromVector<float>({1})},
                                 {"b", Tensor::FromVector<float>({2})}},
                                5, kTimeoutMs);
  EXPECT_EQ(s.code(), Code::kUnavailable) << s;
  EXPECT_THAT(s.message(),
              AnyOf(HasSubstr("/job:ps/replica:0/task:1"), HasSubstr("/job:ps/task:1")))
      << s;
  auto address = cluster->spec().Address(TaskId{"ps", 1});
  ASSERT_TRUE(address.ok());
  EXPECT_THAT(s.message(), HasSubstr(address->ToString())) << s;
}

}  // namespace
}  // namespace actorflow
