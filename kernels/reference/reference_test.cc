// The oracle checked by hand: literal expectations for the reference kernels, worked
// out on paper, for the ops whose index arithmetic is easiest to get wrong.
#include "kernels/reference/reference.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace actorflow {
namespace {

std::vector<Tensor> Compute(const std::string& op, const AttrMap& attrs,
                            const std::vector<Tensor>& inputs) {
  auto out = ReferenceCompute(op, attrs, inputs, {});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::vector<Tensor>{};
}

template <typename T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.NumElements());
}

TEST(ReferenceTest, AddBroadcastsAColumnAgainstARow) {
  auto out = Compute("Add", {}, {Tensor::FromVector<float>({10, 20}, Shape{2, 1}),
                                 Tensor::FromVector<float>({1, 2, 3}, Shape{1, 3})});
  ASSERT_EQ(out[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{11, 12, 13, 21, 22, 23}));
}

TEST(ReferenceTest, IntegerDivTruncatesAndRejectsZero) {
  auto out = Compute("Div", {}, {Tensor::FromVector<int32_t>({7, -7, 7, -7}),
                                 Tensor::FromVector<int32_t>({2, 2, -2, -2})});
  EXPECT_EQ(Values<int32_t>(out[0]), (std::vector<int32_t>{3, -3, -3, 3}));
  auto zero = ReferenceCompute("Div", {}, {Tensor::Scalar<int64_t>(1), Tensor::Scalar<int64_t>(0)}, {});
  EXPECT_EQ(zero.status().code(), Code::kInvalidArgument);
}

TEST(ReferenceTest, SumOverSeveralAxesWithKeepDims) {
  // x[i,j,k] = 100i + 10j + k, shape [2,2,3]; summing axes 0 and 2 leaves j.
  std::vector<double> x;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) x.push_back(100 * i + 10 * j + k);
  auto out = Compute("Sum", {{"axis", std::vector<int64_t>{0, -1}}, {"keep_dims", true}},
                     {Tensor::FromVector<double>(x, Shape{2, 2, 3})});
  ASSERT_EQ(out[0].shape(), (Shape{1, 2, 1}));
  EXPECT_EQ(Values<double>(out[0]), (std::vector<double>{306, 366}));
}

TEST(ReferenceTest, TransposeMovesEachAxis) {
  // [2,3] -> [3,2].
  auto out = Compute("Transpose", {{"perm", std::vector<int64_t>{1, 0}}},
                     {Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, Shape{2, 3})});
  ASSERT_EQ(out[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(Values<int32_t>(out[0]), (std::vector<int32_t>{1, 4, 2, 5, 3, 6}));
}

TEST(ReferenceTest, ConcatAlongTheLastAxisSkipsEmptyInputs) {
  auto out = Compute("ConcatV2", {{"axis", int64_t{-1}}},
                     {Tensor::FromVector<int64_t>({1, 2}, Shape{2, 1}),
                      Tensor(DType::kInt64, Shape{2, 0}),
                      Tensor::FromVector<int64_t>({3, 4, 5, 6}, Shape{2, 2})});
  ASSERT_EQ(out[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(Values<int64_t>(out[0]), (std::vector<int64_t>{1, 3, 4, 2, 5, 6}));
}

TEST(ReferenceTest, SliceWithSizeMinusOneRunsToTheEnd) {
  auto out = Compute("Slice", {{"begin", std::vector<int64_t>{1, 1}}, {"size", std::vector<int64_t>{1, -1}}},
                     {Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3})});
  ASSERT_EQ(out[0].shape(), (Shape{1, 2}));
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{5, 6}));
}

TEST(ReferenceTest, MatMulWithTransposedA) {
  // a^T = [[1,2],[3,4]] stored as a = [[1,3],[2,4]]; b = identity.
  auto out = Compute("MatMul", {{"transpose_a", true}, {"transpose_b", false}},
                     {Tensor::FromVector<double>({1, 3, 2, 4}, Shape{2, 2}),
                      Tensor::FromVector<double>({1, 0, 0, 1}, Shape{2, 2})});
  EXPECT_EQ(Values<double>(out[0]), (std::vector<double>{1, 2, 3, 4}));
}

TEST(ReferenceTest, SparseCrossEntropyOfUniformLogitsIsLogC) {
  auto out = Compute("SparseSoftmaxCrossEntropyWithLogits", {},
                     {Tensor(DType::kFloat64, Shape{1, 4}), Tensor::FromVector<int32_t>({2})});
  EXPECT_NEAR(out[0].data<double>()[0], std::log(4.0), 1e-15);
  EXPECT_EQ(Values<double>(out[1]), (std::vector<double>{0.25, 0.25, -0.75, 0.25}));
}

TEST(ReferenceTest, CastTruncatesTowardZero) {
  auto out = Compute("Cast", {{"dtype", DType::kInt32}},
                     {Tensor::FromVector<float>({-2.7f, 2.7f, -0.5f})});
  EXPECT_EQ(Values<int32_t>(out[0]), (std::vector<int32_t>{-2, 2, 0}));
}

TEST(ReferenceTest, DisagreeingOutputDTypeIsAnInternalError) {
  auto out = ReferenceCompute("Neg", {}, {Tensor::Scalar<float>(1)}, {DType::kFloat64});
  EXPECT_EQ(out.status().code(), Code::kInternal);
}

}  // namespace
}  // namespace actorflow
