// Parameter shards on real `actorflow server` processes (ps tasks on free ports of
// 127.0.0.1), reached through ConnectParameterServers from this process: async and
// sync pushes over two ps tasks, a worker process killed while another waits under
// SSP (the shards notice and release it), a ps process killed, and a ps task that is
// not running at start.
//
// The killed worker is this test binary run again as a child ("--ssp-worker SPEC"):
// it registers as worker 1, says so on stdout and waits to be killed.
//
// Every wait is bounded; no sleeps, no fixed ports.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <iostream>
#include <set>

#include "actors/ps/parameter_client_impl.h"
#include "tests/process_cluster.h"
#include "tests/subprocess.h"

namespace actorflow {
namespace {

using std::chrono::milliseconds;
using subprocess::ChildProcess;
using subprocess::ProcessCluster;
using subprocess::ProcessClusterOptions;

constexpr int64_t kTimeoutMs = 30000;
const char kWorkerFlag[] = "--ssp-worker";

using ::testing::HasSubstr;

std::string TmpDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

ParameterServerOptions Options(UpdateMode mode, int total, int aggregate = 1, int bound = 0) {
  ParameterServerOptions o;
  o.mode = mode;
  o.total_replicas = total;
  o.replicas_to_aggregate = aggregate;
  o.staleness_bound = bound;
  o.optimizer = "sgd";
  o.learning_rate = 1.0;
  return o;
}

std::unique_ptr<ProcessCluster> StartPs(int tasks, std::set<subprocess::TaskKey> not_started = {}) {
  ProcessClusterOptions options;
  options.binary = subprocess::Runfile("tools/actorflow");
  options.shape = {{"ps", tasks}};
  options.dir = TmpDir();
  options.not_started = std::move(not_started);
  auto cluster = ProcessCluster::Start(std::move(options));
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  return cluster.ok() ? std::move(cluster).value() : nullptr;
}

std::unique_ptr<ParameterClient> Connect(const ProcessCluster& cluster,
                                         const ParameterServerOptions& options, int worker) {
  auto spec = ClusterSpec::FromFile(cluster.spec_path());
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return nullptr;
  auto client = ConnectParameterServers(*spec, "ps", options, kTimeoutMs);
  EXPECT_TRUE(client.ok()) << client.status();
  if (!client.ok()) return nullptr;
  Status registered = (*client)->Register(worker);
  EXPECT_TRUE(registered.ok()) << registered;
  return std::move(client).value();
}

std::map<std::string, Tensor> Initial() {
  return {{"a", Tensor::FromVector<float>({1, 2})}, {"b", Tensor::FromVector<float>({10})}};
}

std::map<std::string, Tensor> Grads(float a, float b) {
  return {{"a", Tensor::FromVector<float>({a, a})}, {"b", Tensor::FromVector<float>({b})}};
}

TEST(ParameterServerProcessTest, AsyncPushesReachBothPsProcesses) {
  auto cluster = StartPs(2);
  ASSERT_TRUE(cluster);
  auto client = Connect(*cluster, Options(UpdateMode::kAsync, 1), 0);
  ASSERT_TRUE(client);
  ASSERT_TRUE(client->Initialize(Initial()).ok());
  for (int step = 0; step < 3; ++step) {
    auto base = client->Pull(kTimeoutMs);
    ASSERT_TRUE(base.ok()) << base.status();
    auto pushed = client->Push(*base, Grads(1, 2), kTimeoutMs);
    ASSERT_TRUE(pushed.ok()) << pushed.status();
    EXPECT_EQ(pushed->global_step, step + 1);
  }
  auto now = client->Pull(kTimeoutMs);
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->shard_versions, (std::vector<int64_t>{3, 3}));
  EXPECT_FLOAT_EQ(now->values.at("a").data<float>()[1], 2 - 3);
  EXPECT_FLOAT_EQ(now->values.at("b").data<float>()[0], 10 - 6);
}

TEST(ParameterServerProcessTest, SyncWorkersMeetAtEachVersionAcrossProcesses) {
  auto cluster = StartPs(2);
  ASSERT_TRUE(cluster);
  const auto options = Options(UpdateMode::kSync, 2, 2);
  auto w0 = Connect(*cluster, options, 0);
  auto w1 = Connect(*cluster, options, 1);
  ASSERT_TRUE(w0 && w1);
  ASSERT_TRUE(w0->Initialize(Initial()).ok());
  auto run = [](ParameterClient* client, float g) -> Status {
    for (int step = 0; step < 5; ++step) {
      auto base = client->Pull(kTimeoutMs);
      if (!base.ok()) return base.status();
      auto pushed = client->Push(*base, Grads(g, g), kTimeoutMs);
      if (!pushed.ok()) return pushed.status();
      if (!pushed->applied || pushed->global_step != step + 1) {
        return Internal("step " + std::to_string(step) + " ended at global step " +
                        std::to_string(pushed->global_step));
      }
    }
    return Status::OK();
  };
  auto other = std::async(std::launch::async, run, w1.get(), 3.0f);
  Status mine = run(w0.get(), 1.0f);
  Status theirs = other.get();
  ASSERT_TRUE(mine.ok()) << mine;
  ASSERT_TRUE(theirs.ok()) << theirs;
  auto now = w0->Pull(kTimeoutMs);
  ASSERT_TRUE(now.ok());
  EXPECT_FLOAT_EQ(now->values.at("b").data<float>()[0], 10 - 5 * 2);  // mean 2 per step
  auto stats = w1->Stats(kTimeoutMs);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->updates_applied, 5);
  EXPECT_EQ(stats->gradients_dropped_stale, 0);
}

