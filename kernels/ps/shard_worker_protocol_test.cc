// A worker's side of the shard protocol as plain calls: replies in, the next
// requests and snapshots out.
#include "kernels/ps/shard_worker_protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace actorflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Round robin over the sorted names, as placement's kRoundRobin does.
StatusOr<std::map<std::string, int>> RoundRobin(const std::map<std::string, int64_t>& bytes,
                                                int num_shards) {
  std::map<std::string, int> shard_of;
  int next = 0;
  for (const auto& [name, size] : bytes) shard_of[name] = next++ % num_shards;
  return shard_of;
}

ShardWorkerProtocol Protocol(UpdateMode mode, SyncCatchUp catch_up, int num_shards = 2) {
  return ShardWorkerProtocol(ShardWorkerOptions{num_shards, mode, catch_up, RoundRobin});
}

Tensor Vec(std::vector<float> values) { return Tensor::FromVector<float>(values); }

ShardPullReply Pulled(int64_t version, std::vector<std::string> names) {
  ShardPullReply r;
  r.version = version;
  for (const std::string& name : names) {
    r.names.push_back(name);
    r.values.push_back(Vec({static_cast<float>(version), 0}));
  }
  r.membership.epoch = version;
  return r;
}

ShardPushReply PushedBack(int64_t values_version, std::vector<std::string> names) {
  ShardPushReply r;
  r.applied = true;
  r.version = values_version;
  r.values_version = values_version;
  for (const std::string& name : names) {
    r.names.push_back(name);
    r.values.push_back(Vec({static_cast<float>(values_version), 1}));
  }
  return r;
}

// Pulls once: shard s answers replies[s]; gives the round after the first.
PullRound PullOnce(ShardWorkerProtocol* protocol, const std::vector<ShardPullReply>& replies) {
  PullRound round = protocol->StartPull();
  for (int s : round.shards) EXPECT_TRUE(protocol->AddPullReply(s, replies[s]).ok());
  return protocol->NextPullRound();
}

std::map<std::string, Tensor> Gradients() {
  return {{"a", Vec({1, 1})}, {"b", Vec({2, 2})}, {"c", Vec({3, 3})}};
}

// Shard 0 holds a and c, shard 1 holds b; both at `versions`.
ShardWorkerProtocol PulledProtocol(UpdateMode mode, SyncCatchUp catch_up,
                                   std::vector<int64_t> versions) {
  ShardWorkerProtocol protocol = Protocol(mode, catch_up);
  protocol.JoinedAs(1);
  PullOnce(&protocol, {Pulled(versions[0], {"a", "c"}), Pulled(versions[1], {"b"})});
  return protocol;
}

TEST(ShardWorkerProtocolTest, InitializationSplitsTheValuesOverTheShardsByTheAssigner) {
  ShardWorkerProtocol protocol = Protocol(UpdateMode::kAsync, SyncCatchUp::kPullShardsBehind, 2);
  StatusOr<InitializationPlan> plan =
      protocol.PlanInitialization({{"c", Vec({3, 3})}, {"a", Vec({1})}, {"b", Vec({2})}});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->names[0], ElementsAre("a", "c"));
  EXPECT_THAT(plan->names[1], ElementsAre("b"));
  ASSERT_EQ(plan->values[0].size(), 2u);
  EXPECT_EQ(plan->values[0][1].shape(), Shape({2}));  // c's value beside c's name
  EXPECT_EQ(plan->shard_of.at("b"), 1);

  // Initialized: the variables are known, so a push is checked against them.
  protocol.Initialized(*plan);
  protocol.JoinedAs(0);
  ParameterSnapshot base;
  base.shard_versions = {0, 0};
  StatusOr<PushPlan> push = protocol.PlanPush(base, {{"a", Vec({1})}}, false);
  EXPECT_THAT(push.status().message(), HasSubstr("no gradient for variable 'b'"));
}

