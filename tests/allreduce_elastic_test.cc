// Elastic all-reduce training (TrainWithAllReduce with elastic) on a LocalCluster of
// 3 worker tasks: a task stopped mid-training is dropped and the other two go on in a
// new membership epoch; restarted, it joins again with the chief's variables, and
// the run ends with all three replicas byte-identical at the planned global step.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "actorflow.h"
#include "training/distributed/allreduce_training.h"

namespace actorflow {
namespace {

// Two blobs in 4 features: class = whether the features sum above 0.
LabeledData Blobs(int rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  LabeledData data{Tensor(DType::kFloat32, Shape{rows, 4}), Tensor(DType::kInt32, Shape{rows})};
  for (int i = 0; i < rows; ++i) {
    float sum = 0;
    for (int j = 0; j < 4; ++j) {
      const float v = normal(rng);
      data.features.data<float>()[i * 4 + j] = v;
      sum += v;
    }
    data.labels.data<int32_t>()[i] = sum > 0 ? 1 : 0;
  }
  return data;
}

AllReduceTrainingOptions Options(LocalCluster& cluster, int workers) {
  AllReduceTrainingOptions o;
  for (int j = 0; j < 4; ++j) o.spec.feature_columns.push_back({"f" + std::to_string(j), {}});
  o.spec.hidden_units = {16};
  o.spec.n_classes = 2;
  o.optimizer = "sgd";
  o.learning_rate = 0.2;
  o.batch_size = 16;
  o.epochs = 6;  // 960 rows, 3 workers: 20 steps an epoch, 120 in all
  // Bounds every step; above the 10 s a stopped in-process task takes to shut down
  // plus the join (the chief holds its step meanwhile, the others wait in theirs).
  o.timeout_ms = 60000;
  for (int w = 0; w < workers; ++w) {
    o.devices.push_back("/job:worker/replica:0/task:" + std::to_string(w) + "/device:CPU:0");
    SessionOptions session;
    session.target = *cluster.Target("worker", w);
    o.session_factories.push_back([session](const Graph* graph) { return NewSession(graph, session); });
  }
  return o;
}

TEST(AllReduceElasticTest, ALostWorkerIsDroppedAndJoinsAgainWithTheChiefsVariables) {
  auto cluster = LocalCluster::Start({{"worker", 3}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  AllReduceTrainingOptions options = Options(**cluster, 3);
  options.elastic = true;
  options.min_workers = 2;
  std::mutex mu;
  std::condition_variable logged;
  std::vector<std::string> lines;
  options.log = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    lines.push_back(line);
    logged.notify_all();
  };
  std::atomic<bool> stopped{false}, restarted{false};
  options.progress = [&](int worker, int64_t step, int64_t, double) {
    if (worker != 0) return;
    if (step == 30 && !stopped.exchange(true)) {
      ASSERT_TRUE((*cluster)->StopTask("worker", 2).ok());
    }
    if (step == 60 && !restarted.exchange(true)) {
      ASSERT_TRUE((*cluster)->RestartTask("worker", 2).ok());
      // The chief holds its next step until worker 2 has asked to join, so that the
      // join comes before the run's end (the other worker waits in the collective).
      std::unique_lock<std::mutex> lock(mu);
      ASSERT_TRUE(logged.wait_for(lock, std::chrono::seconds(15), [&] {
        for (const std::string& l : lines) {
          if (l.find("worker 2 answers again") != std::string::npos) return true;
        }
        return false;
      })) << "worker 2 never asked to join";
    }
  };
  auto result = TrainWithAllReduce(options, Blobs(960, 1), Blobs(200, 2));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(stopped && restarted);
  EXPECT_EQ(result->workers_lost, 1);
  EXPECT_EQ(result->workers_joined, 1);
  EXPECT_EQ(result->membership_epochs, 3);
  EXPECT_EQ(result->final_members, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(result->replicas_identical);
  EXPECT_EQ(result->eval.global_step, 120);
  EXPECT_GE(result->eval.accuracy, 0.85);
  EXPECT_THAT(lines, ::testing::Contains(::testing::HasSubstr("worker 2 left epoch 0")));
  EXPECT_THAT(lines, ::testing::Contains("membership epoch 1: workers 0, 1"));
  EXPECT_THAT(lines, ::testing::Contains("membership epoch 2: workers 0, 1, 2"));
}

TEST(AllReduceElasticTest, WithoutElasticALostWorkerEndsTheRunNamingItsTask) {
  auto cluster = LocalCluster::Start({{"worker", 2}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  AllReduceTrainingOptions options = Options(**cluster, 2);
  std::atomic<bool> stopped{false};
  options.progress = [&](int worker, int64_t step, int64_t, double) {
    if (worker == 0 && step == 5 && !stopped.exchange(true)) {
      ASSERT_TRUE((*cluster)->StopTask("worker", 1).ok());
    }
  };
  auto result = TrainWithAllReduce(options, Blobs(960, 1), Blobs(200, 2));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), Code::kUnavailable) << result.status();
  EXPECT_THAT(result.status().message(), ::testing::HasSubstr("task:1")) << result.status();
}

}  // namespace
}  // namespace actorflow
