// ConnectParameterServers against a LocalCluster: the ps tasks are real Servers on
// 127.0.0.1 in this process, each client has its own actor system, so every message
// crosses the middleman as between processes. Workers that must wait for each other
// (sync) run on threads; every wait is bounded by the calls' timeouts.
#include "actors/ps/parameter_client_impl.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <thread>

#include "actors/cluster/local_cluster.h"
#include "actors/cluster/remote_session.h"

namespace actorflow {
namespace {

constexpr int64_t kTimeoutMs = 20000;


ParameterServerOptions Options(UpdateMode mode, int total, int aggregate = 1) {
  ParameterServerOptions o;
  o.mode = mode;
  o.total_replicas = total;
  o.replicas_to_aggregate = aggregate;
  o.optimizer = "sgd";
  o.learning_rate = 1.0;
  return o;
}

// Two variables: with two ps tasks, round robin puts "a" on task 0 and "b" on 1.
std::map<std::string, Tensor> Initial() {
  return {{"a", Tensor::FromVector<float>({1, 2})}, {"b", Tensor::FromVector<float>({10})}};
}

std::map<std::string, Tensor> Grads(float a, float b) {
  return {{"a", Tensor::FromVector<float>({a, a})}, {"b", Tensor::FromVector<float>({b})}};
}

class ParameterClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cluster = LocalCluster::Start({{"ps", 2}});
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(cluster).value();
  }

  std::unique_ptr<ParameterClient> Connect(const ParameterServerOptions& options, int worker) {
    auto client = ConnectParameterServers(cluster_->spec(), "ps", options, kTimeoutMs);
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return nullptr;
    Status registered = (*client)->Register(worker);
    EXPECT_TRUE(registered.ok()) << registered;
    return std::move(client).value();
  }

  std::unique_ptr<LocalCluster> cluster_;
};

TEST_F(ParameterClientTest, AsyncSplitsTheVariablesOverBothPsTasksAndAppliesEachPush) {
  auto chief = Connect(Options(UpdateMode::kAsync, 2), 0);
  auto other = Connect(Options(UpdateMode::kAsync, 2), 1);
  ASSERT_TRUE(chief && other);
  ASSERT_TRUE(chief->Initialize(Initial()).ok());
  auto base = other->Pull(kTimeoutMs);
  ASSERT_TRUE(base.ok()) << base.status();
  ASSERT_EQ(base->shard_versions.size(), 2u);

  auto first = chief->Push(*base, Grads(1, 1), kTimeoutMs);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->applied);
  EXPECT_EQ(first->staleness, 0);
  auto second = other->Push(*base, Grads(0.5, 2), kTimeoutMs);  // one version behind
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->staleness, 1);
  EXPECT_EQ(second->global_step, 2);

  auto now = other->Pull(kTimeoutMs);
  ASSERT_TRUE(now.ok());
  // Both ps tasks hold a variable: both versions moved.
  EXPECT_EQ(now->shard_versions, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(now->global_step, 2);
  EXPECT_FLOAT_EQ(now->values.at("a").data<float>()[0], 1 - 1 - 0.5f);
  EXPECT_FLOAT_EQ(now->values.at("b").data<float>()[0], 10 - 1 - 2);
  auto stats = chief->Stats(kTimeoutMs);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->updates_applied, 2);
  EXPECT_DOUBLE_EQ(stats->mean_staleness, 0.5);
}

TEST_F(ParameterClientTest, SyncAveragesTwoWorkersAndDropsTheBackupsStaleGradient) {
  const auto options = Options(UpdateMode::kSync, 3, 2);
  auto w0 = Connect(options, 0);
  auto w1 = Connect(options, 1);
  auto w2 = Connect(options, 2);
  ASSERT_TRUE(w0 && w1 && w2);
  ASSERT_TRUE(w0->Initialize(Initial()).ok());
  auto base = w2->Pull(kTimeoutMs);
  auto base0 = w0->Pull(kTimeoutMs);
  auto base1 = w1->Pull(kTimeoutMs);
  ASSERT_TRUE(base.ok() && base0.ok() && base1.ok());

  // w0's push waits for a second gradient of version 0: run it on a thread.
  auto pending =
      std::async(std::launch::async, [&] { return w0->Push(*base0, Grads(1, 4), kTimeoutMs); });
  auto second = w1->Push(*base1, Grads(3, 0), kTimeoutMs);
  ASSERT_TRUE(second.ok()) << second.status();
  auto first = pending.get();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->applied && second->applied);
  EXPECT_EQ(first->global_step, 1);

  auto late = w2->Push(*base, Grads(100, 100), kTimeoutMs);
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_FALSE(late->applied);
  EXPECT_EQ(late->staleness, 1);

  auto now = w2->Pull(kTimeoutMs);
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->shard_versions, (std::vector<int64_t>{1, 1}));
  EXPECT_FLOAT_EQ(now->values.at("a").data<float>()[1], 2 - 2);   // mean of 1 and 3
  EXPECT_FLOAT_EQ(now->values.at("b").data<float>()[0], 10 - 2);  // mean of 4 and 0
  auto stats = w0->Stats(kTimeoutMs);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->updates_applied, 1);
  EXPECT_EQ(stats->gradients_dropped_stale, 1);
}