TEST(ShardWorkerProtocolTest, InitializationRefusesValuesTheShardsCannotHold) {
  ShardWorkerProtocol protocol = Protocol(UpdateMode::kAsync, SyncCatchUp::kPullShardsBehind);
  StatusOr<InitializationPlan> plan =
      protocol.PlanInitialization({{"steps", Tensor::Scalar<int64_t>(3)}});
  EXPECT_EQ(plan.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(plan.status().message(), HasSubstr("variable 'steps' has initial value int64"));
  EXPECT_THAT(plan.status().message(), HasSubstr("float32 or float64"));
}

TEST(ShardWorkerProtocolTest, SyncPullAsksTheShardsBehindAgainForTheNewestVersion) {
  ShardWorkerProtocol protocol = Protocol(UpdateMode::kSync, SyncCatchUp::kPullShardsBehind, 3);
  // Shard 2 holds nothing: its version does not count.
  PullRound again = PullOnce(&protocol, {Pulled(4, {"a"}), Pulled(5, {"b"}), Pulled(9, {})});
  EXPECT_THAT(again.shards, ElementsAre(0));
  EXPECT_EQ(again.min_version, 5);
  EXPECT_THAT(protocol.snapshot().values, IsEmpty());  // not done yet

  ASSERT_TRUE(protocol.AddPullReply(0, Pulled(5, {"a"})).ok());
  EXPECT_THAT(protocol.NextPullRound().shards, IsEmpty());
  const ParameterSnapshot& snapshot = protocol.snapshot();
  EXPECT_THAT(snapshot.shard_versions, ElementsAre(5, 5, 9));
  EXPECT_EQ(snapshot.global_step, 5);
  EXPECT_EQ(snapshot.values.at("a").data<float>()[0], 5.0f);  // the caught-up value
  EXPECT_TRUE(protocol.Holds(1));
  EXPECT_FALSE(protocol.Holds(2));
}

TEST(ShardWorkerProtocolTest, AsyncAndPushCatchUpTakeAPullAsItCame) {
  for (ShardWorkerProtocol protocol :
       {Protocol(UpdateMode::kAsync, SyncCatchUp::kPullShardsBehind),
        Protocol(UpdateMode::kSync, SyncCatchUp::kPushToShardsBehind)}) {
    EXPECT_THAT(PullOnce(&protocol, {Pulled(4, {"a"}), Pulled(7, {"b"})}).shards, IsEmpty());
    EXPECT_THAT(protocol.snapshot().shard_versions, ElementsAre(4, 7));
    EXPECT_EQ(protocol.snapshot().membership.epoch, 4);  // shard 0's: the first holding any
    EXPECT_EQ(protocol.NewestVersion(), 7);
    EXPECT_EQ(protocol.OldestVersion(), 4);
  }
}

TEST(ShardWorkerProtocolTest, APullReplyWithAnErrorFoldsNothing) {
  ShardWorkerProtocol protocol = Protocol(UpdateMode::kAsync, SyncCatchUp::kPullShardsBehind);
  protocol.StartPull();
  ShardPullReply failed = Pulled(3, {"a"});
  failed.status = Unavailable("/job:ps/task:1 is gone");
  EXPECT_EQ(protocol.AddPullReply(1, failed).code(), Code::kUnavailable);
  ASSERT_TRUE(protocol.AddPullReply(0, Pulled(2, {"b"})).ok());
  protocol.NextPullRound();
  EXPECT_THAT(protocol.snapshot().shard_versions, ElementsAre(2, 0));
  EXPECT_EQ(protocol.snapshot().values.count("a"), 0u);
}

TEST(ShardWorkerProtocolTest, APushIsSplitPerShardWithItsBaseVersionsAndOneSequence) {
  ShardWorkerProtocol protocol =
      PulledProtocol(UpdateMode::kAsync, SyncCatchUp::kPullShardsBehind, {3, 6});
  StatusOr<PushPlan> first = protocol.PlanPush(protocol.snapshot(), Gradients(), true);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT(first->shards, ElementsAre(0, 1));
  EXPECT_THAT(first->args[0].names, ElementsAre("a", "c"));
  EXPECT_EQ(first->args[0].gradients[1].data<float>()[0], 3.0f);  // c's gradient
  EXPECT_THAT(first->args[1].names, ElementsAre("b"));
  EXPECT_EQ(first->args[0].base_version, 3);
  EXPECT_EQ(first->args[1].base_version, 6);
  EXPECT_EQ(first->args[1].worker, 1);
  EXPECT_TRUE(first->args[1].return_values);
  EXPECT_EQ(first->args[0].sequence, 1u);
  EXPECT_EQ(first->args[1].sequence, 1u);

  StatusOr<PushPlan> second = protocol.PlanPush(protocol.snapshot(), Gradients(), false);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->args[0].sequence, 2u);
  EXPECT_FALSE(second->args[0].return_values);

  protocol.JoinedAs(1);  // a join numbers the pushes from 1 again
  EXPECT_EQ(protocol.PlanPush(protocol.snapshot(), Gradients(), false)->args[0].sequence, 1u);
}

