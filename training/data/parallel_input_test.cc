// The transformations that keep devices busy and split input among workers: Map with
// parallel calls (order kept, errors in place), Shard, Interleave, and seeded image
// augmentation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "training/data/dataset.h"
#include "training/data/dataset_test_util.h"
#include "training/data/image_augmentation.h"

namespace actorflow {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// x -> x * 10, with more work for small x, so that workers finish out of order.
Dataset::MapFn TimesTenSlowFirst() {
  return [](Element e) -> StatusOr<Element> {
    const int x = static_cast<int>(e[0].ElementAsDouble(0));
    volatile double sink = 0;
    for (int i = 0; i < (x < 4 ? 2000000 : 10); ++i) sink = sink + i;
    return Element{Tensor::Scalar<int32_t>(x * 10)};
  };
}

TEST(ParallelMapTest, KeepsTheInputOrderWhateverTheThreadCount) {
  std::vector<int> expected;
  for (int i = 0; i < 50; ++i) expected.push_back(i * 10);
  for (int threads : {1, 2, 4, 8}) {
    auto mapped = RangeDataset(50)->Map(TimesTenSlowFirst(), threads);
    ASSERT_TRUE(mapped->status().ok()) << mapped->status();
    EXPECT_EQ(Scalars(Drain(*mapped)), expected) << threads << " threads";
  }
}

TEST(ParallelMapTest, RunsCallsAtOnce) {
  std::atomic<int> running{0}, most{0};
  // Each call waits (at most 5 s) for a second call to be running beside it.
  auto fn = [&](Element e) -> StatusOr<Element> {
    const int now = ++running;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (most.load() < 2 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    --running;
    return e;
  };
  Drain(*RangeDataset(24)->Map(fn, 4));
  EXPECT_GT(most.load(), 1);
  EXPECT_LE(most.load(), 4);
}

TEST(ParallelMapTest, AnErrorKeepsItsPlaceAndTheRestFollows) {
  auto fn = [](Element e) -> StatusOr<Element> {
    if (e[0].ElementAsDouble(0) == 3) return InvalidArgument("three is bad");
    return e;
  };
  std::unique_ptr<Iterator> it = RangeDataset(6)->Map(fn, 3)->MakeIterator();
  std::vector<std::string> seen;
  for (int i = 0; i < 7; ++i) {
    Element e;
    Status s = it->GetNext(&e);
    seen.push_back(s.ok() ? std::to_string(static_cast<int>(e[0].ElementAsDouble(0)))
                          : s.code() == Code::kOutOfRange ? "end" : s.message());
  }
  EXPECT_THAT(seen, ElementsAre("0", "1", "2", "Map: three is bad", "4", "5", "end"));
}

TEST(ParallelMapTest, ChecksTheDeclaredSpecAndItsArguments) {
  auto wrong = [](Element) -> StatusOr<Element> { return Element{Tensor::Scalar<float>(1)}; };
  std::unique_ptr<Iterator> it = RangeDataset(3)->Map(wrong, 2)->MakeIterator();
  Element e;
  Status s = it->GetNext(&e);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("declares (int32 [])"));
  EXPECT_THAT(RangeDataset(3)->Map(wrong, 0)->status().message(),
              HasSubstr("num_parallel_calls must be >= 1, got 0"));
}

TEST(ParallelMapTest, AnIteratorDroppedMidwayStopsItsThreads) {
  auto mapped = RangeDataset(1000)->Map(TimesTenSlowFirst(), 4);
  std::unique_ptr<Iterator> it = mapped->MakeIterator();
  Element e;
  ASSERT_TRUE(it->GetNext(&e).ok());
  it.reset();  // joins the workers with work still queued; must not hang or crash
  SUCCEED();
}

TEST(ShardTest, ShardsAreDisjointAndTogetherTheWhole) {
  std::multiset<int> all;
  for (int index = 0; index < 3; ++index) {
    std::vector<int> part = Scalars(Drain(*RangeDataset(10)->Shard(3, index)));
    for (size_t k = 0; k < part.size(); ++k) EXPECT_EQ(part[k], index + 3 * static_cast<int>(k));
    all.insert(part.begin(), part.end());
  }
  EXPECT_THAT(std::vector<int>(all.begin(), all.end()), ElementsAreArray(Iota(0, 10)));
}

TEST(ShardTest, AnInputErrorGoesToTheShardItFallsTo) {
  auto fn = [](Element e) -> StatusOr<Element> {
    if (e[0].ElementAsDouble(0) == 4) return InvalidArgument("four is bad");
    return e;
  };
  auto source = RangeDataset(6)->Map(fn);
  auto count_errors = [&](int index) {
    int errors = 0;
    std::unique_ptr<Iterator> it = source->Shard(2, index)->MakeIterator();
    for (Element e;;) {
      Status s = it->GetNext(&e);
      if (s.code() == Code::kOutOfRange) break;
      if (!s.ok()) ++errors;
    }
    return errors;
  };
  EXPECT_EQ(count_errors(0), 1);  // element 4 is shard 0's
  EXPECT_EQ(count_errors(1), 0);
}

TEST(ShardTest, BadArgumentsAreNamed) {
  EXPECT_THAT(RangeDataset(4)->Shard(0, 0)->status().message(),
              HasSubstr("num_shards must be >= 1"));
  EXPECT_THAT(RangeDataset(4)->Shard(2, 2)->status().message(),
              HasSubstr("index 2 of num_shards 2"));
}

// Input element x -> a dataset of x*100, x*100+1, ..., x*100+count-1.
Dataset::InterleaveFn Runs(int count) {
  return [count](Element e) -> StatusOr<std::shared_ptr<const Dataset>> {
    const int x = static_cast<int>(e[0].ElementAsDouble(0));
    std::vector<int32_t> v;
    for (int i = 0; i < count + x; ++i) v.push_back(x * 100 + i);
    return Dataset::FromTensorSlices({Tensor::FromVector(v)});
  };
}

TEST(InterleaveTest, TakesBlocksFromCycleLengthDatasetsInTurn) {
  // Element x gives 2 + x values: 0:{0,1} 1:{100,101,102} 2:{200,...,203}. As in
  // TensorFlow, a dataset that ends passes the turn on, and its slot opens the next
  // input element when the turn comes back.
  auto ds = RangeDataset(3)->Interleave(Runs(2), {DType::kInt32}, {Shape({})},
                                        /*cycle_length=*/2, /*block_length=*/2);
  ASSERT_TRUE(ds->status().ok()) << ds->status();
  EXPECT_THAT(Scalars(Drain(*ds)), ElementsAre(0, 1, 100, 101, 102, 200, 201, 202, 203));
  auto one_each = RangeDataset(3)->Interleave(Runs(2), {DType::kInt32}, {Shape({})}, 2, 1);
  EXPECT_THAT(Scalars(Drain(*one_each)), ElementsAre(0, 100, 1, 101, 102, 200, 201, 202, 203));
}

TEST(InterleaveTest, CycleLengthOneReadsOneAfterAnother) {
  auto ds = RangeDataset(2)->Interleave(Runs(1), {DType::kInt32}, {Shape({})}, 1);
  EXPECT_THAT(Scalars(Drain(*ds)), ElementsAre(0, 100, 101));
}

TEST(InterleaveTest, ErrorsOfTheFunctionAndOfTheSpecAreNamed) {
  auto failing = [](Element e) -> StatusOr<std::shared_ptr<const Dataset>> {
    if (e[0].ElementAsDouble(0) == 0) return NotFound("no file zero");
    return Runs(1)(std::move(e));
  };
  std::unique_ptr<Iterator> it =
      RangeDataset(2)->Interleave(failing, {DType::kInt32}, {Shape({})}, 2)->MakeIterator();
  Element e;
  Status first = it->GetNext(&e);
  EXPECT_EQ(first.code(), Code::kNotFound);
  EXPECT_THAT(first.message(), HasSubstr("Interleave: no file zero"));
  ASSERT_TRUE(it->GetNext(&e).ok());  // element 1's dataset follows
  EXPECT_EQ(e[0].ElementAsDouble(0), 100);

  auto wrong_spec = RangeDataset(1)->Interleave(Runs(1), {DType::kFloat32}, {Shape({})}, 1);
  Status s = wrong_spec->MakeIterator()->GetNext(&e);
  EXPECT_THAT(s.message(), HasSubstr("Interleave: the function returned (int32 [])"));
  EXPECT_THAT(RangeDataset(1)->Interleave(Runs(1), {DType::kInt32}, {Shape({})}, 0)
                  ->status().message(),
              HasSubstr("cycle_length and block_length must be >= 1"));
}

// float32 [n, 2, 3, 1] images whose pixel (y, x) of image i is i*100 + y*10 + x + 1.
std::shared_ptr<const Dataset> Images(int n) {
  Tensor t(DType::kFloat32, Shape({n, 2, 3, 1}));
  float* p = t.data<float>();
  for (int i = 0; i < n; ++i) {
    for (int y = 0; y < 2; ++y) {
      for (int x = 0; x < 3; ++x) *p++ = static_cast<float>(i * 100 + y * 10 + x + 1);
    }
  }
  auto ds = Dataset::FromTensorSlices({t});
  EXPECT_TRUE(ds.ok()) << ds.status();
  return *ds;
}

TEST(ImageAugmentationTest, FlipAndCropMoveThePixelsAsDrawn) {
  Tensor image = Drain(*Images(1))[0][0];
  EXPECT_THAT(Values(AugmentImage(image, /*flip=*/true, 0, 0, 0)),
              ElementsAre(3, 2, 1, 13, 12, 11));
  // Padded by 1 and cut at (top 0, left 2): one row of zeros above, shifted left by 1.
  EXPECT_THAT(Values(AugmentImage(image, false, 1, 0, 2)), ElementsAre(0, 0, 0, 2, 3, 0));
  // The centre window (1, 1) is the image itself.
  EXPECT_THAT(Values(AugmentImage(image, false, 1, 1, 1)), ElementsAreArray(Values(image)));
}

TEST(ImageAugmentationTest, TheSameSeedGivesTheSameImagesAndEachPassNewOnes) {
  ImageAugmentation options{/*flip_left_right=*/true, /*crop_padding=*/1, /*seed=*/5};
  auto augmented = AugmentImages(Images(40), options)->Repeat(2);
  std::vector<Element> first = Drain(*augmented), again = Drain(*augmented);
  ASSERT_EQ(first.size(), 80u);
  int changed = 0, passes_differ = 0;
  std::vector<Element> plain = Drain(*Images(40));
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(Values(first[i][0]), Values(again[i][0])) << i;
    if (Values(first[i][0]) != Values(plain[i % 40][0])) ++changed;
    if (i < 40 && Values(first[i][0]) != Values(first[i + 40][0])) ++passes_differ;
  }
  EXPECT_GT(changed, 40);        // about 8 in 9 images are moved or mirrored
  EXPECT_GT(passes_differ, 20);  // the second pass draws anew
  options.seed = 6;
  EXPECT_NE(Values(Drain(*AugmentImages(Images(40), options))[7][0]), Values(first[7][0]));
}

TEST(ImageAugmentationTest, RefusesWhatIsNoImage) {
  EXPECT_THAT(AugmentImages(RangeDataset(3), {})->status().message(),
              HasSubstr("expected float32 [H, W, C]"));
  ImageAugmentation negative;
  negative.crop_padding = -1;
  EXPECT_THAT(AugmentImages(Images(1), negative)->status().message(),
              HasSubstr("crop_padding must be >= 0"));
}

}  // namespace
}  // namespace actorflow