TEST_F(ParameterClientTest, SyncPushAndPullReturnsTheNewVersionsValuesFromBothPsTasks) {
  const auto options = Options(UpdateMode::kSync, 2, 2);
  auto w0 = Connect(options, 0);
  auto w1 = Connect(options, 1);
  ASSERT_TRUE(w0 && w1);
  ASSERT_TRUE(w0->Initialize(Initial()).ok());
  auto base0 = w0->Pull(kTimeoutMs);
  auto base1 = w1->Pull(kTimeoutMs);
  ASSERT_TRUE(base0.ok() && base1.ok());
  ParameterSnapshot next0, next1;
  auto pending = std::async(std::launch::async, [&] {
    return w0->PushAndPull(*base0, Grads(1, 4), kTimeoutMs, &next0);
  });
  auto second = w1->PushAndPull(*base1, Grads(3, 0), kTimeoutMs, &next1);
  ASSERT_TRUE(second.ok()) << second.status();
  auto first = pending.get();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->global_step, 1);
  // Both came back with version 1's values, as a pull now returns them.
  auto pulled = w0->Pull(kTimeoutMs);
  ASSERT_TRUE(pulled.ok());
  for (const ParameterSnapshot* next : {&next0, &next1}) {
    EXPECT_EQ(next->shard_versions, (std::vector<int64_t>{1, 1}));
    EXPECT_EQ(next->global_step, 1);
    ASSERT_EQ(next->values.size(), 2u);
    EXPECT_FLOAT_EQ(next->values.at("a").data<float>()[1], 2 - 2);   // mean of 1 and 3
    EXPECT_FLOAT_EQ(next->values.at("b").data<float>()[0], 10 - 2);  // mean of 4 and 0
    EXPECT_EQ(next->values.at("a").data<float>()[0], pulled->values.at("a").data<float>()[0]);
  }
  // A push on the returned snapshot is current: applied, not stale.
  auto again = std::async(std::launch::async, [&] {
    return w0->PushAndPull(next0, Grads(0, 0), kTimeoutMs, &next0);
  });
  auto other = w1->PushAndPull(next1, Grads(0, 0), kTimeoutMs, &next1);
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE(again.get().ok());
  EXPECT_TRUE(other->applied);
  EXPECT_EQ(next1.global_step, 2);
}

TEST_F(ParameterClientTest, AsyncPushAndPullReturnsTheValuesRightAfterItsOwnUpdate) {
  auto chief = Connect(Options(UpdateMode::kAsync, 1), 0);
  ASSERT_TRUE(chief);
  ASSERT_TRUE(chief->Initialize(Initial()).ok());
  auto base = chief->Pull(kTimeoutMs);
  ASSERT_TRUE(base.ok());
  ParameterSnapshot next;
  auto pushed = chief->PushAndPull(*base, Grads(1, 2), kTimeoutMs, &next);
  ASSERT_TRUE(pushed.ok()) << pushed.status();
  EXPECT_EQ(next.global_step, 1);
  EXPECT_EQ(next.shard_versions, (std::vector<int64_t>{1, 1}));
  EXPECT_FLOAT_EQ(next.values.at("a").data<float>()[0], 1 - 1);
  EXPECT_FLOAT_EQ(next.values.at("b").data<float>()[0], 10 - 2);
}

TEST_F(ParameterClientTest, APsTaskHoldingNoVariableIsLeftOutOfPushes) {
  ParameterClientOptions greedy;
  greedy.strategy = PsStrategy::kGreedyBytes;
  auto client = ConnectParameterServers(cluster_->spec(), "ps", Options(UpdateMode::kSync, 1),
                                        kTimeoutMs, greedy);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_TRUE((*client)->Register(0).ok());
  ASSERT_TRUE((*client)->Initialize({{"only", Tensor::FromVector<float>({3})}}).ok());
  auto base = (*client)->Pull(kTimeoutMs);
  ASSERT_TRUE(base.ok()) << base.status();
  auto pushed = (*client)->Push(*base, {{"only", Tensor::FromVector<float>({1})}}, kTimeoutMs);
  ASSERT_TRUE(pushed.ok()) << pushed.status();
  EXPECT_EQ(pushed->global_step, 1);
  auto now = (*client)->Pull(kTimeoutMs);
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->shard_versions, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(now->global_step, 1);
  EXPECT_FLOAT_EQ(now->values.at("only").data<float>()[0], 2);
}

