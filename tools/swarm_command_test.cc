// The swarm: scenarios are pure functions of their seed, each run is judged by the
// invariants, and a small swarm (the one CI runs) finds no hang and no violation.
#include "tools/swarm_command.h"

#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/status_testing.h"

namespace actorflow {
namespace cli {
namespace {

using ::testing::HasSubstr;

TEST(SwarmCommandTest, AScenarioIsAPureFunctionOfItsSeed) {
  EXPECT_EQ(MakeSwarmScenario(17).Describe(), MakeSwarmScenario(17).Describe());
  EXPECT_NE(MakeSwarmScenario(17).Describe(), MakeSwarmScenario(18).Describe());
  // Over many seeds every mode and fault kind comes up.
  std::string all;
  for (uint64_t seed = 1; seed <= 200; ++seed) all += MakeSwarmScenario(seed).Describe() + "\n";
  for (const char* what : {"sync", "async", "ssp:", "allreduce", "\"drop\"", "\"delay\"", "\"duplicate\"",
                           "\"reorder\"", "\"partition\"", "\"kill\"", "\"restart\"", "pareto",
                           "lognormal", "slow:"}) {
    EXPECT_THAT(all, HasSubstr(what));
  }
}

TEST(SwarmCommandTest, AReplayedScenarioGivesTheSameRun) {
  for (uint64_t seed : {3, 11}) {
    ASSERT_OK_AND_ASSIGN(SwarmRunResult first, RunSwarmScenario(MakeSwarmScenario(seed)));
    ASSERT_OK_AND_ASSIGN(SwarmRunResult again, RunSwarmScenario(MakeSwarmScenario(seed)));
    EXPECT_EQ(first.event_log_hash, again.event_log_hash);
    EXPECT_EQ(first.weights_hash, again.weights_hash);
    EXPECT_EQ(first.outcome, again.outcome);
    EXPECT_GT(first.messages, 0);
  }
}

TEST(SwarmCommandTest, ASmallSwarmFindsNoHangAndNoViolation) {
  SwarmCommandOptions options;
  options.runs = 40;
  options.json = true;
  std::ostringstream out;
  const Status status = Swarm(options, out);
  EXPECT_OK(status) << out.str();
  EXPECT_THAT(out.str(), HasSubstr("\"hung\":0"));
  EXPECT_THAT(out.str(), HasSubstr("\"violated\":0"));
}

TEST(SwarmCommandTest, NoRunsIsRefused) {
  SwarmCommandOptions options;
  options.runs = 0;
  std::ostringstream out;
  EXPECT_EQ(Swarm(options, out).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
