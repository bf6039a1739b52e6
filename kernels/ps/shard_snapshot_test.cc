// Coordinated snapshots, holds and restores of one shard
// (kernels/ps/parameter_shard_state.h) as plain calls: no actors, no clock but the numbers the
// tests pass in.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/ps/parameter_shard_state.h"

namespace actorflow {
namespace {

using State = ParameterShardState;
constexpr int64_t kNever = State::kNoDeadline;

ShardConfig Config(UpdateMode mode, int total, int aggregate = 1) {
  ShardConfig c;
  c.mode = mode;
  c.total_replicas = total;
  c.replicas_to_aggregate = aggregate;
  c.optimizer = "sgd";
  c.learning_rate = 1.0;
  return c;
}

// "w" = [1, 2] float32, sgd with learning rate 1.
std::unique_ptr<State> Shard(const ShardConfig& config, bool initialize = true) {
  auto s = State::Create("ps0", config);
  EXPECT_TRUE(s.ok()) << s.status();
  State::Replies out;
  if (initialize) {
    EXPECT_TRUE((*s)->Initialize({"w"}, {Tensor::FromVector<float>({1, 2})}, &out).ok());
  }
  return std::move(s).value();
}

ShardPushArgs Grad(int worker, int64_t base, float g) {
  ShardPushArgs p;
  p.worker = worker;
  p.base_version = base;
  p.names = {"w"};
  p.gradients = {Tensor::FromVector<float>({g, g})};
  return p;
}

float First(const State::PullReply& r) { return r.values.at(0).data<float>()[0]; }

TEST(ShardSnapshotTest, SnapshotAtTheCurrentVersionAnswersAtOnce) {
  auto s = Shard(Config(UpdateMode::kSync, 1));
  State::Replies out;
  s->SnapshotAt(1, 0, kNever, &out);
  ASSERT_EQ(out.pulls.size(), 1u);
  EXPECT_TRUE(out.pulls[0].status.ok());
  EXPECT_EQ(out.pulls[0].version, 0);
  EXPECT_FLOAT_EQ(First(out.pulls[0]), 1);
}

TEST(ShardSnapshotTest, SnapshotOfAFutureVersionIsParkedUntilTheShardReachesIt) {
  auto s = Shard(Config(UpdateMode::kSync, 1));
  State::Replies out;
  s->SnapshotAt(1, 2, kNever, &out);
  EXPECT_TRUE(out.pulls.empty());
  s->Push(2, Grad(0, 0, 1), kNever, &out);  // -> version 1
  EXPECT_TRUE(out.pulls.empty());
  s->Push(3, Grad(0, 1, 1), kNever, &out);  // -> version 2
  ASSERT_EQ(out.pulls.size(), 1u);
  EXPECT_EQ(out.pulls[0].id, 1u);
  EXPECT_EQ(out.pulls[0].version, 2);
  EXPECT_FLOAT_EQ(First(out.pulls[0]), 1 - 2);
}

TEST(ShardSnapshotTest, SnapshotOfThePreviousVersionComesFromTheRetainedValues) {
  auto s = Shard(Config(UpdateMode::kSync, 1));
  State::Replies out;
  s->Push(1, Grad(0, 0, 1), kNever, &out);  // version 1: w = [0, 1]
  s->Push(2, Grad(0, 1, 1), kNever, &out);  // version 2: w = [-1, 0]
  out = {};
  s->SnapshotAt(3, 1, kNever, &out);
  ASSERT_EQ(out.pulls.size(), 1u);
  ASSERT_TRUE(out.pulls[0].status.ok()) << out.pulls[0].status;
  EXPECT_EQ(out.pulls[0].version, 1);
  EXPECT_FLOAT_EQ(First(out.pulls[0]), 0);
}

TEST(ShardSnapshotTest, SnapshotOfAnOlderVersionFailsNamingTheShardAndVersions) {
  auto s = Shard(Config(UpdateMode::kSync, 1));
  State::Replies out;
  for (int v = 0; v < 3; ++v) s->Push(v + 1, Grad(0, v, 1), kNever, &out);
  out = {};
  s->SnapshotAt(9, 1, kNever, &out);
  ASSERT_EQ(out.pulls.size(), 1u);
  EXPECT_EQ(out.pulls[0].status.code(), Code::kFailedPrecondition);
  EXPECT_THAT(out.pulls[0].status.message(), ::testing::HasSubstr("ps0 is at version 3"))
      << out.pulls[0].status;
}

// The race of an async cut after a ps restart: the cutter reads version 2, then a
// reconnecting worker raises the shard to 9 (relabeling, not updating), then the
// cut at 2 arrives. Those values are still the shard's, so the cut succeeds.
TEST(ShardSnapshotTest, SnapshotOfAVersionRelabeledByRaiseVersionIsTheCurrentValues) {
  auto s = Shard(Config(UpdateMode::kAsync, 1));
  State::Replies out;
  s->Push(1, Grad(0, 0, 1), kNever, &out);  // version 1: w = [0, 1]
  s->Push(2, Grad(0, 1, 1), kNever, &out);  // version 2: w = [-1, 0]
  s->RaiseVersion(9, &out);
  ASSERT_EQ(s->version(), 9);
  out = {};
  s->SnapshotAt(3, 2, kNever, &out);
  s->SnapshotAt(4, 5, kNever, &out);
  ASSERT_EQ(out.pulls.size(), 2u);
  for (const State::PullReply& r : out.pulls) {
    ASSERT_TRUE(r.status.ok()) << r.status;
    EXPECT_FLOAT_EQ(First(r), -1);
  }
  EXPECT_EQ(out.pulls[0].version, 2);
  EXPECT_EQ(out.pulls[1].version, 5);
  // Version 1's values were not kept across the raise; after one real update the
  // relabeled versions are history too.
  out = {};
  s->SnapshotAt(5, 1, kNever, &out);
  ASSERT_EQ(out.pulls.size(), 1u);
  EXPECT_EQ(out.pulls[0].status.code(), Code::kFailedPrecondition);
  s->Push(6, Grad(0, 9, 1), kNever, &out);  // version 10: w = [-2, -1]
  out = {};
  s->SnapshotAt(7, 9, kNever, &out);  // the retained previous values
  s->SnapshotAt(8, 5, kNever, &out);
  ASSERT_EQ(out.pulls.size(), 2u);
  ASSERT_TRUE(out.pulls[0].status.ok()) << out.pulls[0].status;
  EXPECT_FLOAT_EQ(First(out.pulls[0]), -1);
  EXPECT_EQ(out.pulls[1].status.code(), Code::kFailedPrecondition);
}

TEST(ShardSnapshotTest, ParkedSnapshotExpiresWithDeadlineExceeded) {
  auto s = Shard(Config(UpdateMode::kSync, 1));
  State::Replies out;
  s->SnapshotAt(1, 5, 100, &out);
  EXPECT_EQ(s->NextDeadline(), 100);
  s->Expire(100, &out);
  ASSERT_EQ(out.pulls.size(), 1u);
  EXPECT_EQ(out.pulls[0].status.code(), Code::kDeadlineExceeded);
}

TEST(ShardSnapshotTest, HeldPushesAreNotAppliedUntilReleasedThenAppliedInOrder) {
  auto s = Shard(Config(UpdateMode::kAsync, 1));
  State::Replies out;
  s->Hold(true, &out);
  s->Push(1, Grad(0, 0, 1), kNever, &out);
  s->Push(2, Grad(0, 0, 2), kNever, &out);
  EXPECT_TRUE(out.pushes.empty());
  EXPECT_EQ(s->version(), 0);
  s->SnapshotAt(3, 0, kNever, &out);
  ASSERT_EQ(out.pulls.size(), 1u);
  EXPECT_FLOAT_EQ(First(out.pulls[0]), 1);  // the cut saw none of the held pushes
  s->Hold(false, &out);
  ASSERT_EQ(out.pushes.size(), 2u);
  EXPECT_EQ(out.pushes[0].id, 1u);
  EXPECT_EQ(out.pushes[1].id, 2u);
  EXPECT_TRUE(out.pushes[1].applied);
  EXPECT_EQ(s->version(), 2);
}

TEST(ShardSnapshotTest, RestoreInitializesAnEmptyShardAndReleasesItsParkedPulls) {
  auto s = Shard(Config(UpdateMode::kSync, 1), /*initialize=*/false);
  State::Replies out;
  s->Pull(1, 0, kNever, &out);
  EXPECT_TRUE(out.pulls.empty());
  ASSERT_TRUE(s->Restore({"w"}, {Tensor::FromVector<float>({7, 8})}, 40, &out).ok());
  ASSERT_EQ(out.pulls.size(), 1u);
  EXPECT_EQ(out.pulls[0].version, 40);
  EXPECT_FLOAT_EQ(First(out.pulls[0]), 7);
  EXPECT_EQ(s->Initialize({"w"}, {Tensor::FromVector<float>({0, 0})}, &out).code(),
            Code::kAlreadyExists);
}

TEST(ShardSnapshotTest, RestoreAbortsParkedSyncPushesAndDropsTheirAccumulation) {
  auto s = Shard(Config(UpdateMode::kSync, 2, 2));
  State::Replies out;
  s->Push(1, Grad(0, 0, 1), kNever, &out);  // parked, waiting for worker 1
  EXPECT_TRUE(out.pushes.empty());
  ASSERT_TRUE(s->Restore({"w"}, {Tensor::FromVector<float>({5, 5})}, 3, &out).ok());
  ASSERT_EQ(out.pushes.size(), 1u);
  EXPECT_EQ(out.pushes[0].status.code(), Code::kAborted);
  EXPECT_EQ(s->GetStats().accumulated, 0);
  out = {};
  s->Push(2, Grad(0, 3, 1), kNever, &out);
  s->Push(3, Grad(1, 3, 3), kNever, &out);
  ASSERT_EQ(out.pushes.size(), 2u);
  EXPECT_EQ(s->version(), 4);
  s->Pull(4, 0, kNever, &out);
  EXPECT_FLOAT_EQ(First(out.pulls.back()), 5 - 2);  // only the new pushes' mean
}

TEST(ShardSnapshotTest, RestoreRejectsANegativeVersionAndKeepsTheValues) {
  auto s = Shard(Config(UpdateMode::kSync, 1));
  State::Replies out;
  Status restored = s->Restore({"w"}, {Tensor::FromVector<float>({7, 8})}, -1, &out);
  EXPECT_EQ(restored.code(), Code::kInvalidArgument);
  s->SnapshotAt(1, 0, kNever, &out);
  ASSERT_EQ(out.pulls.size(), 1u);
  EXPECT_FLOAT_EQ(First(out.pulls[0]), 1);
}

}  // namespace
}  // namespace actorflow
