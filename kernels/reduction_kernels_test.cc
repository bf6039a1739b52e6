// CPU reduction kernels (Sum, Mean, Max, Min, ArgMax) against the reference kernels:
// every axis, negative axes, several axes, keep_dims, all axes, empty reductions.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "graph/tensor.h"
#include "kernels/kernels_test_util.h"

namespace actorflow {
namespace {

// An absent "axis" attr is written as std::nullopt.
struct AxisCase {
  Shape shape;
  std::optional<AttrValue> axis;
};

const std::vector<AxisCase> kAxisCases = {
    {Shape{2, 3, 4}, std::nullopt},  // all axes
    {Shape{2, 3, 4}, AttrValue(0)},
    {Shape{2, 3, 4}, AttrValue(1)},
    {Shape{2, 3, 4}, AttrValue(2)},
    {Shape{2, 3, 4}, AttrValue(-1)},
    {Shape{2, 3, 4}, AttrValue(-3)},
    {Shape{2, 3, 4}, AttrValue(std::vector<int64_t>{0, 2})},
    {Shape{2, 3, 4}, AttrValue(std::vector<int64_t>{-1, 0})},
    {Shape{2, 3, 4}, AttrValue(std::vector<int64_t>{1, 2})},
    {Shape{2, 3, 4}, AttrValue(std::vector<int64_t>{0, 1, 2})},
    {Shape{2, 3, 4}, AttrValue(std::vector<int64_t>{})},  // reduce nothing
    {Shape{}, std::nullopt},                               // a scalar
    {Shape{}, AttrValue(std::vector<int64_t>{})},
    {Shape{7}, AttrValue(0)},
    {Shape{5, 33}, AttrValue(1)},
    {Shape{33, 5}, AttrValue(0)},
    {Shape{3, 1, 4}, AttrValue(1)},
    {Shape{0, 3}, AttrValue(1)},  // no output elements
    {Shape{4, 2, 3, 2}, AttrValue(std::vector<int64_t>{1, 3})},
};

// Reductions over no elements: Max -> lowest, Min -> highest, Sum -> 0, Mean -> NaN.
const std::vector<AxisCase> kEmptyReductionCases = {
    {Shape{0, 3}, AttrValue(0)},
    {Shape{0, 3}, std::nullopt},
    {Shape{2, 0}, AttrValue(-1)},
};

AttrMap ReductionAttrs(const AxisCase& c, bool keep_dims) {
  AttrMap attrs = {{"keep_dims", keep_dims}};
  if (c.axis) attrs["axis"] = *c.axis;
  return attrs;
}

class ReductionKernelTest : public ::testing::TestWithParam<OpDType> {};

TEST_P(ReductionKernelTest, MatchesReferenceOverAxes) {
  const auto& [op, dtype] = GetParam();
  RandomTensors random(7);
  for (const AxisCase& c : kAxisCases) {
    for (bool keep_dims : {false, true}) {
      EXPECT_TRUE(MatchesReference(
          {op, ReductionAttrs(c, keep_dims), {random.Uniform(dtype, c.shape, -9, 9)}}));
    }
  }
}

TEST_P(ReductionKernelTest, EmptyReductionGivesTheIdentity) {
  const auto& [op, dtype] = GetParam();
  if (op == "Mean" && IsInteger(dtype)) GTEST_SKIP() << "integer mean of nothing is undefined";
  for (const AxisCase& c : kEmptyReductionCases) {
    for (bool keep_dims : {false, true}) {
      EXPECT_TRUE(MatchesReference({op, ReductionAttrs(c, keep_dims), {Tensor(dtype, c.shape)}}));
    }
  }
}

TEST_P(ReductionKernelTest, DuplicateOrOutOfRangeAxesAreInvalid) {
  const auto& [op, dtype] = GetParam();
  const Tensor x(dtype, Shape{2, 3});
  EXPECT_TRUE(FailsWith({op, {{"axis", std::vector<int64_t>{1, -1}}}, {x}},
                        Code::kInvalidArgument));
  EXPECT_TRUE(FailsWith({op, {{"axis", 2}}, {x}}, Code::kInvalidArgument));
  EXPECT_TRUE(FailsWith({op, {{"axis", -3}}, {x}}, Code::kInvalidArgument));
}

INSTANTIATE_TEST_SUITE_P(All, ReductionKernelTest,
                         ::testing::ValuesIn(Combine({"Sum", "Mean", "Max", "Min"},
                                                     kNumericDTypes)),
                         OpDTypeName);

TEST(ReductionKernelTest, IntegerMeanTruncatesTowardZero) {
  for (DType dtype : kIntDTypes) {
    KernelTestCase c{"Mean", {{"axis", 1}}, {MakeTensor(dtype, Shape{3, 2}, {1, 2, -1, -2, 5, 5})}};
    EXPECT_TRUE(MatchesReference(c));
    auto run = RunKernel(c);
    ASSERT_TRUE(run.ok() && run->status.ok());
    EXPECT_TRUE(TensorsClose(MakeTensor(dtype, Shape{3}, {1, -1, 5}), run->outputs[0], {}));
  }
}

TEST(ReductionKernelTest, MaxOfNothingIsLowestAndMeanOfNothingIsNaN) {
  auto max = RunKernel({"Max", {{"axis", 0}}, {Tensor(DType::kInt32, Shape{0, 2})}});
  ASSERT_TRUE(max.ok() && max->status.ok());
  EXPECT_TRUE(TensorsClose(MakeTensor(DType::kInt32, Shape{2}, {-2147483648.0, -2147483648.0}),
                           max->outputs[0], {}));
  auto mean = RunKernel({"Mean", {}, {Tensor(DType::kFloat32, Shape{0})}});
  ASSERT_TRUE(mean.ok() && mean->status.ok());
  EXPECT_TRUE(std::isnan(mean->outputs[0].ElementAsDouble(0)));
}

// ---- ArgMax ----------------------------------------------------------------------

class ArgMaxKernelTest : public ::testing::TestWithParam<OpDType> {};

TEST_P(ArgMaxKernelTest, MatchesReferenceOnEveryAxis) {
  const DType dtype = GetParam().dtype;
  RandomTensors random(11);
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {Shape{7}, 0},     {Shape{2, 3, 4}, 0},  {Shape{2, 3, 4}, 1}, {Shape{2, 3, 4}, 2},
      {Shape{2, 3, 4}, -1}, {Shape{2, 3, 4}, -3}, {Shape{5, 33}, 1},  {Shape{0, 3}, 1},
      {Shape{1, 1}, 0}};
  for (const auto& [shape, axis] : cases) {
    // Small whole numbers make ties common: the first index must win.
    EXPECT_TRUE(MatchesReference({"ArgMax", {{"axis", axis}}, {random.Uniform(dtype, shape, -3, 3)}}));
    EXPECT_TRUE(MatchesReference({"ArgMax", {{"axis", axis}}, {random.Uniform(dtype, shape, -1, 1)}}));
  }
}

INSTANTIATE_TEST_SUITE_P(All, ArgMaxKernelTest,
                         ::testing::ValuesIn(Combine({"ArgMax"}, kNumericDTypes)), OpDTypeName);

TEST(ArgMaxKernelTest, TiesGiveTheFirstIndexAndTheDefaultAxisIsZero) {
  for (DType dtype : kNumericDTypes) {
    auto run = RunKernel({"ArgMax", {}, {MakeTensor(dtype, Shape{4, 2}, {1, 9, 3, 9, 3, 0, 2, 9})}});
    ASSERT_TRUE(run.ok() && run->status.ok());
    EXPECT_TRUE(TensorsClose(MakeTensor(DType::kInt64, Shape{2}, {1, 0}), run->outputs[0], {}));
  }
}

TEST(ArgMaxKernelTest, OutOfRangeAxisIsInvalid) {
  EXPECT_TRUE(FailsWith({"ArgMax", {{"axis", 2}}, {Tensor(DType::kFloat32, Shape{2, 3})}},
                        Code::kInvalidArgument));
}

}  // namespace
}  // namespace actorflow
