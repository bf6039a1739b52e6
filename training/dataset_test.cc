#include "training/dataset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "graph/ops.h"
#include "graph/scope.h"
#include "kernels/direct_session.h"
#include "training/csv_dataset.h"
#include "training/iterator_ops.h"

namespace actorflow {
namespace {

// --- Helpers -------------------------------------------------------------------------

Tensor Range(int n) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return Tensor::FromVector(v);
}

std::shared_ptr<const Dataset> RangeDataset(int n) {
  auto ds = Dataset::FromTensorSlices({Range(n)});
  EXPECT_TRUE(ds.ok()) << ds.status();
  return *ds;
}

// Every element until OutOfRange; fails the test on any other error.
std::vector<Element> Drain(const Dataset& dataset) {
  std::vector<Element> elements;
  std::unique_ptr<Iterator> it = dataset.MakeIterator();
  while (true) {
    Element e;
    Status s = it->GetNext(&e);
    if (s.code() == Code::kOutOfRange) break;
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) break;
    elements.push_back(std::move(e));
  }
  return elements;
}

// Component 0 of each scalar element, as ints.
std::vector<int> Scalars(const std::vector<Element>& elements) {
  std::vector<int> out;
  for (const Element& e : elements) out.push_back(static_cast<int>(e[0].ElementAsDouble(0)));
  return out;
}

std::vector<double> Values(const Tensor& t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.NumElements(); ++i) out.push_back(t.ElementAsDouble(i));
  return out;
}

std::vector<int> Iota(int begin, int end) {
  std::vector<int> v(end - begin);
  std::iota(v.begin(), v.end(), begin);
  return v;
}

std::string DataPath(const std::string& file) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return std::string(srcdir ? srcdir : ".") + "/actorflow/examples/data/" + file;
}

std::string WriteTempFile(const std::string& name, const std::string& contents) {
  const char* tmpdir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(tmpdir ? tmpdir : "/tmp") + "/" + name;
  std::ofstream(path) << contents;
  return path;
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// --- The graph: MakeOneShotIterator and IteratorGetNext ----------------------------------

// The guide's first example: each Run of GetNext's output takes the next row.
TEST(OneShotIteratorTest, YieldsEachSliceThenOutOfRangeOnEveryLaterRun) {
  auto ds = Dataset::FromTensorSlices(
      {Tensor::FromVector<float>({0, 1, 2, 3, 4, 5, 6, 7}, Shape{4, 2})});
  ASSERT_TRUE(ds.ok()) << ds.status();
  Scope root = Scope::NewRootScope();
  OneShotIterator iterator = MakeOneShotIterator(root, *ds);
  std::vector<Output> next = iterator.GetNext();
  ASSERT_TRUE(root.ok()) << root.status();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].dtype(), DType::kFloat32);
  EXPECT_EQ(next[0].shape(), (Shape{2}));

  auto session = NewDirectSession(root.graph());
  for (int row = 0; row < 4; ++row) {
    std::vector<Tensor> out;
    ASSERT_TRUE(session->Run({}, {next[0].name()}, {}, &out).ok()) << "row " << row;
    EXPECT_EQ(Values(out[0]), (std::vector<double>{2.0 * row, 2.0 * row + 1}));
  }
  for (int extra = 0; extra < 2; ++extra) {
    std::vector<Tensor> out;
    Status s = session->Run({}, {next[0].name()}, {}, &out);
    EXPECT_EQ(s.code(), Code::kOutOfRange) << s;
    EXPECT_TRUE(Contains(s.message(), "End of sequence")) << s;
    EXPECT_TRUE(Contains(s.message(), next[0].node->name())) << s;
  }
}

TEST(OneShotIteratorTest, BatchedComponentsFeedOtherOpsWithAnUnknownBatchDim) {
  auto ds = Dataset::FromTensorSlices(
      {Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{3, 2}),
       Tensor::FromVector<int32_t>({7, 8, 9})});
  ASSERT_TRUE(ds.ok());
  Scope root = Scope::NewRootScope();
  std::vector<Output> next = MakeOneShotIterator(root, (*ds)->Batch(2)).GetNext();
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0].shape(), (Shape{-1, 2}));
  EXPECT_EQ(next[1].dtype(), DType::kInt32);
  EXPECT_EQ(next[1].shape(), (Shape{-1}));
  Output row_sums = Sum(root, next[0], {1});
  ASSERT_TRUE(root.ok()) << root.status();

  auto session = NewDirectSession(root.graph());
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {row_sums.name(), next[1].name()}, {}, &out).ok());
  EXPECT_EQ(Values(out[0]), (std::vector<double>{3, 7}));
  EXPECT_EQ(Values(out[1]), (std::vector<double>{7, 8}));
  ASSERT_TRUE(session->Run({}, {row_sums.name(), next[1].name()}, {}, &out).ok());
  EXPECT_EQ(Values(out[0]), (std::vector<double>{11}));
  EXPECT_EQ(Values(out[1]), (std::vector<double>{9}));
  EXPECT_EQ(session->Run({}, {next[1].name()}, {}, &out).code(), Code::kOutOfRange);
}

