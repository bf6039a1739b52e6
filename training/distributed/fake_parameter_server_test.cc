// The in-process double of the parameter servers through its clients: it applies
// the shards' own rules (kernels/ps/parameter_shard_state.h) for every optimizer,
// answers a parked request at its deadline as the shard actor does, counts a
// destroyed client as a lost worker, and cuts and restores like the real client.
#include "training/distributed/fake_parameter_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "graph/status_testing.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kTimeoutMs = 20000;

ParameterServerOptions Options(UpdateMode mode, int workers, const std::string& optimizer,
                               double learning_rate) {
  ParameterServerOptions o;
  o.mode = mode;
  o.total_replicas = workers;
  o.replicas_to_aggregate = workers;
  o.optimizer = optimizer;
  o.learning_rate = learning_rate;
  return o;
}

std::map<std::string, Tensor> W(std::vector<float> w) {
  return {{"w", Tensor::FromVector<float>(w)}};
}

std::vector<float> Values(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.NumElements());
}

// A registered worker's client; the chief (worker 0) initializes "w".
std::unique_ptr<ParameterClient> Worker(FakeParameterServer& server, int worker,
                                        std::vector<float> initial = {}) {
  auto client = server.NewClient();
  EXPECT_OK(client->Register(worker));
  if (!initial.empty()) {
    EXPECT_OK(client->Initialize(W(initial)));
  }
  return client;
}

// Pulls, then pushes `g` for "w" computed on what it pulled.
StatusOr<PushResult> PullAndPush(ParameterClient* client, std::vector<float> g,
                                 int64_t timeout_ms = kTimeoutMs) {
  AF_ASSIGN_OR_RETURN(ParameterSnapshot base, client->Pull(timeout_ms));
  return client->Push(base, W(g), timeout_ms);
}

std::vector<float> Pulled(ParameterClient* client) {
  auto snapshot = client->Pull(kTimeoutMs);
  EXPECT_OK(snapshot.status());
  return snapshot.ok() ? Values(snapshot->values.at("w")) : std::vector<float>{};
}

TEST(FakeParameterServerTest, AdamOnTheDoubleIsTheShardsAdamWithItsSlots) {
  auto server = FakeParameterServer::Create(Options(UpdateMode::kAsync, 1, "adam", 0.1));
  auto chief = Worker(*server, 0, {1.0f, -2.0f});
  ASSERT_OK_AND_ASSIGN(PushResult pushed, PullAndPush(chief.get(), {0.5f, -3.0f}));
  EXPECT_TRUE(pushed.applied);
  EXPECT_EQ(pushed.global_step, 1);

  // One adam step from m = v = 0, beta powers .9 and .999 (kernels/ps/shard_optimizer.h).
  const double lr_t = 0.1 * std::sqrt(1 - 0.999) / (1 - 0.9);
  const std::vector<float> w = Pulled(chief.get());
  ASSERT_EQ(w.size(), 2u);
  const float g[] = {0.5f, -3.0f}, w0[] = {1.0f, -2.0f};
  for (int i = 0; i < 2; ++i) {
    const double m = 0.1 * g[i], v = 0.001 * g[i] * g[i];
    EXPECT_NEAR(w[i], w0[i] - lr_t * m / (std::sqrt(v) + 1e-8), 1e-5) << "element " << i;
  }
  ASSERT_OK_AND_ASSIGN(ParameterSnapshot cut, chief->Snapshot(-1, kTimeoutMs));
  EXPECT_EQ(cut.global_step, 1);
  ASSERT_EQ(cut.slots.count("w/Adam_m"), 1u);
  EXPECT_NEAR(Values(cut.slots.at("w/Adam_m"))[1], 0.1 * -3.0, 1e-6);
  EXPECT_EQ(cut.slots.count("w/Adam_beta1_power"), 1u);
}

TEST(FakeParameterServerTest, SyncAveragesTheGradientsOfAVersionAndReleasesEveryWaitingPush) {
  auto server = FakeParameterServer::Create(Options(UpdateMode::kSync, 2, "sgd", 1.0));
  auto chief = Worker(*server, 0, {0.0f, 0.0f});
  auto other = Worker(*server, 1);
  StatusOr<PushResult> first = Internal("not pushed");
  std::thread waiting([&] { first = PullAndPush(chief.get(), {2.0f, 4.0f}); });
  ASSERT_OK_AND_ASSIGN(PushResult second, PullAndPush(other.get(), {4.0f, 8.0f}));
  waiting.join();
  ASSERT_OK(first.status());
  for (const PushResult& r : {*first, second}) {
    EXPECT_TRUE(r.applied);
    EXPECT_EQ(r.global_step, 1);
    EXPECT_EQ(r.aggregated, 2);
  }
  EXPECT_EQ(Pulled(chief.get()), (std::vector<float>{-3.0f, -6.0f}));
  EXPECT_EQ(server->pushes_received(), 2);
}

TEST(FakeParameterServerTest, ASyncPushPastItsDeadlineIsAnsweredByTheShardNamingTheMissingWorker) {
  auto server = FakeParameterServer::Create(Options(UpdateMode::kSync, 2, "sgd", 1.0));
  auto chief = Worker(*server, 0, {0.0f, 0.0f});
  const Status timed_out = PullAndPush(chief.get(), {1.0f, 1.0f}, /*timeout_ms=*/50).status();
  EXPECT_EQ(timed_out.code(), Code::kDeadlineExceeded) << timed_out;
  EXPECT_THAT(timed_out.message(), HasSubstr("waited past its deadline")) << timed_out;
  EXPECT_THAT(timed_out.message(), HasSubstr("none from worker 1")) << timed_out;
  // Its gradient was withdrawn: the next version still needs both workers.
  EXPECT_EQ(Pulled(chief.get()), (std::vector<float>{0.0f, 0.0f}));
}

