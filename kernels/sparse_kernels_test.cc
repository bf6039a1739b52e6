// The stateless sparse kernels (Gather, Unique, UnsortedSegmentSum) against the
// reference kernels for every dtype they take, the errors that name an id outside its
// table, and numeric gradient checks of Gather and UnsortedSegmentSum (Gradients()
// makes Gather's row gradient dense, so the check covers the sparse rule too).
#include <string>
#include <vector>

#include "graph/ops.h"
#include "graph/sparse_ops.h"
#include "gtest/gtest.h"
#include "kernels/gradient_check_util.h"
#include "kernels/kernels_test_util.h"

namespace actorflow {
namespace {

Tensor Ids(DType dtype, const Shape& shape, const std::vector<double>& values) {
  return MakeTensor(dtype, shape, values);
}

class GatherKernelTest : public ::testing::TestWithParam<DType> {
 protected:
  RandomTensors random_{11};
};

INSTANTIATE_TEST_SUITE_P(AllDTypes, GatherKernelTest, ::testing::ValuesIn(kAllDTypes),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

TEST_P(GatherKernelTest, MatchesReferenceForIdShapesRepeatsAndEmptyBatches) {
  for (DType index : kIntDTypes) {
    const Tensor table = random_.Uniform(GetParam(), Shape{5, 3}, -9, 9);
    EXPECT_TRUE(MatchesReference({"Gather", {}, {table, Ids(index, {4}, {4, 0, 4, 2})}}));
    EXPECT_TRUE(MatchesReference({"Gather", {}, {table, Ids(index, {}, {3})}}));
    EXPECT_TRUE(MatchesReference({"Gather", {}, {table, Ids(index, {2, 3}, {0, 1, 2, 3, 4, 0})}}));
    EXPECT_TRUE(MatchesReference({"Gather", {}, {table, Ids(index, {0}, {})}}));
    EXPECT_TRUE(MatchesReference({"Gather", {}, {table, Ids(index, {3}, {1, 1, 1})}}));
    const Tensor vector = random_.Uniform(GetParam(), Shape{6}, -9, 9);
    EXPECT_TRUE(MatchesReference({"Gather", {}, {vector, Ids(index, {3}, {5, 0, 2})}}));
    const Tensor cube = random_.Uniform(GetParam(), Shape{3, 2, 2}, -9, 9);
    EXPECT_TRUE(MatchesReference({"Gather", {}, {cube, Ids(index, {2}, {2, 0})}}));
  }
}

TEST(GatherKernelErrorTest, AnIdOutsideTheTableIsNamed) {
  const Tensor table = MakeTensor(DType::kFloat32, {4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_TRUE(FailsWith({"Gather", {}, {table, Ids(DType::kInt32, {3}, {0, 4, 1})}},
                        Code::kInvalidArgument, "indices[1] = 4 is not in [0, 4)"));
  EXPECT_TRUE(FailsWith({"Gather", {}, {table, Ids(DType::kInt64, {2}, {1, -1})}},
                        Code::kInvalidArgument, "indices[1] = -1 is not in [0, 4)"));
}

TEST(UniqueKernelTest, MatchesReference) {
  for (DType dtype : kIntDTypes) {
    for (DType out_idx : kIntDTypes) {
      const AttrMap attrs = {{"out_idx", out_idx}};
      EXPECT_TRUE(MatchesReference({"Unique", attrs, {Ids(dtype, {7}, {5, 3, 5, 9, 3, 3, 0})}}));
      EXPECT_TRUE(MatchesReference({"Unique", attrs, {Ids(dtype, {4}, {2, 2, 2, 2})}}));
      EXPECT_TRUE(MatchesReference({"Unique", attrs, {Ids(dtype, {0}, {})}}));
      EXPECT_TRUE(MatchesReference({"Unique", attrs, {Ids(dtype, {3}, {-4, 100000, -4})}}));
    }
  }
}

class UnsortedSegmentSumKernelTest : public ::testing::TestWithParam<DType> {
 protected:
  RandomTensors random_{12};
};

INSTANTIATE_TEST_SUITE_P(NumericDTypes, UnsortedSegmentSumKernelTest,
                         ::testing::ValuesIn(kNumericDTypes),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

TEST_P(UnsortedSegmentSumKernelTest, MatchesReference) {
  const DType dtype = GetParam();
  for (DType index : kIntDTypes) {
    const Tensor rows = random_.Uniform(dtype, Shape{6, 3}, -9, 9);
    const Tensor four = MakeTensor(index, {}, {4});
    // num_segments as a Const: inference knows the output's first dimension.
    EXPECT_TRUE(MatchesReference(
        {"UnsortedSegmentSum", {}, {rows, Ids(index, {6}, {3, 0, 3, 3, 1, 0}), four}, {2}}));
    EXPECT_TRUE(MatchesReference(
        {"UnsortedSegmentSum", {}, {rows, Ids(index, {6}, {3, 0, 3, 3, 1, 0}), four}}));
    const Tensor grid = random_.Uniform(dtype, Shape{2, 3, 2}, -9, 9);
    EXPECT_TRUE(MatchesReference(
        {"UnsortedSegmentSum", {}, {grid, Ids(index, {2, 3}, {1, 1, 0, 2, 1, 0}), four}}));
    const Tensor empty = random_.Uniform(dtype, Shape{0, 3}, -9, 9);
    EXPECT_TRUE(MatchesReference(
        {"UnsortedSegmentSum", {}, {empty, Ids(index, {0}, {}), MakeTensor(index, {}, {0})}}));
  }
}

TEST(UnsortedSegmentSumKernelErrorTest, AnIdOutsideTheSegmentsIsNamed) {
  const Tensor rows = MakeTensor(DType::kFloat32, {3, 1}, {1, 2, 3});
  EXPECT_TRUE(FailsWith({"UnsortedSegmentSum", {},
                         {rows, Ids(DType::kInt32, {3}, {0, 1, 2}), MakeTensor(DType::kInt32, {}, {2})}},
                        Code::kInvalidArgument, "segment_ids[2] = 2 is not in [0, 2)"));
  EXPECT_TRUE(FailsWith({"UnsortedSegmentSum", {},
                         {rows, Ids(DType::kInt64, {3}, {0, -3, 1}), MakeTensor(DType::kInt64, {}, {2})}},
                        Code::kInvalidArgument, "segment_ids[1] = -3"));
}

TEST(DynamicStitchKernelTest, MatchesReferenceForEveryDTypeAndIdShape) {
  RandomTensors random(13);
  for (DType dtype : kAllDTypes) {
    for (DType index : kIntDTypes) {
      EXPECT_TRUE(MatchesReference(
          {"DynamicStitch", {},
           {Ids(index, {2}, {0, 3}), Ids(index, {3}, {1, 2, 4}),
            random.Uniform(dtype, Shape{2, 2}, -9, 9), random.Uniform(dtype, Shape{3, 2}, -9, 9)}}));
      // Repeated ids (the later input wins), a gap (zeros), grids of ids.
      EXPECT_TRUE(MatchesReference(
          {"DynamicStitch", {},
           {Ids(index, {2, 2}, {0, 5, 2, 2}), Ids(index, {1}, {0}),
            random.Uniform(dtype, Shape{2, 2, 3}, -9, 9), random.Uniform(dtype, Shape{1, 3}, -9, 9)}}));
      EXPECT_TRUE(MatchesReference(
          {"DynamicStitch", {}, {Ids(index, {0}, {}), random.Uniform(dtype, Shape{0, 4}, -9, 9)}}));
    }
  }
  EXPECT_TRUE(FailsWith({"DynamicStitch", {},
                         {Ids(DType::kInt32, {2}, {0, -2}), MakeTensor(DType::kFloat32, {2}, {1, 2})}},
                        Code::kInvalidArgument, "indices 0[1] = -2 is negative"));
}

TEST(PartitionRowIdsKernelTest, MatchesReferenceForModAndDiv) {
  for (DType index : kIntDTypes) {
    const Tensor ids = Ids(index, {9}, {0, 9, 3, 4, 7, 3, 8, 1, 6});
    for (const char* strategy : {"mod", "div"}) {
      for (int64_t parts : {1, 3, 4, 10}) {
        const AttrMap attrs = {
            {"num_rows", int64_t{10}}, {"num_parts", parts}, {"strategy", std::string(strategy)}};
        EXPECT_TRUE(MatchesReference({"PartitionRowIds", attrs, {ids}}))
            << strategy << " into " << parts;
      }
    }
    const AttrMap attrs = {
        {"num_rows", int64_t{10}}, {"num_parts", int64_t{3}}, {"strategy", std::string("div")}};
    EXPECT_TRUE(FailsWith({"PartitionRowIds", attrs, {Ids(index, {2}, {3, 10})}},
                          Code::kInvalidArgument, "ids[1] = 10 is not in [0, 10)"));
  }
}

// --- Gradients -------------------------------------------------------------------

using gradient_check::GradientsMatch;
using gradient_check::Rng;
using gradient_check::ShapesOf;

TEST(SparseGradientCheckTest, GatherOfRowsRepeatedIdsAndIdGrids) {
  Rng rng(21);
  struct Case {
    Shape params;
    Tensor ids;
  };
  const std::vector<Case> cases = {
      {Shape{5, 3}, Tensor::FromVector<int32_t>({4, 0, 4, 2})},
      {Shape{5, 3}, Tensor::FromVector<int64_t>({1, 1, 1})},
      {Shape{4, 2, 2}, Tensor::FromVector<int32_t>({3, 0, 1, 0, 2, 2}, Shape{2, 3})},
      {Shape{6}, Tensor::FromVector<int64_t>({5, 0, 5})},
      {Shape{3, 2}, Tensor::Scalar<int32_t>(2)},
  };
  for (const Case& c : cases) {
    const std::vector<Tensor> inputs = {rng.Uniform(c.params)};
    EXPECT_TRUE(GradientsMatch("Gather " + ShapesOf(inputs) + " ids " + c.ids.DebugString(),
                               inputs, [&](const Scope& s, const std::vector<Output>& x) {
                                 return Gather(s, x[0], c.ids);
                               }));
  }
}

TEST(SparseGradientCheckTest, DynamicStitchOfRowsWithAGap) {
  Rng rng(23);
  const std::vector<Tensor> inputs = {rng.Uniform(Shape{2, 3}), rng.Uniform(Shape{3, 3})};
  EXPECT_TRUE(GradientsMatch("DynamicStitch " + ShapesOf(inputs), inputs,
                             [](const Scope& s, const std::vector<Output>& x) {
                               return DynamicStitch(
                                   s,
                                   {Const(s, Tensor::FromVector<int32_t>({0, 5})),
                                    Const(s, Tensor::FromVector<int32_t>({1, 3, 2}))},
                                   x);
                             }));
}

TEST(SparseGradientCheckTest, UnsortedSegmentSumOfRowsAndGrids) {
  Rng rng(22);
  std::vector<Tensor> inputs = {rng.Uniform(Shape{5, 2})};
  EXPECT_TRUE(GradientsMatch("UnsortedSegmentSum " + ShapesOf(inputs), inputs,
                             [](const Scope& s, const std::vector<Output>& x) {
                               return UnsortedSegmentSum(
                                   s, x[0], Tensor::FromVector<int32_t>({2, 0, 2, 3, 0}), 4);
                             }));
  inputs = {rng.Uniform(Shape{2, 3})};
  EXPECT_TRUE(GradientsMatch("UnsortedSegmentSum " + ShapesOf(inputs), inputs,
                             [](const Scope& s, const std::vector<Output>& x) {
                               return UnsortedSegmentSum(
                                   s, x[0],
                                   Tensor::FromVector<int64_t>({1, 0, 1, 1, 2, 0}, Shape{2, 3}),
                                   int64_t{3});
                             }));
}

}  // namespace
}  // namespace actorflow