TEST(OneShotIteratorTest, EachSessionStartsFromTheBeginning) {
  Scope root = Scope::NewRootScope();
  std::vector<Output> next = MakeOneShotIterator(root, RangeDataset(3)).GetNext();
  ASSERT_TRUE(root.ok()) << root.status();
  for (int session_index = 0; session_index < 2; ++session_index) {
    auto session = NewDirectSession(root.graph());
    std::vector<Tensor> out;
    ASSERT_TRUE(session->Run({}, {next[0].name()}, {}, &out).ok());
    EXPECT_EQ(out[0].ElementAsDouble(0), 0) << "session " << session_index;
  }
}

TEST(OneShotIteratorTest, AnInvalidDatasetIsAnErrorInTheScope) {
  Scope root = Scope::NewRootScope();
  OneShotIterator iterator = MakeOneShotIterator(root, RangeDataset(3)->Batch(0));
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(root.status().message(), "batch_size")) << root.status();
  std::vector<Output> next = iterator.GetNext();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_FALSE(next[0].valid());
}

TEST(OneShotIteratorTest, AnUnregisteredIteratorIdIsNotFoundAtRunTime) {
  Scope root = Scope::NewRootScope();
  const Node* node = root.AddNode("IteratorGetNext", {},
                                  {{"iterator_id", "nowhere"},
                                   {"output_dtypes", std::vector<std::string>{"int32"}}});
  ASSERT_NE(node, nullptr) << root.status();
  EXPECT_EQ(node->num_outputs(), 1);
  auto session = NewDirectSession(root.graph());
  std::vector<Tensor> out;
  Status s = session->Run({}, {node->name()}, {}, &out);
  EXPECT_EQ(s.code(), Code::kNotFound) << s;
  EXPECT_TRUE(Contains(s.message(), "nowhere")) << s;
}

TEST(IteratorGetNextOpTest, HasOneOutputPerDTypeWithTheGivenShapes) {
  Scope root = Scope::NewRootScope();
  const Node* node = root.AddNode(
      "IteratorGetNext", {},
      {{"iterator_id", "x"},
       {"output_dtypes", std::vector<std::string>{"float32", "int64", "bool"}},
       {"output_shapes", std::vector<std::string>{"[?,4]", "[]", "<unknown>"}}});
  ASSERT_NE(node, nullptr) << root.status();
  ASSERT_EQ(node->num_outputs(), 3);
  EXPECT_EQ(node->output_shape(0), (Shape{-1, 4}));
  EXPECT_EQ(node->output_dtype(1), DType::kInt64);
  EXPECT_EQ(node->output_shape(1), Shape{});
  EXPECT_TRUE(node->output_shape(2).unknown_rank());
  EXPECT_TRUE(node->IsStateful());
}

TEST(IteratorGetNextOpTest, RejectsBadDTypesAndMismatchedShapeLists) {
  Scope bad_dtype = Scope::NewRootScope();
  bad_dtype.AddNode("IteratorGetNext", {},
                    {{"iterator_id", "x"}, {"output_dtypes", std::vector<std::string>{"str"}}});
  EXPECT_EQ(bad_dtype.status().code(), Code::kInvalidArgument);
  Scope mismatched = Scope::NewRootScope();
  mismatched.AddNode("IteratorGetNext", {},
                     {{"iterator_id", "x"},
                      {"output_dtypes", std::vector<std::string>{"float32", "int32"}},
                      {"output_shapes", std::vector<std::string>{"[4]"}}});
  EXPECT_EQ(mismatched.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(mismatched.status().message(), "output_shapes")) << mismatched.status();
  Scope bad_shape = Scope::NewRootScope();
  bad_shape.AddNode("IteratorGetNext", {},
                    {{"iterator_id", "x"},
                     {"output_dtypes", std::vector<std::string>{"float32"}},
                     {"output_shapes", std::vector<std::string>{"[4,x]"}}});
  EXPECT_EQ(bad_shape.status().code(), Code::kInvalidArgument);
}

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
  EXPECT_TRUE(Contains(ds.status().message(), "component 1")) << ds.status();
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
  EXPECT_TRUE(Contains(s.message(), "Batch")) << s;
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
  EXPECT_TRUE(Contains(s.message(), "declares (int32 [])")) << s;
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

