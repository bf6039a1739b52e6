// How the shards' replies fold into a ParameterClient's results, as plain calls.
#include "kernels/ps/shard_results.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace actorflow {
namespace {

ShardPushReply Reply(Status status, bool applied, int64_t staleness, int64_t version,
                     int aggregated = 0) {
  ShardPushReply r;
  r.status = std::move(status);
  r.applied = applied;
  r.staleness = staleness;
  r.version = version;
  r.aggregated = aggregated;
  return r;
}

TEST(ShardResultsTest, APushIsAppliedWhenEveryShardAppliedIt) {
  PushResult result;
  ASSERT_TRUE(AddShardPushReply(Reply(Status::OK(), true, 1, 7, 3), &result).ok());
  ASSERT_TRUE(AddShardPushReply(Reply(Status::OK(), true, 2, 5, 2), &result).ok());
  EXPECT_TRUE(result.applied);
  EXPECT_EQ(result.staleness, 2);    // the largest
  EXPECT_EQ(result.global_step, 7);  // the largest version
  EXPECT_EQ(result.aggregated, 2);   // the smallest count

  ASSERT_TRUE(AddShardPushReply(Reply(Status::OK(), false, 4, 7), &result).ok());
  EXPECT_FALSE(result.applied);  // one shard dropped it as stale
  EXPECT_EQ(result.staleness, 4);
  EXPECT_EQ(result.aggregated, 2);
}

TEST(ShardResultsTest, AnSspPushAnsweredPastItsDeadlineCountsAsAppliedNotAsAFailure) {
  PushResult result;
  EXPECT_TRUE(
      AddShardPushReply(Reply(DeadlineExceeded("ssp wait"), true, 0, 3), &result).ok());
  EXPECT_TRUE(result.applied);
  const Status failed = AddShardPushReply(Reply(DeadlineExceeded("sync wait"), false, 0, 3),
                                          &result);
  EXPECT_EQ(failed.code(), Code::kDeadlineExceeded);
}

TEST(ShardResultsTest, StatsTakeTheLargestCountsAndTheUnionOfWorkers) {
  ShardStats a, b;
  a.initialized = true;
  a.version = 10;
  a.gradients_dropped_stale = 1;
  a.staleness_sum = 4;
  a.staleness_count = 4;
  a.workers_lost = {2};
  a.lost_causes = {"its client actor ended"};
  a.updates_by_aggregated = {0, 10};
  b.version = 12;
  b.gradients_dropped_stale = 3;
  b.staleness_sum = 0;
  b.staleness_count = 4;
  b.workers_lost = {1, 2};
  b.lost_causes = {"", "other"};
  b.workers_left = {3};
  b.updates_by_aggregated = {0, 12};
  const ParameterStats s = StatsOfShards({a, b});
  EXPECT_EQ(s.updates_applied, 12);
  EXPECT_EQ(s.gradients_dropped_stale, 3);
  EXPECT_DOUBLE_EQ(s.mean_staleness, 0.5);
  EXPECT_EQ(s.workers_lost, (std::vector<int>{1, 2}));
  EXPECT_EQ(s.lost_causes.at(2), "its client actor ended");  // the first shard's account
  EXPECT_EQ(s.lost_causes.count(1), 0u);
  EXPECT_EQ(s.workers_left, std::vector<int>{3});
  EXPECT_EQ(s.shards_uninitialized, 1);
  EXPECT_EQ(s.updates_by_aggregated, (std::vector<int64_t>{0, 10}));
}

}  // namespace
}  // namespace actorflow
