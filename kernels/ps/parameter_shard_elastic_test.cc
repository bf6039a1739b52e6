// Elastic membership in the shard's synchronous protocol, as plain calls: which
// workers a version waits for while workers join, die and leave, the count each
// update averaged, the pause below min_workers, and linear learning-rate scaling.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/ps/parameter_shard_state.h"
#include "kernels/ps/shard_state_testing.h"

namespace actorflow {
namespace {

using State = ParameterShardState;
constexpr int64_t kNever = State::kNoDeadline;

ShardConfig Elastic(int slots, int min_workers, std::string lr_scaling = "none") {
  ShardConfig c;
  c.mode = UpdateMode::kSync;
  c.total_replicas = slots;
  c.elastic = true;
  c.min_workers = min_workers;
  c.lr_scaling = std::move(lr_scaling);
  c.optimizer = "sgd";
  c.learning_rate = 1.0;
  return c;
}

// A shard holding "w" = [0, 0] (float32).
std::unique_ptr<State> Shard(const ShardConfig& config) {
  return shard_testing::ShardHoldingW(config, {0, 0});
}
using shard_testing::Grad;
using shard_testing::Value;

void JoinAll(State* s, std::vector<int> workers) {
  State::Replies out;
  for (int w : workers) ASSERT_TRUE(s->Join(w, &out).ok());
}

TEST(ParameterShardElasticTest, EachVersionAveragesTheGradientsOfItsLiveMembers) {
  auto s = Shard(Elastic(4, 1));
  JoinAll(s.get(), {0, 1});
  State::Replies out;
  s->Push(1, Grad(0, 0, {2, 0}), kNever, &out);
  EXPECT_TRUE(out.pushes.empty());  // waits for worker 1, not for the 2 empty slots
  s->Push(2, Grad(1, 0, {4, 2}), kNever, &out);
  ASSERT_EQ(out.pushes.size(), 2u);
  for (const auto& r : out.pushes) {
    EXPECT_TRUE(r.status.ok()) << r.status;
    EXPECT_TRUE(r.applied);
    EXPECT_EQ(r.aggregated, 2);
  }
  EXPECT_EQ(Value(s.get()), (std::vector<float>{-3, -1}));
  auto stats = s->GetStats();
  EXPECT_EQ(stats.members, (std::vector<int>{0, 1}));
  EXPECT_EQ(stats.membership_epoch, 2);
  EXPECT_EQ(stats.updates_by_aggregated, (std::vector<int64_t>{0, 0, 1, 0, 0}));
}

TEST(ParameterShardElasticTest, AWorkerJoiningMidVersionContributesFromTheNextVersion) {
  auto s = Shard(Elastic(3, 1));
  JoinAll(s.get(), {0, 1});
  State::Replies out;
  s->Push(1, Grad(0, 0, {1, 1}), kNever, &out);
  ASSERT_TRUE(s->Join(2, &out).ok());  // version 0 already has a gradient
  s->Push(2, Grad(1, 0, {1, 1}), kNever, &out);
  ASSERT_EQ(out.pushes.size(), 2u);  // version 0 completed without waiting for worker 2
  EXPECT_EQ(out.pushes[0].aggregated, 2);
  out = {};
  s->Push(3, Grad(0, 1, {1, 1}), kNever, &out);
  s->Push(4, Grad(1, 1, {1, 1}), kNever, &out);
  EXPECT_TRUE(out.pushes.empty());  // version 1 waits for the newcomer too
  s->Push(5, Grad(2, 1, {4, 4}), kNever, &out);
  ASSERT_EQ(out.pushes.size(), 3u);
  EXPECT_EQ(out.pushes[0].aggregated, 3);
  EXPECT_EQ(Value(s.get()), (std::vector<float>{-3, -3}));  // -1 then -(1+1+4)/3
}

TEST(ParameterShardElasticTest, ALostMemberNoLongerHoldsItsVersionAndItsArrivedGradientCounts) {
  auto s = Shard(Elastic(3, 1));
  JoinAll(s.get(), {0, 1, 2});
  State::Replies out;
  s->Push(1, Grad(0, 0, {3, 0}), kNever, &out);
  s->Push(2, Grad(2, 0, {0, 3}), kNever, &out);  // worker 2 pushed, then dies
  s->WorkerLost(2, &out);
  EXPECT_TRUE(out.pushes.empty());  // still waiting for worker 1
  s->WorkerLost(1, &out);           // worker 1 dies before pushing
  ASSERT_EQ(out.pushes.size(), 2u);
  EXPECT_EQ(out.pushes[0].aggregated, 2);
  EXPECT_EQ(Value(s.get()), (std::vector<float>{-1.5f, -1.5f}));
  auto stats = s->GetStats();
  EXPECT_EQ(stats.members, (std::vector<int>{0}));
  EXPECT_EQ(stats.workers_lost, (std::vector<int>{1, 2}));
  // The survivor alone now completes each version.
  out = {};
  s->Push(3, Grad(0, 1, {1, 1}), kNever, &out);
  ASSERT_EQ(out.pushes.size(), 1u);
  EXPECT_EQ(out.pushes[0].aggregated, 1);
  // Pulls carry the membership and the data cursor (gradients applied: 2 + 1).
  out = {};
  s->Pull(9, 0, kNever, &out);
  ASSERT_EQ(out.pulls.size(), 1u);
  EXPECT_EQ(out.pulls[0].membership.members, (std::vector<int>{0}));
  EXPECT_EQ(out.pulls[0].membership.epoch, 5);  // 3 joins, 2 losses
  EXPECT_EQ(out.pulls[0].membership.applied_gradients, 3);
  EXPECT_EQ(s->GetStats().membership_changes,
            (std::vector<MembershipChange>{{"join", 0, 0},
                                           {"join", 1, 0},
                                           {"join", 2, 0},
                                           {"lost", 2, 0},
                                           {"lost", 1, 0}}));
}

TEST(ParameterShardElasticTest, TheStepDeadlineCompletesAVersionWithTheGradientsThatArrived) {
  auto s = Shard(Elastic(3, 2));
  JoinAll(s.get(), {0, 1, 2});
  State::Replies out;
  s->Push(1, Grad(0, 0, {2, 2}), /*deadline=*/100, &out);
  s->Push(2, Grad(1, 0, {4, 4}), /*deadline=*/120, &out);
  s->Expire(99, &out);
  EXPECT_TRUE(out.pushes.empty());
  s->Expire(100, &out);  // worker 2 is silent (hung, or its death not yet seen)
  ASSERT_EQ(out.pushes.size(), 2u);
  for (const auto& r : out.pushes) {
    EXPECT_TRUE(r.status.ok()) << r.status;
    EXPECT_EQ(r.aggregated, 2);
  }
  EXPECT_EQ(Value(s.get()), (std::vector<float>{-3, -3}));
  // The silent member was evicted: the next version does not wait for it.
  EXPECT_EQ(s->GetStats().members, (std::vector<int>{0, 1}));
  EXPECT_EQ(s->GetStats().membership_changes.back(), (MembershipChange{"timeout", 2, 0}));
  out = {};
  s->Push(3, Grad(2, 0, {9, 9}), kNever, &out);  // the straggler's late gradient
  ASSERT_EQ(out.pushes.size(), 1u);
  EXPECT_FALSE(out.pushes[0].applied);
  EXPECT_EQ(out.pushes[0].status.code(), Code::kFailedPrecondition);
  EXPECT_THAT(out.pushes[0].status.message(), testing::HasSubstr("must Register again"));
  out = {};
  s->Push(4, Grad(0, 1, {1, 1}), kNever, &out);
  s->Push(5, Grad(1, 1, {1, 1}), kNever, &out);
  ASSERT_EQ(out.pushes.size(), 2u);  // version 1 completes with the two live members
  // Joining again makes it a member of the next version.
  ASSERT_TRUE(s->Join(2, &out).ok());
  EXPECT_EQ(s->GetStats().members, (std::vector<int>{0, 1, 2}));
}

TEST(ParameterShardElasticTest, BelowMinWorkersTrainingPausesUntilAWorkerJoins) {
  auto s = Shard(Elastic(3, 2));
  JoinAll(s.get(), {0, 1});
  State::Replies out;
  s->WorkerLost(1, &out);
  s->Push(1, Grad(0, 0, {1, 1}), /*deadline=*/50, &out);
  EXPECT_TRUE(out.pushes.empty());  // one member, fewer than min_workers=2
  s->Expire(50, &out);
  ASSERT_EQ(out.pushes.size(), 1u);
  EXPECT_EQ(out.pushes[0].status.code(), Code::kUnavailable);
  EXPECT_THAT(out.pushes[0].status.message(), testing::HasSubstr("training paused"));
  EXPECT_THAT(out.pushes[0].status.message(), testing::HasSubstr("min_workers=2"));
  EXPECT_FALSE(out.pushes[0].applied);
  EXPECT_EQ(Value(s.get()), (std::vector<float>{0, 0}));  // nothing applied
  // The worker retries; a worker joining the paused version lets it complete.
  out = {};
  s->Push(2, Grad(0, 0, {1, 1}), kNever, &out);
  ASSERT_TRUE(s->Join(2, &out).ok());
  EXPECT_TRUE(out.pushes.empty());
  s->Push(3, Grad(2, 0, {3, 3}), kNever, &out);
  ASSERT_EQ(out.pushes.size(), 2u);
  EXPECT_EQ(out.pushes[0].aggregated, 2);
  EXPECT_EQ(Value(s.get()), (std::vector<float>{-2, -2}));
}

// Two shards of one model decide a newcomer's first version each on its own: shard
// A, which no gradient of version 0 has reached, waits for it at version 0; shard B,
// which has the chief's, completes version 0 without it. The newcomer's sync pull
// sees B at version 1 and says so to A (WillPushFrom): A stops waiting for it at
// version 0 instead of holding the chief until a step deadline.
TEST(ParameterShardElasticTest, ANewcomerWhosePullIsAheadNoLongerHoldsAnEarlierVersion) {
  auto a = Shard(Elastic(2, 1));
  auto b = Shard(Elastic(2, 1));
  JoinAll(a.get(), {0});
  JoinAll(b.get(), {0});
  State::Replies out_a, out_b;
  b->Push(1, Grad(0, 0, {1, 1}), kNever, &out_b);  // the chief's version 0 reaches B first
  ASSERT_TRUE(a->Join(1, &out_a).ok());
  ASSERT_TRUE(b->Join(1, &out_b).ok());
  ASSERT_EQ(out_b.pushes.size(), 1u);  // B: version 0 done with the chief alone
  EXPECT_EQ(b->version(), 1);
  a->Push(1, Grad(0, 0, {1, 1}), kNever, &out_a);
  EXPECT_TRUE(out_a.pushes.empty());  // A: version 0 waits for worker 1
  a->WillPushFrom(1, 0, &out_a);       // not ahead of A: nothing changes
  EXPECT_TRUE(out_a.pushes.empty());
  a->WillPushFrom(1, 1, &out_a);
  ASSERT_EQ(out_a.pushes.size(), 1u);
  EXPECT_TRUE(out_a.pushes[0].applied);
  EXPECT_EQ(out_a.pushes[0].aggregated, 1);
  EXPECT_EQ(a->version(), 1);
  // From version 1 on, both shards wait for both workers.
  out_a = {};
  a->Push(2, Grad(0, 1, {1, 1}), kNever, &out_a);
  EXPECT_TRUE(out_a.pushes.empty());
  a->Push(3, Grad(1, 1, {3, 3}), kNever, &out_a);
  ASSERT_EQ(out_a.pushes.size(), 2u);
  EXPECT_EQ(out_a.pushes[0].aggregated, 2);
  EXPECT_EQ(Value(a.get()), (std::vector<float>{-3, -3}));  // -1, then -(1+3)/2
}

// What WillPushFrom must not drop: a gradient of the worker that already arrived,
// and a member whose leaving would take the version below min_workers.
TEST(ParameterShardElasticTest, WillPushFromKeepsAnArrivedGradientAndMinWorkers) {
  auto s = Shard(Elastic(3, 2));
  JoinAll(s.get(), {0, 1});
  State::Replies out;
  s->Push(1, Grad(1, 0, {2, 2}), kNever, &out);
  s->WillPushFrom(1, 1, &out);  // its gradient for version 0 is here: it still counts
  s->WillPushFrom(0, 1, &out);  // would leave 1 member < min_workers=2: ignored
  EXPECT_TRUE(out.pushes.empty());
  s->Push(2, Grad(0, 0, {4, 4}), kNever, &out);
  ASSERT_EQ(out.pushes.size(), 2u);
  EXPECT_EQ(out.pushes[0].aggregated, 2);
  EXPECT_EQ(Value(s.get()), (std::vector<float>{-3, -3}));
}

TEST(ParameterShardElasticTest, LinearScalingScalesTheRateByTheAggregatedShareOfTheSlots) {
  auto s = Shard(Elastic(4, 1, "linear"));
  JoinAll(s.get(), {0, 1});
  State::Replies out;
  s->Push(1, Grad(0, 0, {4, 4}), kNever, &out);
  s->Push(2, Grad(1, 0, {4, 0}), kNever, &out);
  ASSERT_EQ(out.pushes.size(), 2u);
  // Average (4, 2), rate 1 * 2/4.
  EXPECT_EQ(Value(s.get()), (std::vector<float>{-2, -1}));
}

TEST(ParameterShardElasticTest, OnlyJoinedWorkersMayPushAndBadConfigsAreNamed) {
  auto s = Shard(Elastic(2, 1));
  State::Replies out;
  s->Push(1, Grad(1, 0, {1, 1}), kNever, &out);
  ASSERT_EQ(out.pushes.size(), 1u);
  EXPECT_EQ(out.pushes[0].status.code(), Code::kFailedPrecondition);
  EXPECT_THAT(out.pushes[0].status.message(), testing::HasSubstr("has not joined"));

  ShardConfig below = Elastic(2, 0);
  EXPECT_THAT(ValidateShardConfig(below).message(), testing::HasSubstr("min_workers=0"));
  ShardConfig async = Elastic(2, 1);
  async.mode = UpdateMode::kAsync;
  EXPECT_THAT(ValidateShardConfig(async).message(), testing::HasSubstr("sync mode"));
  EXPECT_THAT(ValidateShardConfig(Elastic(2, 1, "cubic")).message(),
              testing::HasSubstr("lr_scaling must be none or linear"));
  EXPECT_EQ(Elastic(3, 2, "linear").ToString(),
            "sync elastic 2..3 workers, sgd lr=1 (linear scaling)");
  EXPECT_NE(Elastic(3, 2), Elastic(3, 1));
}

}  // namespace
}  // namespace actorflow
