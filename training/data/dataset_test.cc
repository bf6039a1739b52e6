#include "training/data/dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "graph/status_testing.h"
#include "training/data/dataset_test_util.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

// --- FromTensorSlices ----------------------------------------------------------------

TEST(FromTensorSlicesTest, SlicesEveryComponentAlongDimZero) {
  auto ds = Dataset::FromTensorSlices(
      {Tensor::FromVector<float>({0, 1, 2, 3, 4, 5}, Shape{3, 2}), Range(3)});
  ASSERT_TRUE(ds.ok());
  EXPECT_EQ((*ds)->output_shapes(), (std::vector<Shape>{Shape{2}, Shape{}}));
  std::vector<Element> elements = Drain(**ds);
  ASSERT_EQ(elements.size(), 3u);
  EXPECT_EQ(Values(elements[2][0]), (std::vector<double>{4, 5}));
  EXPECT_EQ(elements[2][1].shape(), Shape{});
  EXPECT_EQ(elements[2][1].ElementAsDouble(0), 2);
}

TEST(FromTensorSlicesTest, RejectsComponentsWithDifferentDimZero) {
  auto ds = Dataset::FromTensorSlices({Range(4), Range(3)});
  EXPECT_EQ(ds.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(ds.status().message(), HasSubstr("component 1")) << ds.status();
}

TEST(FromTensorSlicesTest, RejectsNoComponentsAndScalars) {
  EXPECT_EQ(Dataset::FromTensorSlices({}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Dataset::FromTensorSlices({Tensor::Scalar(1.0f)}).status().code(),
            Code::kInvalidArgument);
}

TEST(IteratorTest, OutOfRangeRepeatsAfterTheEnd) {
  std::unique_ptr<Iterator> it = RangeDataset(1)->Batch(2)->MakeIterator();
  Element e;
  ASSERT_TRUE(it->GetNext(&e).ok());
  EXPECT_EQ(it->GetNext(&e).code(), Code::kOutOfRange);
  EXPECT_EQ(it->GetNext(&e).code(), Code::kOutOfRange);
}

TEST(IteratorTest, OutlivesItsDataset) {
  std::unique_ptr<Iterator> it =
      RangeDataset(3)->Map([](Element e) -> StatusOr<Element> { return e; })->MakeIterator();
  Element e;
  ASSERT_TRUE(it->GetNext(&e).ok());
  EXPECT_EQ(e[0].ElementAsDouble(0), 0);
}

// --- Shuffle -------------------------------------------------------------------------

TEST(ShuffleTest, IsAPermutationDeterminedByTheSeed) {
  auto data = RangeDataset(100);
  std::vector<int> a = Scalars(Drain(*data->Shuffle(100, 42)));
  std::vector<int> b = Scalars(Drain(*data->Shuffle(100, 42)));
  std::vector<int> c = Scalars(Drain(*data->Shuffle(100, 43)));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, Iota(0, 100));
  std::sort(a.begin(), a.end());
  EXPECT_EQ(a, Iota(0, 100));
}

TEST(ShuffleTest, ASmallBufferOnlyMovesElementsLocally) {
  // With a buffer of 3, output i is drawn from inputs [0, i + 2].
  std::vector<int> order = Scalars(Drain(*RangeDataset(50)->Shuffle(3, 7)));
  ASSERT_EQ(order.size(), 50u);
  for (size_t i = 0; i < order.size(); ++i) EXPECT_LE(order[i], static_cast<int>(i) + 2);
  std::sort(order.begin(), order.end());
  EXPECT_EQ(order, Iota(0, 50));
  EXPECT_EQ(Scalars(Drain(*RangeDataset(10)->Shuffle(1, 7))), Iota(0, 10));
}

TEST(ShuffleTest, ReshufflesEachRepeatedEpochDeterministically) {
  auto shuffled = RangeDataset(20)->Shuffle(20, 5);
  std::vector<int> two_epochs = Scalars(Drain(*shuffled->Repeat(2)));
  ASSERT_EQ(two_epochs.size(), 40u);
  std::vector<int> first(two_epochs.begin(), two_epochs.begin() + 20);
  std::vector<int> second(two_epochs.begin() + 20, two_epochs.end());
  EXPECT_EQ(first, Scalars(Drain(*shuffled)));  // the first pass is the plain order
  EXPECT_NE(first, second);
  std::sort(second.begin(), second.end());
  EXPECT_EQ(second, Iota(0, 20));
  EXPECT_EQ(Scalars(Drain(*shuffled->Repeat(2))), two_epochs);  // a new iterator repeats
}

TEST(ShuffleTest, RejectsAnEmptyBuffer) {
  auto ds = RangeDataset(3)->Shuffle(0, 1);
  EXPECT_EQ(ds->status().code(), Code::kInvalidArgument);
  Element e;
  EXPECT_EQ(ds->MakeIterator()->GetNext(&e).code(), Code::kInvalidArgument);
}

// --- Batch ---------------------------------------------------------------------------

TEST(BatchTest, StacksElementsAndKeepsTheLastPartialBatch) {
  auto ds = Dataset::FromTensorSlices(
      {Tensor::FromVector<float>(std::vector<float>(20, 1.0f), Shape{10, 2}), Range(10)});
  ASSERT_TRUE(ds.ok());
  auto batched = (*ds)->Batch(4);
  EXPECT_EQ(batched->output_shapes(), (std::vector<Shape>{Shape{-1, 2}, Shape{-1}}));
  std::vector<Element> batches = Drain(*batched);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0][0].shape(), (Shape{4, 2}));
  EXPECT_EQ(Values(batches[1][1]), (std::vector<double>{4, 5, 6, 7}));
  EXPECT_EQ(batches[2][0].shape(), (Shape{2, 2}));
  EXPECT_EQ(Values(batches[2][1]), (std::vector<double>{8, 9}));
}

