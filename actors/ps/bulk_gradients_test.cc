#include "actors/ps/bulk_gradients.h"

#include <gtest/gtest.h>

#include <vector>

namespace actorflow {
namespace {

Tensor Scalar(float v) {
  Tensor t(DType::kFloat32, Shape({}));
  t.data<float>()[0] = v;
  return t;
}

float ValueOf(const Tensor& t) { return t.data<float>()[0]; }

TEST(BulkGradientKeyTest, ShardAddressesRoundTripAndDeviceNamesAreNotShards) {
  EXPECT_EQ(BulkGradientKey("c/0/7", 2), "c/0/7#2");
  EXPECT_EQ(ShardOfBulkAddress(BulkShardAddress("parameters/model")), "parameters/model");
  EXPECT_EQ(ShardOfBulkAddress("/job:ps/replica:0/task:0/device:CPU:0"), "");
}

TEST(BulkGradientStashTest, APushWhoseGradientsCameFirstTakesThemInOrder) {
  BulkGradientStash stash;
  BulkGradientStash::RequestId id = 0;
  std::vector<Tensor> got;
  EXPECT_FALSE(stash.Arrived(BulkGradientKey("p", 1), Scalar(2), 0, &id, &got));
  EXPECT_FALSE(stash.Arrived(BulkGradientKey("p", 0), Scalar(1), 0, &id, &got));
  ASSERT_TRUE(stash.TakeOrWait(5, "p", 2, 1000, &got));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(ValueOf(got[0]), 1);
  EXPECT_EQ(ValueOf(got[1]), 2);
  EXPECT_EQ(stash.stashed(), 0u);
  EXPECT_EQ(stash.waiting(), 0u);
}

TEST(BulkGradientStashTest, APushWaitsUntilItsLastGradientArrives) {
  BulkGradientStash stash;
  std::vector<Tensor> got;
  EXPECT_FALSE(stash.Arrived(BulkGradientKey("p", 0), Scalar(1), 0, nullptr, &got));
  EXPECT_FALSE(stash.TakeOrWait(9, "p", 2, 1000, &got));
  EXPECT_EQ(stash.waiting(), 1u);
  BulkGradientStash::RequestId id = 0;
  // Another push's gradient completes nothing.
  EXPECT_FALSE(stash.Arrived(BulkGradientKey("q", 0), Scalar(5), 1, &id, &got));
  ASSERT_TRUE(stash.Arrived(BulkGradientKey("p", 1), Scalar(2), 1, &id, &got));
  EXPECT_EQ(id, 9u);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(ValueOf(got[1]), 2);
  EXPECT_EQ(stash.waiting(), 0u);
  EXPECT_EQ(stash.stashed(), 1u);  // q's
}

TEST(BulkGradientStashTest, AWaitEndsAtItsDeadlineAndForgetsWhatArrivedForIt) {
  BulkGradientStash stash;
  std::vector<Tensor> got;
  BulkGradientStash::RequestId id = 0;
  EXPECT_FALSE(stash.Arrived(BulkGradientKey("p", 0), Scalar(1), 0, &id, &got));
  EXPECT_FALSE(stash.TakeOrWait(3, "p", 3, 500, &got));
  EXPECT_EQ(stash.NextDeadline(), 500);
  EXPECT_TRUE(stash.Expire(499).empty());
  EXPECT_EQ(stash.Expire(500), std::vector<BulkGradientStash::RequestId>{3});
  EXPECT_EQ(stash.waiting(), 0u);
  EXPECT_EQ(stash.stashed(), 0u);
  // A late gradient of the expired push is an orphan now, not a completion.
  EXPECT_FALSE(stash.Arrived(BulkGradientKey("p", 1), Scalar(2), 600, &id, &got));
  EXPECT_EQ(stash.NextDeadline(), 600 + BulkGradientStash::kOrphanMs);
}

TEST(BulkGradientStashTest, OrphansAreDroppedAfterTheirTimeAndCancelForgetsAWait) {
  BulkGradientStash stash;
  std::vector<Tensor> got;
  BulkGradientStash::RequestId id = 0;
  EXPECT_FALSE(stash.Arrived(BulkGradientKey("a", 0), Scalar(1), 100, &id, &got));
  EXPECT_FALSE(stash.Arrived(BulkGradientKey("b", 0), Scalar(1), 200, &id, &got));
  stash.Expire(100 + BulkGradientStash::kOrphanMs);
  EXPECT_EQ(stash.stashed(), 1u);  // b's is younger
  EXPECT_FALSE(stash.TakeOrWait(4, "b", 2, BulkGradientStash::kNever, &got));
  // A waiting push's gradients are not orphans, whatever their age.
  stash.Expire(10 * BulkGradientStash::kOrphanMs);
  EXPECT_EQ(stash.stashed(), 1u);
  stash.Cancel(4);
  EXPECT_EQ(stash.waiting(), 0u);
  EXPECT_EQ(stash.stashed(), 0u);
  EXPECT_EQ(stash.NextDeadline(), BulkGradientStash::kNever);
}

TEST(BulkGradientStashTest, APushOfNoGradientsIsCompleteAtOnce) {
  BulkGradientStash stash;
  std::vector<Tensor> got = {Scalar(1)};
  EXPECT_TRUE(stash.TakeOrWait(1, "empty", 0, 100, &got));
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(stash.waiting(), 0u);
}

TEST(BulkGradientStashTest, MalformedKeysAreIgnored) {
  BulkGradientStash stash;
  std::vector<Tensor> got;
  BulkGradientStash::RequestId id = 0;
  for (const char* key : {"p", "#0", "p#", "p#x", "p#-1", "p#+1", "p# 1", "p#1x"}) {
    EXPECT_FALSE(stash.Arrived(key, Scalar(1), 0, &id, &got)) << key;
  }
  EXPECT_EQ(stash.stashed(), 0u);
}

}  // namespace
}  // namespace actorflow
