// Data shards: the W workers of an epoch share one pass over the data.
#include "training/data/data_shard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

namespace actorflow {
namespace {

TEST(ShardRowsTest, TheWorkersOfAnEpochTakeDisjointRowsCoveringAllButTheRemainder) {
  std::set<int64_t> seen;
  for (int w = 0; w < 3; ++w) {
    std::vector<int64_t> rows = ShardRows(10, /*seed=*/7, /*epoch=*/0, w, 3);
    EXPECT_EQ(rows.size(), 3u) << "worker " << w;
    for (int64_t r : rows) {
      EXPECT_GE(r, 0);
      EXPECT_LT(r, 10);
      EXPECT_TRUE(seen.insert(r).second) << "row " << r << " taken twice";
    }
  }
  EXPECT_EQ(seen.size(), 9u);
}

TEST(ShardRowsTest, OneWorkerTakesAPermutationOfEveryRow) {
  std::vector<int64_t> rows = ShardRows(50, 3, 0, 0, 1);
  std::vector<int64_t> sorted = rows;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 50; ++i) EXPECT_EQ(sorted[i], i);
  std::vector<int64_t> identity(50);
  for (int64_t i = 0; i < 50; ++i) identity[i] = i;
  EXPECT_NE(rows, identity);
}

TEST(ShardRowsTest, TheOrderDependsOnlyOnSeedAndEpoch) {
  EXPECT_EQ(ShardRows(100, 5, 2, 1, 2), ShardRows(100, 5, 2, 1, 2));
  EXPECT_NE(ShardRows(100, 5, 2, 1, 2), ShardRows(100, 5, 3, 1, 2));
  EXPECT_NE(ShardRows(100, 5, 2, 1, 2), ShardRows(100, 6, 2, 1, 2));
}

TEST(StepsPerEpochTest, CountsTheBatchesOfOneWorkersShare) {
  EXPECT_EQ(StepsPerEpoch(1437, 1, 32), 45);  // 1437 rows, one worker
  EXPECT_EQ(StepsPerEpoch(1437, 2, 32), 23);  // 718 rows each
  EXPECT_EQ(StepsPerEpoch(1437, 4, 32), 12);  // 359 rows each
  EXPECT_EQ(StepsPerEpoch(120, 2, 30), 2);
}

Tensor Iota(int64_t n, int64_t width) {
  Tensor t(DType::kFloat32, Shape{n, width});
  for (int64_t i = 0; i < n * width; ++i) t.data<float>()[i] = static_cast<float>(i / width);
  return t;
}

Tensor IotaLabels(int64_t n) {
  Tensor t(DType::kInt32, Shape{n});
  for (int64_t i = 0; i < n; ++i) t.data<int32_t>()[i] = static_cast<int32_t>(i);
  return t;
}

TEST(ShardedBatchesTest, BatchesWalkTheShardThenTheNextEpochsShard) {
  ShardOptions options;
  options.batch_size = 4;
  options.seed = 11;
  options.worker = 1;
  options.num_workers = 2;
  auto shard = ShardedBatches::Create(Iota(21, 2), IotaLabels(21), options);
  ASSERT_TRUE(shard.ok()) << shard.status();
  EXPECT_EQ(shard->steps_per_epoch(), 3);  // 10 rows: 4 + 4 + 2
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    std::vector<int64_t> rows;
    for (int64_t step = 0; step < 3; ++step) {
      Batch batch;
      shard->Next(&batch);
      EXPECT_EQ(batch.epoch, epoch);
      EXPECT_EQ(batch.step_in_epoch, step);
      ASSERT_EQ(batch.features.dim(0), batch.labels.dim(0));
      EXPECT_EQ(batch.features.dim(0), step < 2 ? 4 : 2);
      for (int64_t i = 0; i < batch.labels.dim(0); ++i) {
        const int32_t label = batch.labels.data<int32_t>()[i];
        // Features and labels stay paired: row r's features are r, r.
        EXPECT_EQ(batch.features.data<float>()[2 * i], static_cast<float>(label));
        EXPECT_EQ(batch.features.data<float>()[2 * i + 1], static_cast<float>(label));
        rows.push_back(label);
      }
    }
    EXPECT_EQ(rows, ShardRows(21, 11, epoch, 1, 2)) << "epoch " << epoch;
  }
}

TEST(ShardedBatchesTest, SkippingLandsOnTheBatchThatNextWouldHaveReturned) {
  ShardOptions options;
  options.batch_size = 4;
  options.seed = 5;
  options.worker = 0;
  options.num_workers = 2;
  // Skips from several starting points, within an epoch, to its end and across epochs.
  for (int64_t before : {0, 1, 3}) {
    for (int64_t skip : {0, 1, 2, 3, 4, 7, 9}) {
      auto walked = ShardedBatches::Create(Iota(21, 2), IotaLabels(21), options);
      auto skipped = ShardedBatches::Create(Iota(21, 2), IotaLabels(21), options);
      ASSERT_TRUE(walked.ok() && skipped.ok());
      Batch a, b;
      for (int64_t i = 0; i < before; ++i) {
        walked->Next(&a);
        skipped->Next(&b);
      }
      for (int64_t i = 0; i < skip; ++i) walked->Next(&a);
      skipped->Skip(skip);
      for (int i = 0; i < 4; ++i) {  // and the batches after it
        walked->Next(&a);
        skipped->Next(&b);
        EXPECT_EQ(b.epoch, a.epoch) << before << " + " << skip;
        EXPECT_EQ(b.step_in_epoch, a.step_in_epoch) << before << " + " << skip;
        ASSERT_EQ(b.labels.NumElements(), a.labels.NumElements());
        for (int64_t r = 0; r < a.labels.NumElements(); ++r) {
          EXPECT_EQ(b.labels.data<int32_t>()[r], a.labels.data<int32_t>()[r]);
        }
      }
    }
  }
}

TEST(ShardedBatchesTest, BadArgumentsAreInvalid) {
  ShardOptions options;
  options.num_workers = 2;
  options.worker = 2;
  EXPECT_EQ(ShardedBatches::Create(Iota(8, 1), IotaLabels(8), options).status().code(),
            Code::kInvalidArgument);
  options.worker = 0;
  options.num_workers = 9;
  Status few = ShardedBatches::Create(Iota(8, 1), IotaLabels(8), options).status();
  EXPECT_EQ(few.code(), Code::kInvalidArgument);
  EXPECT_NE(few.message().find("8 rows cannot be shared by 9 workers"), std::string::npos) << few;
  options.num_workers = 1;
  EXPECT_EQ(ShardedBatches::Create(Iota(8, 1), IotaLabels(7), options).status().code(),
            Code::kInvalidArgument);
  options.batch_size = 0;
  EXPECT_EQ(ShardedBatches::Create(Iota(8, 1), IotaLabels(8), options).status().code(),
            Code::kInvalidArgument);
}

}  // namespace
}  // namespace actorflow
