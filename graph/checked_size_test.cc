// The overflow-checked size helpers: Shape::CheckedNumElements, CheckedMul/Add,
// CheckedByteSize and CheckRepresentableShape, on ordinary, zero, negative, unknown
// and overflowing dims.
#include "graph/checked_size.h"

#include <cstdint>
#include <limits>

#include "gmock/gmock.h"
#include "graph/status_testing.h"
#include "gtest/gtest.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t k2To62 = int64_t{1} << 62;

TEST(CheckedMulTest, MultipliesOrReportsOverflow) {
  int64_t out = 0;
  EXPECT_TRUE(CheckedMul(3, 7, &out));
  EXPECT_EQ(out, 21);
  EXPECT_TRUE(CheckedMul(kMax, 1, &out));
  EXPECT_EQ(out, kMax);
  EXPECT_FALSE(CheckedMul(k2To62, 2, &out));
  EXPECT_FALSE(CheckedMul(int64_t{1} << 32, int64_t{1} << 32, &out));
  EXPECT_TRUE(CheckedAdd(kMax - 1, 1, &out));
  EXPECT_EQ(out, kMax);
  EXPECT_FALSE(CheckedAdd(kMax, 1, &out));
}

TEST(CheckedNumElementsTest, CountsOrdinaryShapesAndScalars) {
  ASSERT_OK_AND_ASSIGN(int64_t n, Shape({2, 3, 4}).CheckedNumElements());
  EXPECT_EQ(n, 24);
  ASSERT_OK_AND_ASSIGN(int64_t scalar, Shape().CheckedNumElements());
  EXPECT_EQ(scalar, 1);
  ASSERT_OK_AND_ASSIGN(int64_t largest, Shape({kMax}).CheckedNumElements());
  EXPECT_EQ(largest, kMax);
}

TEST(CheckedNumElementsTest, AZeroDimMakesZeroEvenAfterHugeDims) {
  ASSERT_OK_AND_ASSIGN(int64_t n, Shape({k2To62, k2To62, 0}).CheckedNumElements());
  EXPECT_EQ(n, 0);
  ASSERT_OK_AND_ASSIGN(int64_t m, Shape({0, kMax, kMax}).CheckedNumElements());
  EXPECT_EQ(m, 0);
}

TEST(CheckedNumElementsTest, OverflowIsInvalidArgumentNotAWrappedCount) {
  // (2^62 + 1) * 4 wraps around to 4: the count an unchecked product would give.
  const Shape wraps({k2To62 + 1, 4});
  EXPECT_EQ(wraps.num_elements(), 4);
  Status s = wraps.CheckedNumElements().status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("more elements than an int64 can count")) << s;
  EXPECT_THAT(s.message(), HasSubstr("[4611686018427387905,4]")) << s;
}

TEST(CheckedNumElementsTest, NegativeUnknownAndUnknownRankAreRefused) {
  Status negative = Shape({2, -5}).CheckedNumElements().status();
  EXPECT_EQ(negative.code(), Code::kInvalidArgument);
  EXPECT_THAT(negative.message(), HasSubstr("negative dimension -5"));
  Status unknown = Shape({-1, 2}).CheckedNumElements().status();
  EXPECT_EQ(unknown.code(), Code::kInvalidArgument);
  EXPECT_THAT(unknown.message(), HasSubstr("unknown dimension"));
  EXPECT_EQ(Shape::UnknownRank().CheckedNumElements().status().code(), Code::kInvalidArgument);
}

TEST(CheckedByteSizeTest, CountsBytesAndRefusesByteOverflow) {
  ASSERT_OK_AND_ASSIGN(int64_t bytes, CheckedByteSize(DType::kFloat64, Shape({2, 3})));
  EXPECT_EQ(bytes, 48);
  ASSERT_OK_AND_ASSIGN(int64_t empty, CheckedByteSize(DType::kFloat32, Shape({k2To62, 0})));
  EXPECT_EQ(empty, 0);
  // 2^61 elements fit in an int64, their 8-byte values do not.
  Status s = CheckedByteSize(DType::kFloat64, Shape({int64_t{1} << 61})).status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("bytes of float64")) << s;
  EXPECT_OK(CheckedByteSize(DType::kBool, Shape({int64_t{1} << 61})).status());
}

TEST(CheckRepresentableShapeTest, AcceptsPartialShapesWithinRange) {
  EXPECT_OK(CheckRepresentableShape(Shape({-1, 3}), DType::kFloat32));
  EXPECT_OK(CheckRepresentableShape(Shape::UnknownRank(), DType::kFloat32));
  EXPECT_OK(CheckRepresentableShape(Shape({-1, k2To62, k2To62, 0}), DType::kFloat32));
  EXPECT_OK(CheckRepresentableShape(Shape(), DType::kInt64));
}

TEST(CheckRepresentableShapeTest, RefusesNegativeDimsAndKnownDimsThatOverflow) {
  Status negative = CheckRepresentableShape(Shape({-1, -2}), DType::kFloat32);
  EXPECT_EQ(negative.code(), Code::kInvalidArgument);
  EXPECT_THAT(negative.message(), HasSubstr("negative dimension -2"));
  Status elements = CheckRepresentableShape(Shape({-1, k2To62, 4}), DType::kBool);
  EXPECT_EQ(elements.code(), Code::kInvalidArgument);
  EXPECT_THAT(elements.message(), HasSubstr("more elements"));
  Status bytes = CheckRepresentableShape(Shape({-1, k2To62}), DType::kFloat32);
  EXPECT_EQ(bytes.code(), Code::kInvalidArgument);
  EXPECT_THAT(bytes.message(), HasSubstr("bytes of float32"));
}

TEST(CheckRankLimitTest, RefusesMoreThanKMaxRankDimsGivingTheRankNotTheShape) {
  const Shape at_limit(std::vector<int64_t>(Shape::kMaxRank, 1));
  EXPECT_OK(at_limit.CheckedNumElements().status());
  EXPECT_OK(CheckRepresentableShape(at_limit, DType::kFloat32));
  const Shape deep(std::vector<int64_t>(100000, 1));
  for (const Status& s : {deep.CheckedNumElements().status(),
                          CheckedByteSize(DType::kFloat32, deep).status(),
                          CheckRepresentableShape(deep, DType::kFloat32)}) {
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("a shape of rank 100000 has more dimensions than a tensor "
                                       "may have (at most 254)"));
    EXPECT_LT(s.message().size(), 200u);
  }
}

}  // namespace
}  // namespace actorflow
