// Step and partition ids: unique among the masters of a process (whatever thread
// asks) and, through the task ordinal, among the tasks of a cluster.

#include "actors/runtime/step_ids.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <set>
#include <thread>
#include <vector>

namespace actorflow {
namespace {

ClusterSpec TwoJobs() {
  auto spec = ClusterSpec::FromJson(
      R"({"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223", "127.0.0.1:2224"]})");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

TEST(StepIdsTest, TaskOrdinalIsThePositionInTheSpecPlusOne) {
  ClusterSpec spec = TwoJobs();
  EXPECT_EQ(TaskOrdinal(&spec, "/job:ps/replica:0/task:0"), 1u);
  EXPECT_EQ(TaskOrdinal(&spec, "/job:worker/replica:0/task:0"), 2u);
  EXPECT_EQ(TaskOrdinal(&spec, "/job:worker/replica:0/task:1"), 3u);
  EXPECT_EQ(TaskOrdinal(&spec, "/job:chief/replica:0/task:0"), 0u);
  EXPECT_EQ(TaskOrdinal(nullptr, "/job:ps/replica:0/task:0"), 0u);
}

TEST(StepIdsTest, IdsCarryTheirTaskAndProcess) {
  const int64_t step = NextStepId(3);
  ASSERT_GT(step, 0);
  IdFields f = DecodeId(static_cast<uint64_t>(step));
  EXPECT_EQ(f.ordinal, 3u);
  EXPECT_EQ(f.process, static_cast<uint32_t>(getpid()) & ((1u << 22) - 1));
  EXPECT_GT(f.counter, 0u);
  EXPECT_EQ(DecodeId(NextPartitionId(7)).ordinal, 7u);
}

TEST(StepIdsTest, TwoTasksNeverShareAnId) {
  // Same process, same counter: only the ordinal tells them apart, and it does.
  std::set<int64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    EXPECT_TRUE(seen.insert(NextStepId(1)).second);
    EXPECT_TRUE(seen.insert(NextStepId(2)).second);
  }
}

TEST(StepIdsTest, MastersOnManyThreadsGetDistinctIds) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 20000;
  std::vector<std::vector<int64_t>> steps(kThreads);
  std::vector<std::vector<uint64_t>> partitions(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        steps[t].push_back(NextStepId(5));
        partitions[t].push_back(NextPartitionId(5));
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<int64_t> all_steps;
  std::set<uint64_t> all_partitions;
  for (int t = 0; t < kThreads; ++t) {
    all_steps.insert(steps[t].begin(), steps[t].end());
    all_partitions.insert(partitions[t].begin(), partitions[t].end());
  }
  EXPECT_EQ(all_steps.size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_EQ(all_partitions.size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_EQ(all_steps.count(0), 0u);
}

}  // namespace
}  // namespace actorflow
