// Shape keeps up to kInlineRank dimensions inline and longer ones on the heap; both
// must behave the same under copy, move, mutation and comparison.
#include "graph/shape.h"

#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace actorflow {
namespace {

using ::testing::ElementsAre;

std::vector<int64_t> Iota(int n) {
  std::vector<int64_t> dims;
  for (int i = 0; i < n; ++i) dims.push_back(i + 2);
  return dims;
}

class ShapeRankTest : public ::testing::TestWithParam<int> {};

TEST_P(ShapeRankTest, HoldsItsDimensionsAcrossCopiesMovesAndEdits) {
  const std::vector<int64_t> dims = Iota(GetParam());
  Shape original(dims);
  EXPECT_EQ(original.rank(), GetParam());
  EXPECT_EQ(original.dims(), dims);
  EXPECT_EQ(original.dims().ToVector(), dims);

  Shape copy = original;
  copy.set_dim(0, 99);  // the copy owns its dimensions
  EXPECT_EQ(original.dim(0), 2);
  EXPECT_EQ(copy.dim(0), 99);
  EXPECT_NE(copy, original);

  Shape moved = std::move(copy);
  EXPECT_EQ(moved.dim(0), 99);
  EXPECT_EQ(moved.rank(), GetParam());
  // NOLINTNEXTLINE(bugprone-use-after-move): a moved-from shape is a scalar.
  EXPECT_EQ(copy, Shape());
  EXPECT_EQ(copy.num_elements(), 1);
  copy = std::move(moved);
  EXPECT_EQ(copy.dim(0), 99);
  EXPECT_EQ(moved.rank(), 0);

  // Assignment across the inline/heap boundary in both directions.
  Shape other({7});
  other = original;
  EXPECT_EQ(other, original);
  other = Shape({5, 6});
  EXPECT_THAT(other.dims(), ElementsAre(5, 6));
  EXPECT_EQ(other.ToString(), "[5,6]");
  other = original;
  EXPECT_EQ(other.dims(), dims);

  int64_t product = 1;
  for (int64_t d : dims) product *= d;
  EXPECT_EQ(original.num_elements(), product);
  std::vector<int64_t> tail(original.dims().begin() + 1, original.dims().end());
  EXPECT_EQ(tail, std::vector<int64_t>(dims.begin() + 1, dims.end()));
}

INSTANTIATE_TEST_SUITE_P(InlineAndHeap, ShapeRankTest,
                         ::testing::Values(1, Shape::kInlineRank, Shape::kInlineRank + 1, 9));

TEST(ShapeTest, EqualityComparesRankDimensionsAndKnownness) {
  EXPECT_EQ(Shape({2, 3}), Shape({2, 3}));
  EXPECT_NE(Shape({2, 3}), Shape({3, 2}));
  EXPECT_NE(Shape({2, 3}), Shape({2, 3, 1}));
  EXPECT_NE(Shape(), Shape::UnknownRank());
  EXPECT_EQ(Shape(Iota(6)), Shape(Iota(6)));
  EXPECT_NE(Shape(Iota(6)), Shape(Iota(5)));
}

TEST(ShapeTest, MergeAndCompatibilityFillUnknownDimensions) {
  const Shape partial({Shape::kUnknownDim, 4});
  EXPECT_TRUE(partial.IsCompatibleWith(Shape({8, 4})));
  EXPECT_FALSE(partial.IsCompatibleWith(Shape({8, 5})));
  EXPECT_EQ(partial.MergeWith(Shape({8, 4})), Shape({8, 4}));
  EXPECT_EQ(partial.ToString(), "[?,4]");
  std::vector<int64_t> long_dims = Iota(7);
  long_dims[6] = Shape::kUnknownDim;
  const Shape long_partial(long_dims);
  EXPECT_FALSE(long_partial.IsFullyDefined());
  EXPECT_EQ(long_partial.MergeWith(Shape(Iota(7))), Shape(Iota(7)));
}

}  // namespace
}  // namespace actorflow
