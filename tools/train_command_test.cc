// `actorflow train` through its C++ entry point, on the bundled Iris split: where the
// progress and the result go (stdout is the JSON line alone under --json), and the
// line that says how a cluster turns --steps into epochs.
#include "tools/train_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tools/train_cluster.h"

namespace actorflow {
namespace cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

int64_t LineCount(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

TrainCommandOptions ShortRun() {
  TrainCommandOptions options;
  options.steps = 40;
  return options;
}

TEST(TrainCommandTest, WithoutJsonProgressAndResultShareStdout) {
  std::ostringstream out, err;
  ASSERT_EQ(TrainCommand(ShortRun(), out, err, /*interactive=*/false), kExitOk) << err.str();
  EXPECT_EQ(err.str(), "");
  EXPECT_THAT(out.str(), HasSubstr("step 4/40")) << out.str();
  EXPECT_THAT(out.str(), HasSubstr("test accuracy ")) << out.str();
}

TEST(TrainCommandTest, JsonPutsProgressOnStderrAndOneLineOnStdout) {
  TrainCommandOptions options = ShortRun();
  options.json = true;
  std::ostringstream out, err;
  ASSERT_EQ(TrainCommand(options, out, err, /*interactive=*/false), kExitOk) << err.str();
  EXPECT_EQ(LineCount(out.str()), 1) << out.str();
  const nlohmann::json j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["global_step"], 40);
  EXPECT_THAT(err.str(), HasSubstr("step 40/40")) << err.str();
  EXPECT_THAT(err.str(), Not(HasSubstr("actorflow:"))) << err.str();
}

TEST(TrainCommandTest, JsonOnALocalClusterSaysHowStepsBecameEpochsOnStderr) {
  TrainCommandOptions options = ShortRun();
  options.cluster = "local:ps=1,worker=2";
  options.json = true;
  std::ostringstream out, err;
  ASSERT_EQ(TrainCommand(options, out, err, /*interactive=*/false), kExitOk) << err.str();
  EXPECT_EQ(LineCount(out.str()), 1) << out.str();
  EXPECT_TRUE(nlohmann::json::parse(out.str()).contains("updates_applied")) << out.str();
  // 40 batches of 32 on Iris's 120 rows: 11 epochs, each 2 steps of 32 of a worker's 60 rows.
  EXPECT_THAT(err.str(), HasSubstr("--steps 40 of --batch 32 on 120 rows is 11 epoch(s) shared "
                                   "by 2 worker(s): 22 steps per worker"))
      << err.str();
  EXPECT_THAT(err.str(), HasSubstr("worker 1: step ")) << err.str();
}

TEST(StepsRescaledLineTest, SilentUnderEpochsOrWhenTheStepsAreKept) {
  TrainCommandOptions options;
  options.steps = 6;
  options.batch = 10;
  DataParallelOptions dp;
  dp.batch_size = 10;
  dp.epochs = 1;
  dp.ps.total_replicas = 1;
  EXPECT_EQ(StepsRescaledLine(options, dp, 60), "");  // one worker, 6 steps of 10 = 1 epoch
  dp.ps.total_replicas = 2;
  EXPECT_EQ(StepsRescaledLine(options, dp, 60),
            "--steps 6 of --batch 10 on 60 rows is 1 epoch(s) shared by 2 worker(s): 3 steps "
            "per worker (--epochs N sets the passes directly)");
  options.epochs = 1;
  EXPECT_EQ(StepsRescaledLine(options, dp, 60), "");
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
