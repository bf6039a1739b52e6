// The shard's protocols as plain calls: no actors, no scheduler, no clock but the
// numbers the tests pass in.
#include "kernels/ps/parameter_shard_state.h"
#include "kernels/ps/shard_state_testing.h"

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace actorflow {
namespace {

using State = ParameterShardState;
constexpr int64_t kNever = State::kNoDeadline;


ShardConfig Config(UpdateMode mode, int total, int aggregate = 1, int bound = 0) {
  ShardConfig c;
  c.mode = mode;
  c.total_replicas = total;
  c.replicas_to_aggregate = aggregate;
  c.staleness_bound = bound;
  c.optimizer = "sgd";
  c.learning_rate = 1.0;
  return c;
}

// A shard holding "w" = [1, 2] (float32).
std::unique_ptr<State> Shard(const ShardConfig& config) {
  return shard_testing::ShardHoldingW(config, {1, 2});
}
using shard_testing::Grad;
using shard_testing::Value;

TEST(ParameterShardStateTest, AsyncAppliesEachPushOnArrivalAndReportsItsStaleness) {
  auto s = Shard(Config(UpdateMode::kAsync, 2));
  State::Replies out;
  s->Push(1, Grad(0, 0, {1, 1}), kNever, &out);
  s->Push(2, Grad(1, 0, {0.5, 0}), kNever, &out);  // computed on version 0, now at 1
  ASSERT_EQ(out.pushes.size(), 2u);
  EXPECT_TRUE(out.pushes[0].applied);
  EXPECT_EQ(out.pushes[0].staleness, 0);
  EXPECT_EQ(out.pushes[0].version, 1);
  EXPECT_TRUE(out.pushes[1].applied);
  EXPECT_EQ(out.pushes[1].staleness, 1);
  EXPECT_EQ(out.pushes[1].version, 2);
  EXPECT_EQ(Value(s.get()), (std::vector<float>{-0.5f, 1.0f}));
  auto stats = s->GetStats();
  EXPECT_EQ(stats.version, 2);
  EXPECT_EQ(stats.staleness_sum, 1);
  EXPECT_EQ(stats.staleness_count, 2);
}

TEST(ParameterShardStateTest, SyncAveragesTheAggregatedGradientsAppliesOnceAndReleasesWaiters) {
  auto s = Shard(Config(UpdateMode::kSync, 2, 2));
  State::Replies out;
  s->Push(1, Grad(0, 0, {1, 0}), kNever, &out);
  EXPECT_TRUE(out.pushes.empty());  // parked until the second gradient
  EXPECT_EQ(Value(s.get()), (std::vector<float>{1, 2}));
  s->Push(2, Grad(1, 0, {3, 2}), kNever, &out);
  ASSERT_EQ(out.pushes.size(), 2u);
  for (const auto& r : out.pushes) {
    EXPECT_TRUE(r.status.ok());
    EXPECT_TRUE(r.applied);
    EXPECT_EQ(r.version, 1);
  }
  // Average (2, 1) applied once with lr 1.
  EXPECT_EQ(Value(s.get()), (std::vector<float>{-1, 1}));
  EXPECT_EQ(s->version(), 1);
}

TEST(ParameterShardStateTest, ADecayingLearningRateFollowsTheShardsVersion) {
  // lr 1 halving every 2 updates: update t (made at version t) moves w by 0.5^(t/2).
  ShardConfig config = Config(UpdateMode::kAsync, 1);
  config.lr_decay = {2, 0.5};
  auto s = Shard(config);
  State::Replies out;
  double expected = 1;
  for (int t = 0; t < 4; ++t) {
    s->Push(t + 1, Grad(0, t, {1, 0}), kNever, &out);
    expected -= std::pow(0.5, t / 2.0);
    EXPECT_NEAR(Value(s.get())[0], expected, 1e-6) << "after update " << t;
  }
  EXPECT_EQ(Value(s.get())[1], 2.0f);
  EXPECT_THAT(config.ToString(), testing::HasSubstr("decaying x0.5 every 2 updates"));
  config.lr_decay = {2, -1};
  EXPECT_FALSE(State::Create("ps0", config).ok());
}

TEST(ParameterShardStateTest, SyncDropsAGradientFromAnOlderVersionAndSaysByHowMany) {
  auto s = Shard(Config(UpdateMode::kSync, 3, 2));
  State::Replies out;
  s->Push(1, Grad(0, 0, {1, 1}), kNever, &out);
  s->Push(2, Grad(1, 0, {1, 1}), kNever, &out);
  ASSERT_EQ(out.pushes.size(), 2u);
  out = {};
  s->Push(3, Grad(2, 0, {100, 100}), kNever, &out);  // the backup worker, late
  ASSERT_EQ(out.pushes.size(), 1u);
  EXPECT_TRUE(out.pushes[0].status.ok());
  EXPECT_FALSE(out.pushes[0].applied);
  EXPECT_EQ(out.pushes[0].staleness, 1);
  EXPECT_EQ(Value(s.get()), (std::vector<float>{0, 1}));
  EXPECT_EQ(s->GetStats().gradients_dropped_stale, 1);
  EXPECT_EQ(s->GetStats().accumulated, 0);
}

TEST(ParameterShardStateTest, SyncWithABackupWorkerDoesNotStallWhenOneWorkerIsLost) {
  auto s = Shard(Config(UpdateMode::kSync, 3, 2));
  State::Replies out;
  s->WorkerLost(1, &out);
  EXPECT_TRUE(out.pushes.empty());
  s->Push(1, Grad(0, 0, {1, 1}), kNever, &out);
  s->Push(2, Grad(2, 0, {1, 1}), kNever, &out);
  ASSERT_EQ(out.pushes.size(), 2u);
  EXPECT_TRUE(out.pushes[0].applied && out.pushes[1].applied);
  EXPECT_EQ(s->GetStats().workers_lost, std::vector<int>{1});
}

TEST(ParameterShardStateTest, SyncFailsWaitersNamingTheLostWorkersWhenTooFewRemain) {
  auto s = Shard(Config(UpdateMode::kSync, 2, 2));
  State::Replies out;
  s->Push(1, Grad(0, 0, {1, 1}), kNever, &out);
  EXPECT_TRUE(out.pushes.empty());
  s->WorkerLost(1, &out);
  ASSERT_EQ(out.pushes.size(), 1u);
  EXPECT_EQ(out.pushes[0].status.code(), Code::kUnavailable);
  EXPECT_THAT(out.pushes[0].status.message(), ::testing::HasSubstr("lost: worker 1"));
  // Nothing of the failed version is kept for later.
  EXPECT_EQ(s->GetStats().accumulated, 0);
  // Worker 1 comes back: the protocol works again from scratch.
  ASSERT_TRUE(s->Join(1, &out).ok());
  out = {};
  s->Push(2, Grad(0, 0, {2, 2}), kNever, &out);
  s->Push(3, Grad(1, 0, {0, 0}), kNever, &out);
  ASSERT_EQ(out.pushes.size(), 2u);
  EXPECT_EQ(Value(s.get()), (std::vector<float>{0, 1}));
}

TEST(ParameterShardStateTest, SspParksAWorkerMoreThanTheBoundAheadUntilTheSlowestCatchesUp) {
  auto s = Shard(Config(UpdateMode::kStaleSynchronous, 2, 1, /*bound=*/1));
  State::Replies out;
  s->Push(1, Grad(0, 0, {0, 0}), kNever, &out);  // clocks (1, 0): 1 ahead, allowed
  ASSERT_EQ(out.pushes.size(), 1u);
  out = {};
  s->Push(2, Grad(0, 1, {1, 0}), kNever, &out);  // clocks (2, 0): 2 ahead, parked
  EXPECT_TRUE(out.pushes.empty());
  EXPECT_EQ(s->GetStats().parked_pushes, 1);
  EXPECT_EQ(s->version(), 2);                    // its gradient was applied nevertheless
  s->Push(3, Grad(1, 0, {0, 0}), kNever, &out);  // clocks (2, 1): both released
  ASSERT_EQ(out.pushes.size(), 2u);
  EXPECT_EQ(out.pushes[0].id, 3u);
  EXPECT_EQ(out.pushes[1].id, 2u);
  EXPECT_TRUE(out.pushes[1].applied);
  EXPECT_EQ(s->GetStats().parked_pushes, 0);
}

TEST(ParameterShardStateTest, SspAWorkerThatDiesNoLongerHoldsTheOthersBack) {
  auto s = Shard(Config(UpdateMode::kStaleSynchronous, 3, 1, /*bound=*/0));
  State::Replies out;
  s->Push(1, Grad(0, 0, {0, 0}), kNever, &out);
  EXPECT_TRUE(out.pushes.empty());
  s->Push(2, Grad(1, 0, {0, 0}), kNever, &out);
  EXPECT_TRUE(out.pushes.empty());
  s->WorkerLost(2, &out);
  ASSERT_EQ(out.pushes.size(), 2u);
  EXPECT_EQ(s->GetStats().workers_lost, std::vector<int>{2});
}

TEST(ParameterShardStateTest, ARejoiningWorkerStartsAtTheSlowestLiveClock) {
  auto s = Shard(Config(UpdateMode::kStaleSynchronous, 2, 1, /*bound=*/0));
  State::Replies out;
  s->WorkerLost(1, &out);
  for (int i = 0; i < 3; ++i) s->Push(i + 1, Grad(0, i, {0, 0}), kNever, &out);
  EXPECT_EQ(out.pushes.size(), 3u);  // alone: never parked
  ASSERT_TRUE(s->Join(1, &out).ok());
  EXPECT_EQ(s->GetStats().clocks, (std::vector<int64_t>{3, 3}));
  EXPECT_TRUE(s->GetStats().workers_lost.empty());
}

TEST(ParameterShardStateTest, AWrongShapeIsRejectedNamingTheVariableAndNothingIsApplied) {
  auto created = State::Create("ps0", Config(UpdateMode::kAsync, 1));
  ASSERT_TRUE(created.ok());
  auto s = std::move(created).value();
  State::Replies out;
  ASSERT_TRUE(s->Initialize({"a", "b"},
                            {Tensor::FromVector<float>({1, 1}), Tensor::FromVector<float>({5})},
                            &out)
                  .ok());
  ShardPushArgs p;
  p.names = {"a", "b"};
  p.gradients = {Tensor::FromVector<float>({1, 1}), Tensor::FromVector<float>({1, 2, 3})};
  s->Push(1, p, kNever, &out);
  ASSERT_EQ(out.pushes.size(), 1u);
  EXPECT_EQ(out.pushes[0].status.code(), Code::kInvalidArgument);
  EXPECT_THAT(out.pushes[0].status.message(), ::testing::HasSubstr("'b'"));
  EXPECT_THAT(out.pushes[0].status.message(), ::testing::HasSubstr("float32[3]"));
  EXPECT_FALSE(out.pushes[0].applied);
  EXPECT_EQ(s->version(), 0);
  out = {};
  s->Pull(2, 0, kNever, &out);
  EXPECT_EQ(out.pulls[0].values[0].data<float>()[0], 1.0f);  // "a" untouched

  out = {};
  p.names = {"a"};
  p.gradients = {Tensor::FromVector<float>({1, 1})};
  s->Push(3, p, kNever, &out);
  EXPECT_THAT(out.pushes[0].status.message(), ::testing::HasSubstr("no gradient for variable 'b'"));
  out = {};
  p.names = {"a", "c"};
  p.gradients = {Tensor::FromVector<float>({1, 1}), Tensor::FromVector<float>({1})};
  s->Push(4, p, kNever, &out);
  EXPECT_THAT(out.pushes[0].status.message(), ::testing::HasSubstr("variable 'c'"));
  out = {};
  p.names = {"a", "b"};
  p.gradients = {Tensor::FromVector<double>({1, 1}), Tensor::FromVector<float>({1})};
  s->Push(5, p, kNever, &out);
  EXPECT_THAT(out.pushes[0].status.message(), ::testing::HasSubstr("'a' is float64[2]"));
  EXPECT_EQ(s->version(), 0);
}

TEST(ParameterShardStateTest, APullBeforeInitializeWaitsForTheChief) {
  auto created = State::Create("ps0", Config(UpdateMode::kAsync, 2));
  ASSERT_TRUE(created.ok());
  auto s = std::move(created).value();
  State::Replies out;
  s->Pull(1, 0, /*deadline=*/100, &out);
  s->Pull(2, 0, /*deadline=*/kNever, &out);
  EXPECT_TRUE(out.pulls.empty());
  EXPECT_EQ(s->NextDeadline(), 100);
  s->Expire(/*now=*/100, &out);
  ASSERT_EQ(out.pulls.size(), 1u);
  EXPECT_EQ(out.pulls[0].id, 1u);
  EXPECT_EQ(out.pulls[0].status.code(), Code::kDeadlineExceeded);
  EXPECT_THAT(out.pulls[0].status.message(), ::testing::HasSubstr("not initialized"));
  out = {};
  ASSERT_TRUE(s->Initialize({"w"}, {Tensor::FromVector<float>({7})}, &out).ok());
  ASSERT_EQ(out.pulls.size(), 1u);
  EXPECT_EQ(out.pulls[0].id, 2u);
  EXPECT_EQ(out.pulls[0].names, std::vector<std::string>{"w"});
  EXPECT_EQ(out.pulls[0].values[0].data<float>()[0], 7.0f);
}

TEST(ParameterShardStateTest, APullForALaterVersionWaitsForIt) {
  auto s = Shard(Config(UpdateMode::kAsync, 1));
  State::Replies out;
  s->Pull(1, /*min_version=*/1, kNever, &out);
  EXPECT_TRUE(out.pulls.empty());
  s->Push(2, Grad(0, 0, {1, 1}), kNever, &out);
  ASSERT_EQ(out.pulls.size(), 1u);
  EXPECT_EQ(out.pulls[0].version, 1);
}

TEST(ParameterShardStateTest, AParkedSyncPushPastItsDeadlineSaysWhatItWaitedFor) {
  auto s = Shard(Config(UpdateMode::kSync, 3, 3));
  State::Replies out;
  s->Push(1, Grad(0, 0, {1, 1}), /*deadline=*/50, &out);
  s->Expire(49, &out);
  EXPECT_TRUE(out.pushes.empty());
  s->Expire(50, &out);
  ASSERT_EQ(out.pushes.size(), 1u);
  EXPECT_EQ(out.pushes[0].status.code(), Code::kDeadlineExceeded);
  EXPECT_THAT(out.pushes[0].status.message(),
              ::testing::HasSubstr("1 of 3 gradients for version 0 arrived; none from workers 1, 2"));
}

TEST(ParameterShardStateTest, ASyncPushAnsweredPastItsDeadlineIsNotAppliedLater) {
  auto s = Shard(Config(UpdateMode::kSync, 2, 2));
  State::Replies out;
  s->Push(1, Grad(0, 0, {100, 100}), /*deadline=*/50, &out);
  s->Expire(50, &out);
  ASSERT_EQ(out.pushes.size(), 1u);
  EXPECT_FALSE(out.pushes[0].applied);
  out = {};
  // Worker 0 pulls again and pushes anew; with worker 1 the version completes from
  // these two gradients only: the expired one is gone.
  s->Push(2, Grad(0, 0, {1, 0}), kNever, &out);
  s->Push(3, Grad(1, 0, {3, 2}), kNever, &out);
  ASSERT_EQ(out.pushes.size(), 2u);
  EXPECT_EQ(Value(s.get()), (std::vector<float>{-1, 1}));
  EXPECT_EQ(s->GetStats().applied_by_worker, (std::vector<int64_t>{1, 1}));
}

TEST(ParameterShardStateTest, AWorkersSecondSyncPushForAVersionReplacesItsFirst) {
  auto s = Shard(Config(UpdateMode::kSync, 3, 2));
  State::Replies out;
  s->Push(1, Grad(0, 0, {100, 100}), kNever, &out);
  s->Push(2, Grad(0, 0, {1, 0}), kNever, &out);
  ASSERT_EQ(out.pushes.size(), 1u);  // the first, answered as replaced
  EXPECT_EQ(out.pushes[0].id, 1u);
  EXPECT_EQ(out.pushes[0].status.code(), Code::kAborted);
  EXPECT_FALSE(out.pushes[0].applied);
  EXPECT_EQ(s->version(), 0);  // one worker is not two gradients
  out = {};
  s->Push(3, Grad(1, 0, {3, 2}), kNever, &out);
  ASSERT_EQ(out.pushes.size(), 2u);
  EXPECT_EQ(Value(s.get()), (std::vector<float>{-1, 1}));
  EXPECT_EQ(s->GetStats().applied_by_worker, (std::vector<int64_t>{1, 1, 0}));
}

TEST(ParameterShardStateTest, ADuplicatePushIsNotAppliedTwice) {
  auto s = Shard(Config(UpdateMode::kAsync, 1));
  State::Replies out;
  ShardPushArgs p = Grad(0, 0, {1, 1});
  p.sequence = 1;
  s->Push(1, p, kNever, &out);
  s->Push(2, p, kNever, &out);
  ASSERT_EQ(out.pushes.size(), 2u);
  EXPECT_TRUE(out.pushes[0].applied);
  EXPECT_EQ(out.pushes[1].status.code(), Code::kAborted);
  EXPECT_EQ(s->version(), 1);
}

TEST(ParameterShardStateTest, RaisingTheVersionDropsWaitingSyncPushesAndKeepsTheValues) {
  auto s = Shard(Config(UpdateMode::kSync, 2, 2));
  State::Replies out;
  s->Push(1, Grad(0, 0, {1, 1}), kNever, &out);  // parked: one of two gradients
  s->Pull(2, 5, kNever, &out);                   // waits for version 5
  ASSERT_TRUE(out.pushes.empty());
  ASSERT_TRUE(out.pulls.empty());
  s->RaiseVersion(7, &out);
  ASSERT_EQ(out.pushes.size(), 1u);
  EXPECT_TRUE(out.pushes[0].status.ok());
  EXPECT_FALSE(out.pushes[0].applied);
  EXPECT_EQ(out.pushes[0].staleness, 7);
  EXPECT_EQ(out.pushes[0].version, 7);
  ASSERT_EQ(out.pulls.size(), 1u);
  EXPECT_EQ(out.pulls[0].version, 7);
  EXPECT_EQ(Value(s.get()), (std::vector<float>{1, 2}));  // the half-accumulated push is gone
  out = State::Replies();
  // A complete version on 7 applies only its own two gradients.
  s->Push(3, Grad(0, 7, {2, 0}), kNever, &out);
  s->Push(4, Grad(1, 7, {0, 2}), kNever, &out);
  ASSERT_EQ(out.pushes.size(), 2u);
  EXPECT_EQ(out.pushes[0].version, 8);
  EXPECT_EQ(Value(s.get()), (std::vector<float>{0, 1}));
  // Lower floors change nothing.
  s->RaiseVersion(3, &out);
  EXPECT_EQ(s->version(), 8);
}

TEST(ParameterShardStateTest, ARestoreNeverGoesBelowTheFloorRaisedBeforeOrAfterIt) {
  auto created = State::Create("ps0", Config(UpdateMode::kSync, 1, 1));
  ASSERT_TRUE(created.ok());
  State* s = created->get();
  State::Replies out;
  s->RaiseVersion(25, &out);  // before the restore: the shard holds nothing yet
  EXPECT_FALSE(s->initialized());
  ASSERT_TRUE(s->Restore({"w"}, {Tensor::FromVector<float>({4, 5})}, 20, &out).ok());
  EXPECT_EQ(s->version(), 25);
  EXPECT_EQ(Value(s), (std::vector<float>{4, 5}));  // the checkpoint's values
  ASSERT_TRUE(s->Restore({"w"}, {Tensor::FromVector<float>({6, 7})}, 30, &out).ok());
  EXPECT_EQ(s->version(), 30);  // a newer checkpoint is taken as it is
  s->RaiseVersion(40, &out);
  ASSERT_TRUE(s->Restore({"w"}, {Tensor::FromVector<float>({8, 9})}, 30, &out).ok());
  EXPECT_EQ(s->version(), 40);
}

// An adam shard holding "w" = [1, 2] (float32) and "x" = [3] (float64).
std::unique_ptr<State> AdamShard() {
  ShardConfig config = Config(UpdateMode::kAsync, 1);
  config.optimizer = "adam";
  config.learning_rate = 0.1;
  auto s = State::Create("ps0", config);
  EXPECT_TRUE(s.ok()) << s.status();
  State::Replies out;
  EXPECT_TRUE((*s)->Initialize({"w", "x"},
                               {Tensor::FromVector<float>({1, 2}), Tensor::FromVector<double>({3})},
                               &out)
                  .ok());
  return std::move(s).value();
}

ShardPushArgs AdamGrad(int64_t base, float w0, float w1, double x) {
  ShardPushArgs p;
  p.worker = 0;
  p.base_version = base;
  p.names = {"w", "x"};
  p.gradients = {Tensor::FromVector<float>({w0, w1}), Tensor::FromVector<double>({x})};
  return p;
}

// The bytes of every variable, by name.
std::map<std::string, std::vector<double>> Values(State* s) {
  State::Replies out;
  s->Pull(999, 0, kNever, &out);
  EXPECT_EQ(out.pulls.size(), 1u);
  std::map<std::string, std::vector<double>> values;
  for (size_t i = 0; i < out.pulls[0].names.size(); ++i) {
    const Tensor& t = out.pulls[0].values[i];
    for (int64_t e = 0; e < t.NumElements(); ++e) {
      values[out.pulls[0].names[i]].push_back(t.ElementAsDouble(e));
    }
  }
  return values;
}

TEST(ParameterShardStateTest, ASnapshotRestoredWithItsSlotsContinuesAdamExactly) {
  auto original = AdamShard();
  State::Replies out;
  original->Push(1, AdamGrad(0, 0.5f, -1, 2), kNever, &out);
  original->Push(2, AdamGrad(1, -0.25f, 0.75f, -3), kNever, &out);
  out = {};
  original->SnapshotAt(3, 2, kNever, &out);
  ASSERT_EQ(out.pulls.size(), 1u);
  State::PullReply cut = out.pulls[0];
  ASSERT_TRUE(cut.status.ok()) << cut.status;
  EXPECT_EQ(cut.slot_names,
            (std::vector<std::string>{"w/Adam_beta1_power", "w/Adam_beta2_power", "w/Adam_m",
                                      "w/Adam_v", "x/Adam_beta1_power", "x/Adam_beta2_power",
                                      "x/Adam_m", "x/Adam_v"}));
  EXPECT_FLOAT_EQ(cut.slot_values[0].data<float>()[0], 0.9f * 0.9f * 0.9f);
  // An ordinary pull carries no slots.
  out = {};
  original->Pull(4, 0, kNever, &out);
  ASSERT_EQ(out.pulls.size(), 1u);
  EXPECT_TRUE(out.pulls[0].slot_names.empty());
  EXPECT_TRUE(out.pulls[0].slot_values.empty());

  auto restored = AdamShard();
  auto without_slots = AdamShard();
  ASSERT_TRUE(restored->Restore(cut.names, cut.values, cut.slot_names, cut.slot_values, 2, &out)
                  .ok());
  ASSERT_TRUE(without_slots->Restore(cut.names, cut.values, 2, &out).ok());
  for (State* s : {original.get(), restored.get(), without_slots.get()}) {
    s->Push(5, AdamGrad(2, 1, 1, -0.5), kNever, &out);
  }
  EXPECT_EQ(Values(restored.get()), Values(original.get()));
  EXPECT_NE(Values(without_slots.get()), Values(original.get()));  // fresh slots differ
}

TEST(ParameterShardStateTest, ASnapshotOfThePreviousVersionCarriesThatVersionsSlots) {
  auto original = AdamShard();
  State::Replies out;
  original->Push(1, AdamGrad(0, 0.5f, -1, 2), kNever, &out);
  original->Push(2, AdamGrad(1, -0.25f, 0.75f, -3), kNever, &out);  // version 2
  out = {};
  original->SnapshotAt(3, 1, kNever, &out);  // from the retained version 1
  ASSERT_EQ(out.pulls.size(), 1u);
  State::PullReply cut = out.pulls[0];
  ASSERT_TRUE(cut.status.ok()) << cut.status;
  ASSERT_FALSE(cut.slot_names.empty());
  auto restored = AdamShard();
  ASSERT_TRUE(restored->Restore(cut.names, cut.values, cut.slot_names, cut.slot_values, 1, &out)
                  .ok());
  restored->Push(4, AdamGrad(1, -0.25f, 0.75f, -3), kNever, &out);  // version 1 -> 2 again
  EXPECT_EQ(Values(restored.get()), Values(original.get()));
}

TEST(ParameterShardStateTest, ARestoreWithABadSlotNamesItAndChangesNothing) {
  auto s = AdamShard();
  State::Replies out;
  s->Push(1, AdamGrad(0, 0.5f, -1, 2), kNever, &out);
  const auto before = Values(s.get());
  Status bad = s->Restore({"w", "x"}, {Tensor::FromVector<float>({7, 7}),
                                       Tensor::FromVector<double>({7})},
                          {"w/Adam_m"}, {Tensor::FromVector<float>({1, 2, 3})}, 5, &out);
  EXPECT_EQ(bad.code(), Code::kInvalidArgument);
  EXPECT_THAT(bad.message(), ::testing::HasSubstr("'w/Adam_m'")) << bad;
  EXPECT_EQ(s->version(), 1);
  EXPECT_EQ(Values(s.get()), before);
}

TEST(ParameterShardStateTest, InitializingTwiceKeepsTheValues) {
  auto s = Shard(Config(UpdateMode::kAsync, 1));
  State::Replies out;
  Status again = s->Initialize({"w"}, {Tensor::FromVector<float>({9, 9})}, &out);
  EXPECT_EQ(again.code(), Code::kAlreadyExists);
  EXPECT_EQ(Value(s.get()), (std::vector<float>{1, 2}));
}

TEST(ParameterShardStateTest, BadConfigurationsAndWorkersAreRejected) {
  auto too_many = State::Create("ps0", Config(UpdateMode::kSync, 2, 3));
  EXPECT_EQ(too_many.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(too_many.status().message(), ::testing::HasSubstr("replicas_to_aggregate=3"));
  ShardConfig bad_rule = Config(UpdateMode::kAsync, 1);
  bad_rule.optimizer = "rmsprop";
  EXPECT_EQ(State::Create("ps0", bad_rule).status().code(), Code::kInvalidArgument);

  auto s = Shard(Config(UpdateMode::kAsync, 2));
  State::Replies out;
  EXPECT_EQ(s->Join(2, &out).code(), Code::kInvalidArgument);
  s->Push(1, Grad(5, 0, {1, 1}), kNever, &out);
  EXPECT_EQ(out.pushes[0].status.code(), Code::kInvalidArgument);
  out = {};
  s->Leave(1, &out);
  s->Push(2, Grad(1, 0, {1, 1}), kNever, &out);
  EXPECT_EQ(out.pushes[0].status.code(), Code::kFailedPrecondition);
  EXPECT_TRUE(s->GetStats().workers_lost.empty());
  EXPECT_EQ(s->GetStats().workers_left, std::vector<int>{1});
}

}  // namespace
}  // namespace actorflow
