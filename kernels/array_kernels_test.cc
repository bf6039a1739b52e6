// CPU array kernels (Identity, ZerosLike, OnesLike, Fill, Shape, Reshape, Transpose,
// ConcatV2, Slice) against the reference kernels, for all five dtypes; EvenSplitPart
// against Slice.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "graph/tensor.h"
#include "kernels/kernels_test_util.h"

namespace actorflow {
namespace {

const std::vector<Shape> kShapes = {Shape{},     Shape{1},    Shape{7},      Shape{2, 3},
                                    Shape{0, 3}, Shape{3, 0}, Shape{2, 3, 4}, Shape{3, 17}};

// A test per dtype; each body loops over its cases.
class ArrayKernelTest : public ::testing::TestWithParam<DType> {
 protected:
  Tensor Random(const Shape& shape) { return random_.Uniform(GetParam(), shape, -50, 50); }
  RandomTensors random_{5};
};

INSTANTIATE_TEST_SUITE_P(AllDTypes, ArrayKernelTest, ::testing::ValuesIn(kAllDTypes),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

TEST_P(ArrayKernelTest, IdentityZerosLikeOnesLikeMatchReference) {
  for (const char* op : {"Identity", "ZerosLike", "OnesLike"}) {
    for (const Shape& shape : kShapes) EXPECT_TRUE(MatchesReference({op, {}, {Random(shape)}}));
  }
}

TEST_P(ArrayKernelTest, FillMatchesReference) {
  for (const Shape& shape : {Shape{}, Shape{2, 3}, Shape{0, 4}, Shape{5, 1, 2}}) {
    const AttrMap attrs = {{"shape", shape}, {"value", Random(Shape{})}};
    EXPECT_TRUE(MatchesReference({"Fill", attrs, {}}));
  }
}

TEST_P(ArrayKernelTest, ShapeMatchesReferenceForBothOutTypes) {
  for (const Shape& shape : kShapes) {
    EXPECT_TRUE(MatchesReference({"Shape", {}, {Random(shape)}}));
    EXPECT_TRUE(MatchesReference({"Shape", {{"out_type", DType::kInt64}}, {Random(shape)}}));
  }
}

struct ReshapeCase {
  Shape from;
  std::vector<double> to;
};

TEST_P(ArrayKernelTest, ReshapeMatchesReferenceWithConstAndFedShapes) {
  const std::vector<ReshapeCase> cases = {
      {Shape{2, 3, 4}, {6, 4}},     {Shape{2, 3, 4}, {-1, 4}},   {Shape{2, 3, 4}, {24}},
      {Shape{2, 3, 4}, {-1}},       {Shape{2, 3, 4}, {2, -1, 2, 3}}, {Shape{2, 3, 4}, {4, 3, 2}},
      {Shape{}, {1}},               {Shape{1}, {}},              {Shape{1, 1}, {}},
      {Shape{0, 3}, {3, 0}},        {Shape{0, 3}, {3, 2, 0}},    {Shape{3, 17}, {17, -1}}};
  for (const ReshapeCase& c : cases) {
    for (DType index_dtype : kIntDTypes) {
      const Tensor shape =
          MakeTensor(index_dtype, Shape{static_cast<int64_t>(c.to.size())}, c.to);
      KernelTestCase fed{"Reshape", {}, {Random(c.from), shape}};
      EXPECT_TRUE(MatchesReference(fed));
      KernelTestCase constant = fed;
      constant.const_inputs = {1};
      EXPECT_TRUE(MatchesReference(constant));
    }
  }
}

TEST_P(ArrayKernelTest, ReshapeRejectsMismatchedSizesAndTwoUnknowns) {
  for (const std::vector<double>& to : {std::vector<double>{5, 5}, std::vector<double>{-1, -1, 2},
                                        std::vector<double>{7, -1}}) {
    KernelTestCase fed{"Reshape", {}, {Random(Shape{2, 3, 4}),
                                       MakeTensor(DType::kInt32, Shape{static_cast<int64_t>(to.size())}, to)}};
    EXPECT_TRUE(FailsWith(fed, Code::kInvalidArgument));
    fed.const_inputs = {1};
    EXPECT_TRUE(FailsWith(fed, Code::kInvalidArgument));
  }
}

TEST_P(ArrayKernelTest, TransposeMatchesReferenceForEveryPermutation) {
  std::vector<int64_t> perm = {0, 1, 2};
  do {
    EXPECT_TRUE(MatchesReference({"Transpose", {{"perm", perm}}, {Random(Shape{2, 3, 4})}}));
    EXPECT_TRUE(MatchesReference({"Transpose", {{"perm", perm}}, {Random(Shape{2, 0, 3})}}));
  } while (std::next_permutation(perm.begin(), perm.end()));
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {Shape{}, {}},          {Shape{7}, {0}},         {Shape{2, 3}, {1, 0}},
      {Shape{3, 17}, {1, 0}}, {Shape{0, 3}, {1, 0}},   {Shape{2, 1, 3, 2}, {3, 1, 0, 2}},
      {Shape{2, 3, 4, 5}, {0, 2, 1, 3}}, {Shape{33, 65}, {1, 0}}};
  for (const auto& [shape, p] : cases) {
    EXPECT_TRUE(MatchesReference({"Transpose", {{"perm", p}}, {Random(shape)}}));
  }
  // No perm: the axes reversed.
  for (const Shape& shape : kShapes) {
    EXPECT_TRUE(MatchesReference({"Transpose", {}, {Random(shape)}}));
  }
}

TEST_P(ArrayKernelTest, TransposeRejectsANonPermutation) {
  for (const std::vector<int64_t>& perm : {std::vector<int64_t>{0, 0}, std::vector<int64_t>{0, 2},
                                           std::vector<int64_t>{0}}) {
    EXPECT_TRUE(FailsWith({"Transpose", {{"perm", perm}}, {Random(Shape{2, 3})}},
                          Code::kInvalidArgument));
  }
}

TEST_P(ArrayKernelTest, ConcatV2MatchesReferenceOnEachAxis) {
  // Three inputs differing only along `axis`, including an empty one.
  for (int64_t axis : {0, 1, 2, -1, -2, -3}) {
    const int a = static_cast<int>(axis < 0 ? axis + 3 : axis);
    std::vector<Tensor> inputs;
    for (int64_t size : {2, 0, 3}) {
      std::vector<int64_t> dims = {2, 3, 4};
      dims[a] = size;
      inputs.push_back(Random(Shape(dims)));
    }
    EXPECT_TRUE(MatchesReference({"ConcatV2", {{"axis", axis}}, inputs}));
    EXPECT_TRUE(MatchesReference({"ConcatV2", {{"axis", axis}}, {inputs[0], inputs[2]}}));
  }
  EXPECT_TRUE(MatchesReference({"ConcatV2", {{"axis", 0}}, {Random(Shape{5})}}));
  EXPECT_TRUE(MatchesReference({"ConcatV2", {{"axis", 0}}, {Random(Shape{5}), Random(Shape{17})}}));
  EXPECT_TRUE(
      MatchesReference({"ConcatV2", {{"axis", 1}}, {Random(Shape{3, 17}), Random(Shape{3, 1})}}));
  EXPECT_TRUE(
      MatchesReference({"ConcatV2", {{"axis", 0}}, {Random(Shape{0, 3}), Random(Shape{0, 3})}}));
}

TEST_P(ArrayKernelTest, ConcatV2RejectsMismatchedDims) {
  EXPECT_TRUE(FailsWith({"ConcatV2", {{"axis", 0}}, {Random(Shape{2, 3}), Random(Shape{2, 4})}},
                        Code::kInvalidArgument));
  EXPECT_TRUE(FailsWith({"ConcatV2", {{"axis", 2}}, {Random(Shape{2, 3}), Random(Shape{2, 3})}},
                        Code::kInvalidArgument));
}

TEST_P(ArrayKernelTest, SliceMatchesReferenceIncludingSizeMinusOne) {
  struct SliceCase {
    Shape shape;
    std::vector<int64_t> begin, size;
  };
  const std::vector<SliceCase> cases = {
      {Shape{4, 5, 6}, {1, 0, 2}, {2, -1, 3}}, {Shape{4, 5, 6}, {0, 0, 0}, {-1, -1, -1}},
      {Shape{4, 5, 6}, {3, 4, 5}, {1, 1, 1}},  {Shape{4, 5, 6}, {1, 2, 3}, {0, 2, 2}},
      {Shape{4, 5, 6}, {4, 0, 0}, {-1, 5, 6}}, {Shape{7}, {2}, {-1}},
      {Shape{7}, {0}, {7}},                    {Shape{}, {}, {}},
      {Shape{0, 3}, {0, 1}, {0, 2}},           {Shape{3, 17}, {1, 3}, {2, 13}}};
  for (const SliceCase& c : cases) {
    EXPECT_TRUE(MatchesReference(
        {"Slice", {{"begin", c.begin}, {"size", c.size}}, {Random(c.shape)}}));
  }
}

TEST_P(ArrayKernelTest, SliceOutOfBoundsIsInvalid) {
  const Tensor x = Random(Shape{4, 5});
  for (const auto& [begin, size] :
       std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{0, 0}, {5, 1}}, {{3, 0}, {2, 1}}, {{-1, 0}, {1, 1}}, {{0, 6}, {-1, 1}}, {{0}, {1}}}) {
    EXPECT_TRUE(FailsWith({"Slice", {{"begin", begin}, {"size", size}}, {x}},
                          Code::kInvalidArgument));
  }
}