TEST(FakeParameterServerTest, ADestroyedClientIsALostWorkerAndNoLongerHoldsBackSsp) {
  ParameterServerOptions options = Options(UpdateMode::kStaleSynchronous, 2, "sgd", 1.0);
  options.staleness_bound = 0;
  auto server = FakeParameterServer::Create(options);
  auto chief = Worker(*server, 0, {0.0f, 0.0f});
  auto other = Worker(*server, 1);
  StatusOr<PushResult> ahead = Internal("not pushed");
  // Worker 0 runs one push ahead of worker 1: its answer waits until worker 1 is gone.
  std::thread waiting([&] { ahead = PullAndPush(chief.get(), {1.0f, 1.0f}); });
  other.reset();
  waiting.join();
  ASSERT_OK(ahead.status());
  EXPECT_TRUE(ahead->applied);
  ASSERT_OK_AND_ASSIGN(ParameterStats stats, chief->Stats(kTimeoutMs));
  EXPECT_EQ(stats.workers_lost, std::vector<int>{1});
  EXPECT_EQ(stats.updates_applied, 1);
}

TEST(FakeParameterServerTest, ACutRestoredWithItsMomentumSlotsContinuesExactly) {
  auto server = FakeParameterServer::Create(Options(UpdateMode::kAsync, 1, "momentum", 0.5));
  auto chief = Worker(*server, 0, {1.0f, 2.0f});
  ASSERT_OK(PullAndPush(chief.get(), {1.0f, -1.0f}).status());
  ASSERT_OK_AND_ASSIGN(ParameterSnapshot cut, chief->Snapshot(-1, kTimeoutMs));
  ASSERT_OK(PullAndPush(chief.get(), {0.5f, 0.25f}).status());
  const std::vector<float> continued = Pulled(chief.get());

  std::map<std::string, Tensor> checkpoint = cut.values;
  checkpoint.insert(cut.slots.begin(), cut.slots.end());
  ASSERT_EQ(checkpoint.count("w/Momentum"), 1u);
  ASSERT_OK(chief->Restore(checkpoint, cut.global_step, kTimeoutMs));
  ASSERT_OK_AND_ASSIGN(PushResult again, PullAndPush(chief.get(), {0.5f, 0.25f}));
  EXPECT_EQ(again.global_step, 2);
  EXPECT_EQ(Pulled(chief.get()), continued);
}

TEST(FakeParameterServerTest, AdvanceGlobalStepRaisesTheVersionNotTheValues) {
  auto server = FakeParameterServer::Create(Options(UpdateMode::kSync, 1, "sgd", 1.0));
  auto chief = Worker(*server, 0, {1.0f, 2.0f});
  ASSERT_OK(chief->AdvanceGlobalStep(40, kTimeoutMs));
  ASSERT_OK_AND_ASSIGN(ParameterSnapshot now, chief->Pull(kTimeoutMs));
  EXPECT_EQ(now.global_step, 40);
  EXPECT_EQ(Values(now.values.at("w")), (std::vector<float>{1.0f, 2.0f}));
  ASSERT_OK_AND_ASSIGN(ParameterStats stats, chief->Stats(kTimeoutMs));
  EXPECT_EQ(stats.updates_lost, 40);
}

TEST(FakeParameterServerTest, OptionsTheShardsRefuseFailEveryCall) {
  ParameterServerOptions options = Options(UpdateMode::kSync, 2, "sgd", 0.1);
  options.replicas_to_aggregate = 3;
  auto server = FakeParameterServer::Create(options);
  auto client = server->NewClient();
  const Status s = client->Register(0);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("replicas_to_aggregate=3")) << s;
  EXPECT_EQ(client->Pull(kTimeoutMs).status().code(), Code::kInvalidArgument);
}

// The clients speak the worker's side of the real protocol: what the real client
// refuses before anything reaches a shard, the double refuses alike.
TEST(FakeParameterServerTest, ItsClientsRefuseWhatTheRealClientRefusesBeforeAnyPush) {
  auto server = FakeParameterServer::Create(Options(UpdateMode::kAsync, 1, "sgd", 0.1));
  auto client = Worker(*server, 0, {1, 2});
  ASSERT_OK_AND_ASSIGN(ParameterSnapshot base, client->Pull(kTimeoutMs));
  const Status wrong_shape = client->Push(base, W({1, 2, 3}), kTimeoutMs).status();
  EXPECT_EQ(wrong_shape.code(), Code::kInvalidArgument);
  EXPECT_THAT(wrong_shape.message(), HasSubstr("gradient for variable 'w'"));
  const Status unknown =
      client->Push(base, {{"v", Tensor::FromVector<float>({1, 2})}}, kTimeoutMs).status();
  EXPECT_THAT(unknown.message(), HasSubstr("unknown variable 'v'"));
  const Status integer = server->NewClient()->Initialize({{"n", Tensor::Scalar<int32_t>(1)}});
  EXPECT_THAT(integer.message(), HasSubstr("variable 'n'"));
  EXPECT_EQ(server->pushes_received(), 0);  // nothing reached the shard
  EXPECT_OK(client->Push(base, W({1, 1}), kTimeoutMs).status());
  EXPECT_EQ(server->pushes_received(), 1);
}

}  // namespace
}  // namespace actorflow