TEST(PrefetchTest, StopsItsThreadWhenDestroyedEarly) {
  // The producer fills its buffer from an endless input and waits; destroying the
  // iterator must wake it and join.
  for (int round = 0; round < 20; ++round) {
    std::unique_ptr<Iterator> it = RangeDataset(4)->Repeat(-1)->Prefetch(2)->MakeIterator();
    Element e;
    ASSERT_TRUE(it->GetNext(&e).ok());
  }
  std::unique_ptr<Iterator> never_started = RangeDataset(4)->Prefetch(2)->MakeIterator();
}

// --- CSV -----------------------------------------------------------------------------

TEST(CsvTest, LoadsTheIrisTrainingSet) {
  auto data = LoadCsv(DataPath("iris_training.csv"));
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->features.dtype(), DType::kFloat32);
  EXPECT_EQ(data->features.shape(), (Shape{120, 4}));
  EXPECT_EQ(data->labels.dtype(), DType::kInt32);
  EXPECT_EQ(data->labels.shape(), (Shape{120}));
  EXPECT_EQ(data->feature_names, (std::vector<std::string>{"sepal_length_cm", "sepal_width_cm",
                                                           "petal_length_cm", "petal_width_cm"}));
  std::vector<int> per_class(3, 0);
  for (double label : Values(data->labels)) {
    ASSERT_TRUE(label >= 0 && label <= 2) << label;
    ++per_class[static_cast<int>(label)];
  }
  EXPECT_EQ(per_class, (std::vector<int>{40, 40, 40}));
  // The first row: 4.8,3,1.4,0.3,0
  EXPECT_FLOAT_EQ(data->features.data<float>()[0], 4.8f);
  EXPECT_FLOAT_EQ(data->features.data<float>()[3], 0.3f);
}

TEST(CsvTest, DatasetYieldsTheSameRowsAsLoadCsv) {
  auto data = LoadCsv(DataPath("iris_test.csv"));
  auto ds = CsvDataset(DataPath("iris_test.csv"));
  ASSERT_TRUE(data.ok() && ds.ok());
  EXPECT_EQ((*ds)->output_shapes(), (std::vector<Shape>{Shape{4}, Shape{}}));
  std::vector<Element> rows = Drain(**ds);
  ASSERT_EQ(rows.size(), 30u);
  std::vector<double> all = Values(data->features);
  for (size_t r = 0; r < rows.size(); ++r) {
    EXPECT_EQ(Values(rows[r][0]), std::vector<double>(all.begin() + 4 * r, all.begin() + 4 * r + 4));
    EXPECT_EQ(rows[r][1].ElementAsDouble(0), data->labels.ElementAsDouble(r));
  }
}

TEST(CsvTest, LoadsTheDigitsSets) {
  auto train = LoadCsv(DataPath("digits_training.csv"));
  auto test = LoadCsv(DataPath("digits_test.csv"));
  ASSERT_TRUE(train.ok() && test.ok()) << train.status() << test.status();
  EXPECT_EQ(train->features.shape(), (Shape{1437, 64}));
  EXPECT_EQ(test->features.shape(), (Shape{360, 64}));
  std::vector<double> labels = Values(train->labels);
  EXPECT_EQ(*std::max_element(labels.begin(), labels.end()), 9);
}

TEST(CsvTest, FeedsAGraphThroughABatchedIterator) {
  auto ds = CsvDataset(DataPath("iris_training.csv"));
  ASSERT_TRUE(ds.ok()) << ds.status();
  Scope root = Scope::NewRootScope();
  std::vector<Output> next =
      MakeOneShotIterator(root, (*ds)->Shuffle(120, 1)->Batch(32)->Prefetch(2)).GetNext();
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = NewDirectSession(root.graph());
  int rows = 0;
  std::vector<Tensor> out;
  Status s;
  while ((s = session->Run({}, {next[0].name(), next[1].name()}, {}, &out)).ok()) {
    EXPECT_EQ(out[0].dim(1), 4);
    EXPECT_EQ(out[0].dim(0), out[1].dim(0));
    rows += static_cast<int>(out[1].dim(0));
  }
  EXPECT_EQ(s.code(), Code::kOutOfRange) << s;
  EXPECT_EQ(rows, 120);
}

