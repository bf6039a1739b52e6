// `actorflow train --cluster FILE --job worker --task I --mode allreduce`: each worker
// its own process on 127.0.0.1, serving its task and training its replica; the
// replicas end with the same weights (the same hash in every process) and learn the
// digits. Every wait is bounded; no sleeps, no fixed ports.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/child_process.h"
#include "tests/cluster_test_kit.h"
#include "tests/process_cluster.h"

namespace actorflow {
namespace {

using nlohmann::json;
using subprocess::ExampleData;
using subprocess::FinishWorker;
using subprocess::ProcessCluster;
using subprocess::ProcessClusterOptions;
using subprocess::StartTestCluster;
using subprocess::StartWorker;

TEST(AllReduceProcessTest, WorkersInSeparateProcessesEndWithTheSameWeights) {
  ProcessClusterOptions options;
  options.shape = {{"worker", 2}};
  options.not_started = {{"worker", 0}, {"worker", 1}};  // the train processes serve them
  auto cluster = StartTestCluster(std::move(options));
  ASSERT_NE(cluster, nullptr);
  // clang-format off
  const std::vector<std::string> flags = {
      "--mode", "allreduce", "--train", ExampleData("digits_training.csv"),
      "--test", ExampleData("digits_test.csv"), "--normalize", "--hidden", "64,32",
      "--optimizer", "sgd", "--lr", "0.1", "--epochs", "4", "--bucket-mb", "0.004",
      "--timeout-ms", "30000", "--json"};
  // clang-format on
  std::vector<std::unique_ptr<subprocess::ChildProcess>> workers;
  for (int task = 0; task < 2; ++task) workers.push_back(StartWorker(*cluster, task, flags));
  std::vector<json> results;
  for (int task = 0; task < 2; ++task) {
    ASSERT_NE(workers[task], nullptr);
    results.push_back(FinishWorker(workers[task].get(), "worker " + std::to_string(task),
                                   std::chrono::minutes(3)));
    ASSERT_TRUE(results.back().is_object());
  }
  for (const json& r : results) {
    EXPECT_EQ(r.at("mode"), "allreduce") << r.dump();
    EXPECT_EQ(r.at("workers"), 2) << r.dump();
    EXPECT_GT(r.at("buckets").get<int>(), 1) << r.dump();
    EXPECT_EQ(r.at("global_step"), results[0].at("global_step")) << r.dump();
    EXPECT_GE(r.at("accuracy").get<double>(), 0.9) << r.dump();
    EXPECT_EQ(r.at("worker_reports").size(), 1u) << r.dump();  // its own worker only
  }
  EXPECT_EQ(results[0].at("weights_hash"), results[1].at("weights_hash"));
  EXPECT_EQ(results[0].at("accuracy"), results[1].at("accuracy"));
}

}  // namespace
}  // namespace actorflow