TEST(ShardWorkerProtocolTest, PushCatchUpSendsASyncPushOnlyToTheShardsBehind) {
  ShardWorkerProtocol protocol =
      PulledProtocol(UpdateMode::kSync, SyncCatchUp::kPushToShardsBehind, {5, 4});
  StatusOr<PushPlan> push = protocol.PlanPush(protocol.snapshot(), Gradients(), true);
  ASSERT_TRUE(push.ok()) << push.status();
  EXPECT_THAT(push->shards, ElementsAre(1));
  EXPECT_THAT(push->args[0].names, ElementsAre("b"));
  EXPECT_EQ(push->args[0].base_version, 4);

  // Its replies cover shard 1 only: no snapshot, the caller pulls again.
  EXPECT_TRUE(protocol.SnapshotFromPushReplies(protocol.snapshot(), *push, {PushedBack(5, {"b"})})
                  .shard_versions.empty());
}

TEST(ShardWorkerProtocolTest, APushIsCheckedAgainstTheVariablesBeforeAnythingIsSent) {
  ShardWorkerProtocol protocol =
      PulledProtocol(UpdateMode::kAsync, SyncCatchUp::kPullShardsBehind, {1, 1});
  const ParameterSnapshot base = protocol.snapshot();
  auto message = [&](std::map<std::string, Tensor> gradients) {
    StatusOr<PushPlan> plan = protocol.PlanPush(base, gradients, false);
    EXPECT_EQ(plan.status().code(), Code::kInvalidArgument);
    return plan.status().message();
  };
  std::map<std::string, Tensor> unknown = Gradients();
  unknown["d"] = Vec({0, 0});
  EXPECT_THAT(message(unknown), HasSubstr("gradient for unknown variable 'd'"));
  std::map<std::string, Tensor> misshapen = Gradients();
  misshapen["b"] = Vec({0, 0, 0});
  EXPECT_THAT(message(misshapen), HasSubstr("gradient for variable 'b' is float32[3] but the "
                                            "variable is float32[2]"));
  std::map<std::string, Tensor> missing = Gradients();
  missing.erase("c");
  EXPECT_THAT(message(missing), HasSubstr("no gradient for variable 'c'"));

  // A snapshot that did not come from a pull (before any): no shard versions.
  StatusOr<PushPlan> unpulled = protocol.PlanPush(ParameterSnapshot(), Gradients(), false);
  EXPECT_THAT(unpulled.status().message(), HasSubstr("the snapshot has 0 shard versions"));

  // The failed plans numbered nothing.
  EXPECT_EQ(protocol.PlanPush(base, Gradients(), false)->args[0].sequence, 1u);
}