TEST(BatchTest, DropRemainderDropsThePartialBatchAndKnowsTheBatchDim) {
  auto batched = RangeDataset(10)->Batch(4, /*drop_remainder=*/true);
  EXPECT_EQ(batched->output_shapes(), (std::vector<Shape>{Shape{4}}));
  std::vector<Element> batches = Drain(*batched);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(Values(batches[1][0]), (std::vector<double>{4, 5, 6, 7}));
}

TEST(BatchTest, RejectsElementsOfDifferentShapes) {
  auto ragged = RangeDataset(2)->Map(
      [](Element e) -> StatusOr<Element> {
        const int n = static_cast<int>(e[0].ElementAsDouble(0)) + 1;
        return Element{Tensor::FromVector(std::vector<int32_t>(n, 0))};
      },
      {DType::kInt32}, {Shape{-1}});
  Element e;
  Status s = ragged->Batch(2)->MakeIterator()->GetNext(&e);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("Batch")) << s;
}

// --- Repeat --------------------------------------------------------------------------

TEST(RepeatTest, RepeatsTheGivenNumberOfTimes) {
  std::vector<int> expected = {0, 1, 2, 0, 1, 2};
  EXPECT_EQ(Scalars(Drain(*RangeDataset(3)->Repeat(2))), expected);
  EXPECT_TRUE(Drain(*RangeDataset(3)->Repeat(0)).empty());
  EXPECT_EQ(RangeDataset(3)->Repeat(-2)->status().code(), Code::kInvalidArgument);
}

TEST(RepeatTest, ForeverKeepsGoingAndEndsOnAnEmptyInput) {
  std::unique_ptr<Iterator> it = RangeDataset(2)->Repeat(-1)->MakeIterator();
  Element e;
  for (int i = 0; i < 11; ++i) {
    ASSERT_TRUE(it->GetNext(&e).ok());
    EXPECT_EQ(e[0].ElementAsDouble(0), i % 2);
  }
  auto empty = RangeDataset(2)->Batch(4, /*drop_remainder=*/true);
  EXPECT_TRUE(Drain(*empty->Repeat(-1)).empty());
}

TEST(RepeatTest, BatchesCrossEpochBoundaries) {
  std::vector<Element> batches = Drain(*RangeDataset(3)->Repeat(2)->Batch(4));
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(Values(batches[0][0]), (std::vector<double>{0, 1, 2, 0}));
  EXPECT_EQ(Values(batches[1][0]), (std::vector<double>{1, 2}));
}

// --- Map -----------------------------------------------------------------------------

TEST(MapTest, StandardizesFeatures) {
  auto ds = Dataset::FromTensorSlices(
      {Tensor::FromVector<float>({1, 10, 3, 20, 5, 30}, Shape{3, 2}), Range(3)});
  ASSERT_TRUE(ds.ok());
  const std::vector<float> mean = {3, 20};
  const std::vector<float> stddev = {2, 10};
  auto standardized = (*ds)->Map([mean, stddev](Element e) -> StatusOr<Element> {
    Tensor out(DType::kFloat32, e[0].shape());
    for (int i = 0; i < 2; ++i) {
      out.data<float>()[i] = (e[0].data<float>()[i] - mean[i]) / stddev[i];
    }
    return Element{out, e[1]};
  });
  std::vector<Element> rows = Drain(*standardized);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(Values(rows[0][0]), (std::vector<double>{-1, -1}));
  EXPECT_EQ(Values(rows[1][0]), (std::vector<double>{0, 0}));
  EXPECT_EQ(Values(rows[2][0]), (std::vector<double>{1, 1}));
  EXPECT_EQ(rows[2][1].ElementAsDouble(0), 2);
}

