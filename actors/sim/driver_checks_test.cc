#include "actors/sim/driver_checks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace actorflow {
namespace {

using ::testing::HasSubstr;

DriverStepChecks Checks() {
  // 100 us of links per kilobyte, round trip.
  return DriverStepChecks([](int64_t bytes) { return 100.0 * (bytes / 1024 + 1); });
}

TEST(DriverStepChecksTest, AStepPastItsDeadlineAndTheLinksIsLate) {
  DriverStepChecks checks = Checks();
  checks.Step("/job:worker/task:0", 1.0, 1.0 + 0.010 + 0.0001, 10, 100);  // exactly the bound
  checks.Step("/job:worker/task:0", 2.0, 2.5, 0, 100);                    // no deadline
  EXPECT_TRUE(checks.Results()[0].violations.empty());
  checks.Step("/job:worker/task:1", 3.0, 3.0 + 0.010 + 0.0003, 10, 100);
  EXPECT_EQ(checks.steps(), 3);
  const std::vector<SimInvariantResult> results = checks.Results();
  EXPECT_EQ(results[0].name, "steps_end_by_deadline");
  ASSERT_EQ(results[0].violations.size(), 1u);
  EXPECT_THAT(results[0].violations[0], HasSubstr("/job:worker/task:1"));
}

TEST(DriverStepChecksTest, AGlobalStepThatGoesBackForOneTaskIsARegression) {
  DriverStepChecks checks = Checks();
  checks.GlobalStep("/job:worker/task:0", 5, 1);
  checks.GlobalStep("/job:worker/task:1", 3, 2);  // another task: its own sequence
  checks.GlobalStep("/job:worker/task:0", 5, 3);
  EXPECT_TRUE(checks.Results()[1].violations.empty());
  checks.GlobalStep("/job:worker/task:0", 0, 4);  // a restarted chief re-initialized
  const std::vector<SimInvariantResult> results = checks.Results();
  EXPECT_EQ(results[1].name, "global_step_monotone");
  ASSERT_EQ(results[1].violations.size(), 1u);
  EXPECT_THAT(results[1].violations[0], HasSubstr("from 5 to 0"));
  EXPECT_EQ(checks.global_step_reads(), 4);
}

}  // namespace
}  // namespace actorflow
