// Pushes whose gradients and reply values travel on the ps tasks' bulk channels
// (actors/ps/bulk_gradients.h) against a LocalCluster of two ps tasks on 127.0.0.1:
// the results must be exactly those of the same pushes carried whole by CAF, and
// the channels must have carried what the size rule sends apart, and nothing else.
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/cluster/local_cluster.h"
#include "actors/ps/parameter_client_impl.h"
#include "actors/cluster/server.h"

namespace actorflow {
namespace {

constexpr int64_t kTimeoutMs = 20000;
constexpr int kBig = 512;  // floats: 2 KiB, above the test's 1 KiB rule

ParameterServerOptions Options(UpdateMode mode, int workers) {
  ParameterServerOptions o;
  o.mode = mode;
  o.total_replicas = workers;
  o.replicas_to_aggregate = workers;
  o.optimizer = "sgd";
  o.learning_rate = 0.5;
  return o;
}

Tensor Filled(int n, float first, float step) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = first + step * static_cast<float>(i % 7);
  return Tensor::FromVector<float>(v);
}

// Round robin over two ps tasks: "a" (big) on task 0, "b" (small) on task 1.
std::map<std::string, Tensor> Initial() {
  return {{"a", Filled(kBig, 1, 0.25f)}, {"b", Filled(4, 10, 1)}};
}

std::map<std::string, Tensor> Grads(int worker, int step) {
  const float s = static_cast<float>(step + 1) * (worker == 0 ? 1.0f : -0.5f);
  return {{"a", Filled(kBig, s, 0.125f)}, {"b", Filled(4, s, 2)}};
}

struct RunResult {
  std::map<std::string, Tensor> values;  // worker 0's last push-and-pull
  int64_t global_step = 0;
};

// `workers` workers (threads) each run `steps` push-and-pulls from one pull.
RunResult Train(const LocalCluster& cluster, const std::string& shard, UpdateMode mode,
                int workers, int steps, int64_t bulk_min_bytes) {
  ParameterClientOptions client_options;
  client_options.shard_name = shard;
  client_options.bulk_min_bytes = bulk_min_bytes;
  std::vector<std::unique_ptr<ParameterClient>> clients;
  for (int w = 0; w < workers; ++w) {
    auto client = ConnectParameterServers(cluster.spec(), "ps", Options(mode, workers), kTimeoutMs,
                                          client_options);
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return {};
    EXPECT_TRUE((*client)->Register(w).ok());
    clients.push_back(std::move(client).value());
  }
  EXPECT_TRUE(clients[0]->Initialize(Initial()).ok());
  std::vector<std::future<RunResult>> runs;
  for (int w = 0; w < workers; ++w) {
    runs.push_back(std::async(std::launch::async, [&, w] {
      RunResult result;
      auto snapshot = clients[w]->Pull(kTimeoutMs);
      EXPECT_TRUE(snapshot.ok()) << snapshot.status();
      if (!snapshot.ok()) return result;
      ParameterSnapshot base = std::move(snapshot).value();
      for (int step = 0; step < steps; ++step) {
        ParameterSnapshot next;
        auto pushed = clients[w]->PushAndPull(base, Grads(w, step), kTimeoutMs, &next);
        EXPECT_TRUE(pushed.ok()) << pushed.status();
        if (!pushed.ok()) return result;
        EXPECT_EQ(next.values.size(), 2u);
        result.global_step = pushed->global_step;
        base = std::move(next);
      }
      result.values = base.values;
      return result;
    }));
  }
  RunResult first;
  for (int w = 0; w < workers; ++w) {
    RunResult r = runs[w].get();
    if (w == 0) first = r;
  }
  return first;
}

void ExpectSameValues(const std::map<std::string, Tensor>& got,
                      const std::map<std::string, Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, value] : want) {
    const Tensor& g = got.at(name);
    ASSERT_EQ(g.NumElements(), value.NumElements()) << name;
    for (int64_t i = 0; i < value.NumElements(); ++i) {
      ASSERT_EQ(g.data<float>()[i], value.data<float>()[i]) << name << "[" << i << "]";
    }
  }
}

class ParameterClientBulkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cluster = LocalCluster::Start({{"ps", 2}});
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(cluster).value();
    ASSERT_FALSE(cluster_->server("ps", 0)->bulk_endpoint().empty());
  }

  BulkChannelStats Received(int task) const {
    return cluster_->server("ps", task)->bulk_received();
  }
  BulkChannelStats Sent(int task) const { return cluster_->server("ps", task)->bulk_sent(); }

  std::unique_ptr<LocalCluster> cluster_;
};

TEST_F(ParameterClientBulkTest, SyncPushesSentApartEqualThoseCarriedWholeAndUseTheChannels) {
  constexpr int kSteps = 5;
  const RunResult whole = Train(*cluster_, "whole/model", UpdateMode::kSync, 2, kSteps, 0);
  EXPECT_EQ(Received(0).frames, 0);
  EXPECT_EQ(Sent(0).frames, 0);
  ASSERT_EQ(whole.global_step, kSteps);

  const RunResult apart = Train(*cluster_, "apart/model", UpdateMode::kSync, 2, kSteps, 1024);
  EXPECT_EQ(apart.global_step, kSteps);
  ExpectSameValues(apart.values, whole.values);
  // Task 0 holds the big "a": every gradient of it came on its channel and every reply
  // value went out on it. Task 1's "b" is under the rule: all of it stayed on CAF.
  EXPECT_EQ(Received(0).frames, 2 * kSteps);
  EXPECT_EQ(Received(0).bytes, 2 * kSteps * kBig * 4);
  EXPECT_EQ(Sent(0).frames, 2 * kSteps);
  EXPECT_EQ(Sent(0).fallbacks, 0);
  EXPECT_EQ(Received(1).frames, 0);
  EXPECT_EQ(Sent(1).frames, 0);
}

TEST_F(ParameterClientBulkTest, AsyncPushAndPullSentApartAppliesEveryPushOnce) {
  constexpr int kSteps = 8;
  const RunResult whole = Train(*cluster_, "whole/model", UpdateMode::kAsync, 1, kSteps, 0);
  const RunResult apart = Train(*cluster_, "apart/model", UpdateMode::kAsync, 1, kSteps, 1024);
  EXPECT_EQ(whole.global_step, kSteps);
  EXPECT_EQ(apart.global_step, kSteps);
  ExpectSameValues(apart.values, whole.values);
  EXPECT_EQ(Received(0).frames, kSteps);
  EXPECT_EQ(Sent(0).frames, kSteps);
}

}  // namespace
}  // namespace actorflow