TEST(MapTest, ReportsFunctionErrorsAndUndeclaredOutputs) {
  auto failing = RangeDataset(3)->Map([](Element e) -> StatusOr<Element> {
    if (e[0].ElementAsDouble(0) == 1) return InvalidArgument("odd one");
    return e;
  });
  std::unique_ptr<Iterator> it = failing->MakeIterator();
  Element e;
  EXPECT_TRUE(it->GetNext(&e).ok());
  Status s = it->GetNext(&e);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "Map: odd one");
  EXPECT_TRUE(it->GetNext(&e).ok());  // the next element is fine
  EXPECT_EQ(e[0].ElementAsDouble(0), 2);

  auto to_float = RangeDataset(3)->Map(
      [](Element) -> StatusOr<Element> { return Element{Tensor::Scalar(1.0f)}; });
  s = to_float->MakeIterator()->GetNext(&e);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("declares (int32 [])")) << s;
}

// --- Prefetch ------------------------------------------------------------------------

TEST(PrefetchTest, PreservesTheOrder) {
  for (int buffer_size : {1, 2, 64}) {
    EXPECT_EQ(Scalars(Drain(*RangeDataset(50)->Prefetch(buffer_size))), Iota(0, 50))
        << "buffer_size " << buffer_size;
  }
  auto pipeline = RangeDataset(30)->Shuffle(30, 3)->Batch(7);
  std::vector<Element> direct = Drain(*pipeline);
  std::vector<Element> prefetched = Drain(*pipeline->Prefetch(2));
  ASSERT_EQ(direct.size(), prefetched.size());
  for (size_t i = 0; i < direct.size(); ++i) {
    EXPECT_TRUE(TensorsEqual(direct[i][0], prefetched[i][0])) << "batch " << i;
  }
}

TEST(PrefetchTest, PropagatesErrorsInOrder) {
  auto failing = RangeDataset(5)->Map([](Element e) -> StatusOr<Element> {
    if (e[0].ElementAsDouble(0) == 2) return FailedPrecondition("bad element 2");
    return e;
  });
  std::unique_ptr<Iterator> it = failing->Prefetch(3)->MakeIterator();
  std::vector<std::string> seen;
  for (int i = 0; i < 7; ++i) {
    Element e;
    Status s = it->GetNext(&e);
    seen.push_back(s.ok() ? std::to_string(static_cast<int>(e[0].ElementAsDouble(0)))
                          : CodeName(s.code()));
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"0", "1", "FailedPrecondition", "3", "4",
                                            "OutOfRange", "OutOfRange"}));
}

// What the producer thread did, seen from the Map function it calls.
struct ProducerProbe {
  std::atomic<int64_t> calls{0};
  std::atomic<bool> iterator_destroyed{false};
  std::atomic<int64_t> calls_after_destruction{0};
};

// `input` mapped through a function that counts its calls on `probe` and holds
// the only reference to a sentinel that *input_alive watches: the sentinel lives
// exactly as long as whatever (an iterator chain) keeps the function.
std::shared_ptr<const Dataset> ProbedInput(const std::shared_ptr<const Dataset>& input,
                                           std::shared_ptr<ProducerProbe> probe,
                                           std::weak_ptr<int>* input_alive) {
  auto sentinel = std::make_shared<int>(0);
  *input_alive = sentinel;
  return input->Map([probe, sentinel](Element e) -> StatusOr<Element> {
    ++probe->calls;
    if (probe->iterator_destroyed) ++probe->calls_after_destruction;
    return e;
  });
}

TEST(PrefetchTest, StopsItsThreadWhenDestroyedEarly) {
  // The producer fills its buffer from an endless input and waits; destroying the
  // iterator must wake it and join it before returning: afterwards the input chain
  // (only the iterator holds it) is gone and never called again, and the producer
  // never read past its buffer (1 consumed + 2 buffered).
  constexpr int64_t kBuffer = 2;
  for (int round = 0; round < 20; ++round) {
    auto probe = std::make_shared<ProducerProbe>();
    std::weak_ptr<int> input_alive;
    std::unique_ptr<Iterator> it =
        ProbedInput(RangeDataset(4)->Repeat(-1), probe, &input_alive)->Prefetch(kBuffer)
            ->MakeIterator();
    Element e;
    ASSERT_OK(it->GetNext(&e));
    it.reset();
    probe->iterator_destroyed = true;
    EXPECT_TRUE(input_alive.expired()) << "round " << round << ": the producer kept its input";
    EXPECT_EQ(probe->calls_after_destruction, 0) << "round " << round;
    EXPECT_GE(probe->calls, 1) << "round " << round;
    EXPECT_LE(probe->calls, 1 + kBuffer) << "round " << round;
  }
  // An iterator never read starts no thread and never touches its input.
  auto probe = std::make_shared<ProducerProbe>();
  std::weak_ptr<int> input_alive;
  std::unique_ptr<Iterator> never_started =
      ProbedInput(RangeDataset(4), probe, &input_alive)->Prefetch(kBuffer)->MakeIterator();
  never_started.reset();
  EXPECT_TRUE(input_alive.expired());
  EXPECT_EQ(probe->calls, 0);
}

}  // namespace
}  // namespace actorflow