TEST(ShardWorkerProtocolTest, APushBeforeJoiningIsRefused) {
  ShardWorkerProtocol protocol = Protocol(UpdateMode::kAsync, SyncCatchUp::kPullShardsBehind);
  PullOnce(&protocol, {Pulled(0, {"a"}), Pulled(0, {"b"})});
  StatusOr<PushPlan> plan = protocol.PlanPush(protocol.snapshot(), {}, false);
  EXPECT_EQ(plan.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(plan.status().message(), HasSubstr("Push before Register"));
}

TEST(ShardWorkerProtocolTest, PushRepliesWithValuesMakeTheNextSnapshot) {
  ShardWorkerProtocol protocol =
      PulledProtocol(UpdateMode::kSync, SyncCatchUp::kPullShardsBehind, {3, 3});
  StatusOr<PushPlan> push = protocol.PlanPush(protocol.snapshot(), Gradients(), true);
  ASSERT_TRUE(push.ok());
  ParameterSnapshot next = protocol.SnapshotFromPushReplies(
      protocol.snapshot(), *push, {PushedBack(4, {"a", "c"}), PushedBack(4, {"b"})});
  EXPECT_THAT(next.shard_versions, ElementsAre(4, 4));
  EXPECT_EQ(next.global_step, 4);
  EXPECT_EQ(next.values.at("c").data<float>()[0], 4.0f);
  EXPECT_THAT(protocol.snapshot().shard_versions, ElementsAre(4, 4));  // the current one now
}

TEST(ShardWorkerProtocolTest, PushRepliesMakeNoSnapshotWhenIncompleteOrAtOddSyncVersions) {
  ShardWorkerProtocol protocol =
      PulledProtocol(UpdateMode::kSync, SyncCatchUp::kPullShardsBehind, {3, 3});
  StatusOr<PushPlan> push = protocol.PlanPush(protocol.snapshot(), Gradients(), true);
  ASSERT_TRUE(push.ok());
  const ParameterSnapshot base = protocol.snapshot();
  auto made = [&](std::vector<ShardPushReply> replies) {
    return !protocol.SnapshotFromPushReplies(base, *push, replies).shard_versions.empty();
  };
  EXPECT_FALSE(made({PushedBack(4, {"a", "c"}), PushedBack(4, {})}));  // shard 1 sent no values
  EXPECT_FALSE(made({PushedBack(4, {"a", "c"}), PushedBack(5, {"b"})}));  // sync, at 4 and 5
  EXPECT_THAT(protocol.snapshot().shard_versions, ElementsAre(3, 3));  // unchanged

  // Async shards go at their own pace: different versions make a snapshot.
  ShardWorkerProtocol async =
      PulledProtocol(UpdateMode::kAsync, SyncCatchUp::kPullShardsBehind, {3, 3});
  push = async.PlanPush(async.snapshot(), Gradients(), true);
  ParameterSnapshot next = async.SnapshotFromPushReplies(
      async.snapshot(), *push, {PushedBack(4, {"a", "c"}), PushedBack(5, {"b"})});
  EXPECT_THAT(next.shard_versions, ElementsAre(4, 5));
  EXPECT_EQ(next.global_step, 5);
}

TEST(ShardWorkerProtocolTest, PushResultFoldsEveryShardsReply) {
  ShardPushReply applied = PushedBack(4, {}), stale = PushedBack(4, {});
  stale.applied = false;
  stale.staleness = 2;
  StatusOr<PushResult> result = ShardWorkerProtocol::PushResultOf({applied, stale});
  ASSERT_TRUE(result.ok());
  EXPECT_FALSE(result->applied);
  EXPECT_EQ(result->staleness, 2);
  ShardPushReply failed;
  failed.status = Aborted("duplicate push");
  EXPECT_EQ(ShardWorkerProtocol::PushResultOf({applied, failed}).status().code(), Code::kAborted);
}

}  // namespace
}  // namespace actorflow
