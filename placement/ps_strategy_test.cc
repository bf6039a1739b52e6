#include "placement/ps_strategy.h"

#include <gtest/gtest.h>

namespace actorflow {
namespace {

TEST(PsStrategyTest, RoundRobinFollowsSortedNamesNotListOrder) {
  std::vector<VariableSize> vars = {{"w2", 4}, {"b", 400}, {"w1", 40}, {"a", 4}};
  auto a = AssignVariablesToPs(vars, 2, PsStrategy::kRoundRobin);
  ASSERT_TRUE(a.ok()) << a.status();
  // Sorted: a, b, w1, w2 -> tasks 0, 1, 0, 1.
  EXPECT_EQ(a->task_of.at("a"), 0);
  EXPECT_EQ(a->task_of.at("b"), 1);
  EXPECT_EQ(a->task_of.at("w1"), 0);
  EXPECT_EQ(a->task_of.at("w2"), 1);
  EXPECT_EQ(a->variables[0], (std::vector<std::string>{"a", "w1"}));
  EXPECT_EQ(a->bytes[0], 44);
  EXPECT_EQ(a->bytes[1], 404);

  std::vector<VariableSize> reversed(vars.rbegin(), vars.rend());
  auto b = AssignVariablesToPs(reversed, 2, PsStrategy::kRoundRobin);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->task_of, b->task_of);
}

TEST(PsStrategyTest, GreedyPutsTheLargestFirstOnTheLeastLoadedTask) {
  std::vector<VariableSize> vars = {
      {"small", 10}, {"big", 1000}, {"mid_a", 500}, {"mid_b", 500}, {"tiny", 1}};
  auto a = AssignVariablesToPs(vars, 2, PsStrategy::kGreedyBytes);
  ASSERT_TRUE(a.ok()) << a.status();
  // big -> 0 (1000); mid_a -> 1 (500); mid_b -> 1 (1000); small -> 0 (1010);
  // tiny -> 1 (1001).
  EXPECT_EQ(a->task_of.at("big"), 0);
  EXPECT_EQ(a->task_of.at("mid_a"), 1);
  EXPECT_EQ(a->task_of.at("mid_b"), 1);
  EXPECT_EQ(a->task_of.at("small"), 0);
  EXPECT_EQ(a->task_of.at("tiny"), 1);
  EXPECT_EQ(a->bytes, (std::vector<int64_t>{1010, 1001}));
}

TEST(PsStrategyTest, GreedyBalancesBetterThanRoundRobinOnSkewedSizes) {
  std::vector<VariableSize> vars = {{"a", 100}, {"b", 1}, {"c", 100}, {"d", 1}};
  auto rr = AssignVariablesToPs(vars, 2, PsStrategy::kRoundRobin);
  auto greedy = AssignVariablesToPs(vars, 2, PsStrategy::kGreedyBytes);
  ASSERT_TRUE(rr.ok() && greedy.ok());
  EXPECT_EQ(rr->bytes, (std::vector<int64_t>{200, 2}));
  EXPECT_EQ(greedy->bytes, (std::vector<int64_t>{101, 101}));
}

TEST(PsStrategyTest, MoreTasksThanVariablesLeavesTasksEmpty) {
  auto a = AssignVariablesToPs({{"only", 8}}, 3, PsStrategy::kGreedyBytes);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->task_of.at("only"), 0);
  EXPECT_TRUE(a->variables[1].empty());
  EXPECT_TRUE(a->variables[2].empty());
}

TEST(PsStrategyTest, BadInputIsNamed) {
  auto none = AssignVariablesToPs({{"w", 4}}, 0, PsStrategy::kRoundRobin);
  EXPECT_EQ(none.status().code(), Code::kInvalidArgument);
  auto twice = AssignVariablesToPs({{"w", 4}, {"w", 8}}, 1, PsStrategy::kRoundRobin);
  EXPECT_EQ(twice.status().code(), Code::kInvalidArgument);
  EXPECT_NE(twice.status().message().find("'w'"), std::string::npos);
  auto negative = AssignVariablesToPs({{"v", -1}}, 1, PsStrategy::kGreedyBytes);
  EXPECT_NE(negative.status().message().find("'v'"), std::string::npos);
}

TEST(PsStrategyTest, AssignsByBytesAsByVariableSizes) {
  auto greedy =
      AssignVariablesByBytes({{"a", 4}, {"b", 100}, {"c", 8}}, 2, PsStrategy::kGreedyBytes);
  ASSERT_TRUE(greedy.ok()) << greedy.status();
  EXPECT_EQ(*greedy, (std::map<std::string, int>{{"a", 1}, {"b", 0}, {"c", 1}}));
  auto none = AssignVariablesByBytes({{"w", 4}}, 0, PsStrategy::kRoundRobin);
  EXPECT_EQ(none.status().code(), Code::kInvalidArgument);
}

TEST(PsStrategyTest, ParsesStrategyNames) {
  PsStrategy s;
  ASSERT_TRUE(ParsePsStrategy("greedy_bytes", &s).ok());
  EXPECT_EQ(s, PsStrategy::kGreedyBytes);
  ASSERT_TRUE(ParsePsStrategy("round_robin", &s).ok());
  EXPECT_EQ(s, PsStrategy::kRoundRobin);
  EXPECT_EQ(ParsePsStrategy("random", &s).code(), Code::kInvalidArgument);
  EXPECT_EQ(PsDeviceName("ps", 1), "/job:ps/replica:0/task:1/device:CPU:0");
}

}  // namespace
}  // namespace actorflow