TEST_F(ParameterClientTest, APullBeforeTheChiefInitializesWaitsForIt) {
  auto early = Connect(Options(UpdateMode::kAsync, 2), 1);
  ASSERT_TRUE(early);
  auto bounded = early->Pull(/*timeout_ms=*/200);
  EXPECT_EQ(bounded.status().code(), Code::kDeadlineExceeded);
  EXPECT_THAT(bounded.status().message(), ::testing::HasSubstr("not initialized")) << bounded.status();
  auto waiting = std::async(std::launch::async, [&] { return early->Pull(kTimeoutMs); });
  auto chief = Connect(Options(UpdateMode::kAsync, 2), 0);
  ASSERT_TRUE(chief);
  ASSERT_TRUE(chief->Initialize(Initial()).ok());
  auto pulled = waiting.get();
  ASSERT_TRUE(pulled.ok()) << pulled.status();
  EXPECT_FLOAT_EQ(pulled->values.at("b").data<float>()[0], 10);
  EXPECT_EQ(chief->Initialize(Initial()).code(), Code::kAlreadyExists);
}

TEST_F(ParameterClientTest, AWrongShapeIsRejectedNamingTheVariableAndNothingIsApplied) {
  auto client = Connect(Options(UpdateMode::kAsync, 1), 0);
  ASSERT_TRUE(client);
  ASSERT_TRUE(client->Initialize(Initial()).ok());
  auto base = client->Pull(kTimeoutMs);
  ASSERT_TRUE(base.ok());
  auto grads = Grads(1, 1);
  grads["b"] = Tensor::FromVector<float>({1, 1, 1});
  auto pushed = client->Push(*base, grads, kTimeoutMs);
  EXPECT_EQ(pushed.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(pushed.status().message(), ::testing::HasSubstr("'b'")) << pushed.status();
  grads.erase("b");
  EXPECT_THAT(client->Push(*base, grads, kTimeoutMs).status().message(), ::testing::HasSubstr("no gradient for variable 'b'"));
  auto stats = client->Stats(kTimeoutMs);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->updates_applied, 0);
}

TEST_F(ParameterClientTest, BadOptionsAndConflictingModesAreRefused) {
  auto too_many =
      ConnectParameterServers(cluster_->spec(), "ps", Options(UpdateMode::kSync, 2, 3), kTimeoutMs);
  EXPECT_EQ(too_many.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(too_many.status().message(), ::testing::HasSubstr("replicas_to_aggregate=3"));
  auto no_job = ConnectParameterServers(cluster_->spec(), "parameter_servers",
                                        Options(UpdateMode::kAsync, 1), kTimeoutMs);
  EXPECT_EQ(no_job.status().code(), Code::kInvalidArgument);

  auto sync = Connect(Options(UpdateMode::kSync, 2, 2), 0);
  ASSERT_TRUE(sync);
  auto async =
      ConnectParameterServers(cluster_->spec(), "ps", Options(UpdateMode::kAsync, 2), kTimeoutMs);
  EXPECT_EQ(async.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(async.status().message(), ::testing::HasSubstr("sync 2 of 2")) << async.status();
  EXPECT_EQ(sync->Register(2).code(), Code::kInvalidArgument);
}

TEST_F(ParameterClientTest, APsTaskGoingDownFailsCallsWithUnavailableNamingIt) {
  auto client = Connect(Options(UpdateMode::kAsync, 1), 0);
  ASSERT_TRUE(client);
  ASSERT_TRUE(client->Initialize(Initial()).ok());
  ASSERT_TRUE(cluster_->StopTask("ps", 1).ok());
  auto pulled = client->Pull(kTimeoutMs);
  EXPECT_EQ(pulled.status().code(), Code::kUnavailable) << pulled.status();
  EXPECT_THAT(pulled.status().message(), ::testing::HasSubstr("/job:ps/task:1")) << pulled.status();
}

TEST_F(ParameterClientTest, ResettingTheContainerDropsTheShards) {
  auto client = Connect(Options(UpdateMode::kAsync, 1), 0);
  ASSERT_TRUE(client);
  ASSERT_TRUE(client->Initialize(Initial()).ok());
  client.reset();
  for (int task = 0; task < 2; ++task) {
    ASSERT_TRUE(ResetCluster(*cluster_->Target("ps", task), {"parameters"}).ok());
  }
  // A fresh model on the same tasks, with another mode: no conflict any more.
  auto fresh = Connect(Options(UpdateMode::kSync, 1, 1), 0);
  ASSERT_TRUE(fresh);
  EXPECT_TRUE(fresh->Initialize(Initial()).ok());
}

// A port nothing listens on: bound, read, closed.
int UnusedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

TEST(ParameterClientConnectTest, AnUnreachablePsTaskIsUnavailableAfterTheDeadlineNamingIt) {
  const int port = UnusedPort();
  auto spec = ClusterSpec::FromJson("{\"ps\": [\"127.0.0.1:" + std::to_string(port) + "\"]}");
  ASSERT_TRUE(spec.ok());
  auto client = ConnectParameterServers(*spec, "ps", Options(UpdateMode::kAsync, 1), 300);
  EXPECT_EQ(client.status().code(), Code::kUnavailable);
  EXPECT_THAT(client.status().message(), ::testing::HasSubstr("/job:ps/task:0")) << client.status();
  EXPECT_THAT(client.status().message(), ::testing::HasSubstr(std::to_string(port))) << client.status();
}

}  // namespace
}  // namespace actorflow