TEST(ParameterServerProcessTest, AKilledWorkerProcessStopsHoldingBackSsp) {
  auto cluster = StartPs(1);
  ASSERT_TRUE(cluster);
  const auto options = Options(UpdateMode::kStaleSynchronous, 2, 1, /*bound=*/0);
  auto chief = Connect(*cluster, options, 0);
  ASSERT_TRUE(chief);
  ASSERT_TRUE(chief->Initialize(Initial()).ok());

  char self[4096] = {0};
  ASSERT_GT(::readlink("/proc/self/exe", self, sizeof(self) - 1), 0);
  std::string error;
  auto worker = ChildProcess::Start(self, {kWorkerFlag, cluster->spec_path()}, &error);
  ASSERT_TRUE(worker) << error;
  std::string line;
  ASSERT_TRUE(worker->WaitForLine("registered", milliseconds(kTimeoutMs), &line))
      << worker->out() << worker->err();

  auto base = chief->Pull(kTimeoutMs);
  ASSERT_TRUE(base.ok());
  // Worker 1 is at 0 pushes: with bound 0 this push waits for it...
  auto pending =
      std::async(std::launch::async, [&] { return chief->Push(*base, Grads(1, 1), kTimeoutMs); });
  EXPECT_EQ(pending.wait_for(milliseconds(200)), std::future_status::timeout);
  // ...until its process dies.
  worker->Kill(SIGKILL);
  auto pushed = pending.get();
  ASSERT_TRUE(pushed.ok()) << pushed.status();
  EXPECT_TRUE(pushed->applied);
  auto stats = chief->Stats(kTimeoutMs);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->workers_lost, std::vector<int>{1});
}

TEST(ParameterServerProcessTest, AKilledPsProcessIsUnavailableNamingItsTask) {
  auto cluster = StartPs(2);
  ASSERT_TRUE(cluster);
  auto client = Connect(*cluster, Options(UpdateMode::kAsync, 1), 0);
  ASSERT_TRUE(client);
  ASSERT_TRUE(client->Initialize(Initial()).ok());
  ASSERT_TRUE(cluster->Kill("ps", 1).ok());
  const auto killed = std::chrono::steady_clock::now();
  auto pulled = client->Pull(kTimeoutMs);
  const auto noticed = std::chrono::steady_clock::now() - killed;
  EXPECT_LT(noticed, std::chrono::seconds(3)) << "the pull waited for a dead ps";
  std::cerr << "killed ps noticed by a pull after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(noticed).count() << " ms\n";
  EXPECT_EQ(pulled.status().code(), Code::kUnavailable) << pulled.status();
  EXPECT_THAT(pulled.status().message(), HasSubstr("/job:ps/task:1")) << pulled.status();
}

TEST(ParameterServerProcessTest, APsTaskNotRunningAtStartIsUnavailableAfterTheDeadline) {
  auto cluster = StartPs(2, {{"ps", 1}});
  ASSERT_TRUE(cluster);
  auto spec = ClusterSpec::FromFile(cluster->spec_path());
  ASSERT_TRUE(spec.ok());
  auto client = ConnectParameterServers(*spec, "ps", Options(UpdateMode::kAsync, 1), 500);
  EXPECT_EQ(client.status().code(), Code::kUnavailable);
  EXPECT_THAT(client.status().message(), HasSubstr("/job:ps/task:1")) << client.status();
  EXPECT_THAT(client.status().message(), HasSubstr(cluster->Address("ps", 1))) << client.status();
}

// The child side of AKilledWorkerProcessStopsHoldingBackSsp.
int RunSspWorker(const std::string& spec_path) {
  auto spec = ClusterSpec::FromFile(spec_path);
  if (!spec.ok()) {
    std::cerr << spec.status() << std::endl;
    return 1;
  }
  auto client = ConnectParameterServers(
      *spec, "ps", Options(UpdateMode::kStaleSynchronous, 2, 1, /*bound=*/0), kTimeoutMs);
  Status status = client.ok() ? (*client)->Register(1) : client.status();
  if (!status.ok()) {
    std::cerr << status << std::endl;
    return 1;
  }
  std::cout << "registered as worker 1" << std::endl;
  while (true) ::pause();  // until killed
}

}  // namespace
}  // namespace actorflow

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == actorflow::kWorkerFlag) {
    return actorflow::RunSspWorker(argv[2]);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
