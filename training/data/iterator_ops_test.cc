#include "training/data/iterator_ops.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/ops.h"
#include "graph/scope.h"
#include "kernels/direct_session.h"
#include "training/data/dataset_test_util.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

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

  auto session = NewDirectSession(root.graph()).value();
  for (int row = 0; row < 4; ++row) {
    std::vector<Tensor> out;
    ASSERT_TRUE(session->Run({}, {next[0].name()}, {}, &out).ok()) << "row " << row;
    EXPECT_EQ(Values(out[0]), (std::vector<double>{2.0 * row, 2.0 * row + 1}));
  }
  for (int extra = 0; extra < 2; ++extra) {
    std::vector<Tensor> out;
    Status s = session->Run({}, {next[0].name()}, {}, &out);
    EXPECT_EQ(s.code(), Code::kOutOfRange) << s;
    EXPECT_THAT(s.message(), HasSubstr("End of sequence")) << s;
    EXPECT_THAT(s.message(), HasSubstr(next[0].node->name())) << s;
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

  auto session = NewDirectSession(root.graph()).value();
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
    auto session = NewDirectSession(root.graph()).value();
    std::vector<Tensor> out;
    ASSERT_TRUE(session->Run({}, {next[0].name()}, {}, &out).ok());
    EXPECT_EQ(out[0].ElementAsDouble(0), 0) << "session " << session_index;
  }
}

TEST(OneShotIteratorTest, AnInvalidDatasetIsAnErrorInTheScope) {
  Scope root = Scope::NewRootScope();
  OneShotIterator iterator = MakeOneShotIterator(root, RangeDataset(3)->Batch(0));
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(root.status().message(), HasSubstr("batch_size")) << root.status();
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
  auto session = NewDirectSession(root.graph()).value();
  std::vector<Tensor> out;
  Status s = session->Run({}, {node->name()}, {}, &out);
  EXPECT_EQ(s.code(), Code::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr("nowhere")) << s;
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
  EXPECT_THAT(mismatched.status().message(), HasSubstr("output_shapes")) << mismatched.status();
  Scope bad_shape = Scope::NewRootScope();
  bad_shape.AddNode("IteratorGetNext", {},
                    {{"iterator_id", "x"},
                     {"output_dtypes", std::vector<std::string>{"float32"}},
                     {"output_shapes", std::vector<std::string>{"[4,x]"}}});
  EXPECT_EQ(bad_shape.status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace actorflow