TEST_P(ArrayKernelTest, EvenSplitPartIsTheSliceOfItsRowsLargerPartsFirst) {
  // 10 rows in 4 parts: rows 0-2, 3-5, 6-7, 8-9; 2 rows in 3 parts leave the last empty.
  struct Case {
    Shape shape;
    int64_t parts;
    std::vector<int64_t> begins;
    std::vector<int64_t> sizes;
  };
  for (const Case& c : {Case{Shape{10, 3}, 4, {0, 3, 6, 8}, {3, 3, 2, 2}},
                        Case{Shape{2, 2, 2}, 3, {0, 1, 2}, {1, 1, 0}},
                        Case{Shape{6}, 1, {0}, {6}}}) {
    const Tensor x = Random(c.shape);
    for (int64_t index = 0; index < c.parts; ++index) {
      SCOPED_TRACE(c.shape.ToString() + " part " + std::to_string(index));
      StatusOr<KernelRun> part =
          RunKernel({"EvenSplitPart", {{"index", index}, {"parts", c.parts}}, {x}});
      ASSERT_TRUE(part.ok()) << part.status();
      ASSERT_TRUE(part->status.ok()) << part->status;
      std::vector<int64_t> begin(c.shape.rank(), 0);
      std::vector<int64_t> size(c.shape.rank(), -1);
      begin[0] = c.begins[index];
      size[0] = c.sizes[index];
      StatusOr<KernelRun> slice = RunKernel({"Slice", {{"begin", begin}, {"size", size}}, {x}});
      ASSERT_TRUE(slice.ok()) << slice.status();
      EXPECT_TRUE(TensorsClose(slice->outputs[0], part->outputs[0], Tolerance{}));
      // Unknown input shapes: the rows are read at run time.
      StatusOr<KernelRun> unknown = RunKernel(
          {"EvenSplitPart", {{"index", index}, {"parts", c.parts}}, {x}}, true);
      ASSERT_TRUE(unknown.ok()) << unknown.status();
      EXPECT_TRUE(TensorsClose(slice->outputs[0], unknown->outputs[0], Tolerance{}));
    }
  }
  StatusOr<KernelRun> past_the_end = RunKernel(
      {"EvenSplitPart", {{"index", int64_t{3}}, {"parts", int64_t{3}}}, {Random(Shape{4})}});
  ASSERT_FALSE(past_the_end.ok());
  EXPECT_EQ(past_the_end.status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace actorflow
