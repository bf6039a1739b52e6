#include "kernels/cpu/small_vector.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace actorflow {
namespace cpu {
namespace {

std::vector<int64_t> Values(const SmallVector<int64_t, 4>& v) {
  return std::vector<int64_t>(v.begin(), v.end());
}

TEST(SmallVectorTest, KeepsItsValuesWhenItOutgrowsItsInlineRoom) {
  SmallVector<int64_t, 4> v;
  EXPECT_TRUE(v.empty());
  for (int64_t i = 0; i < 10; ++i) v.push_back(i * i);
  ASSERT_EQ(v.size(), 10u);
  EXPECT_EQ(Values(v), (std::vector<int64_t>{0, 1, 4, 9, 16, 25, 36, 49, 64, 81}));
  v.back() = -1;
  EXPECT_EQ(v[9], -1);
}

TEST(SmallVectorTest, CopiesAreIndependentInlineAndOnTheHeap) {
  SmallVector<int64_t, 4> small(3, 7);
  SmallVector<int64_t, 4> small_copy = small;
  small_copy[0] = 1;
  EXPECT_EQ(Values(small), (std::vector<int64_t>{7, 7, 7}));
  EXPECT_EQ(Values(small_copy), (std::vector<int64_t>{1, 7, 7}));

  SmallVector<int64_t, 4> big(6, 2);
  SmallVector<int64_t, 4> big_copy = big;
  big_copy[5] = 3;
  big_copy.push_back(4);
  EXPECT_EQ(Values(big), (std::vector<int64_t>{2, 2, 2, 2, 2, 2}));
  EXPECT_EQ(Values(big_copy), (std::vector<int64_t>{2, 2, 2, 2, 2, 3, 4}));
}

TEST(SmallVectorTest, AssignReplacesTheContentsWhateverTheirSize) {
  SmallVector<int64_t, 4> v(8, 1);
  v.assign(2, 5);
  EXPECT_EQ(Values(v), (std::vector<int64_t>{5, 5}));
  v.push_back(6);
  EXPECT_EQ(Values(v), (std::vector<int64_t>{5, 5, 6}));
  v.assign(0, 0);
  EXPECT_TRUE(v.empty());
  v.push_back(9);
  EXPECT_EQ(Values(v), (std::vector<int64_t>{9}));
}

}  // namespace
}  // namespace cpu
}  // namespace actorflow