TEST(CsvTest, ChoosesTheLabelColumnByName) {
  const std::string path = WriteTempFile("label_first.csv", "y,a,b\n1,2.5,3\n0,4,5\n");
  CsvOptions options;
  options.label_column = "y";
  auto data = LoadCsv(path, options);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->feature_names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Values(data->features), (std::vector<double>{2.5, 3, 4, 5}));
  EXPECT_EQ(Values(data->labels), (std::vector<double>{1, 0}));
}

TEST(CsvTest, ReadsFilesWithoutAHeaderAndWithBlankLinesAndCrLf) {
  const std::string path = WriteTempFile("no_header.csv", "1, 2 ,0\r\n\r\n3,4,1\r\n\n");
  CsvOptions options;
  options.has_header = false;
  auto data = LoadCsv(path, options);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->feature_names, (std::vector<std::string>{"column_1", "column_2"}));
  EXPECT_EQ(Values(data->features), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(Values(data->labels), (std::vector<double>{0, 1}));
}

TEST(CsvErrorTest, AMissingColumnNamesFileLineAndColumn) {
  const std::string path = WriteTempFile("missing.csv", "a,b,label\n1,2,0\n3,4\n");
  auto data = LoadCsv(path);
  ASSERT_EQ(data.status().code(), Code::kInvalidArgument);
  // Line 3, "3,4" ends at character 3: the missing field would start at character 4.
  EXPECT_TRUE(Contains(data.status().message(), path + ":3:4: field 3 (label) at character 4"))
      << data.status();
  EXPECT_TRUE(Contains(data.status().message(), "missing")) << data.status();
}

TEST(CsvErrorTest, ANonNumericValueNamesFileLineAndColumn) {
  const std::string path = WriteTempFile("non_numeric.csv", "a,b,label\n1,2,0\n3, abc,1\n");
  auto data = LoadCsv(path);
  ASSERT_EQ(data.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(data.status().message(), path + ":3:4: field 2 (b) at character 4"))
      << data.status();
  EXPECT_TRUE(Contains(data.status().message(), "'abc' is not a number")) << data.status();

  const std::string bad_label = WriteTempFile("bad_label.csv", "a,label\n1,2.5\n");
  auto labels = LoadCsv(bad_label);
  EXPECT_TRUE(Contains(labels.status().message(), bad_label + ":2:3: field 2 (label)"))
      << labels.status();
}

TEST(CsvErrorTest, AnExtraFieldIsAnError) {
  const std::string path = WriteTempFile("extra.csv", "a,label\n1,0,9\n");
  auto data = LoadCsv(path);
  EXPECT_EQ(data.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(data.status().message(), path + ":2:5: field 3 at character 5"))
      << data.status();
}

TEST(CsvErrorTest, AnUnknownLabelColumnListsTheHeader) {
  const std::string path = WriteTempFile("header.csv", "a,b,label\n1,2,0\n");
  CsvOptions options;
  options.label_column = "species";
  for (const Status& s : {LoadCsv(path, options).status(), CsvDataset(path, options).status()}) {
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_TRUE(Contains(s.message(), "'species'")) << s;
    EXPECT_TRUE(Contains(s.message(), "a, b, label")) << s;
  }
}

TEST(CsvErrorTest, AMissingFileIsNotFoundNamingIt) {
  const std::string path = DataPath("no_such_file.csv");
  for (const Status& s : {LoadCsv(path).status(), CsvDataset(path).status()}) {
    EXPECT_EQ(s.code(), Code::kNotFound);
    EXPECT_TRUE(Contains(s.message(), path)) << s;
  }
}

TEST(CsvErrorTest, ADatasetReportsABadRowWhenReachedAndGoesOn) {
  const std::string path = WriteTempFile("bad_row.csv", "a,label\n1,0\nx,1\n3,2\n");
  auto ds = CsvDataset(path);
  ASSERT_TRUE(ds.ok()) << ds.status();
  std::unique_ptr<Iterator> it = (*ds)->MakeIterator();
  Element e;
  ASSERT_TRUE(it->GetNext(&e).ok());
  Status s = it->GetNext(&e);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(s.message(), path + ":3:1:")) << s;
  ASSERT_TRUE(it->GetNext(&e).ok());
  EXPECT_EQ(e[1].ElementAsDouble(0), 2);
  EXPECT_EQ(it->GetNext(&e).code(), Code::kOutOfRange);
}

}  // namespace
}  // namespace actorflow
