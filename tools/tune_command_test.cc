// `actorflow tune` through its C++ entry point: a 4-configuration grid on a
// simulated cluster of two worker tasks, its table and its --json line; bad grids
// and parameters are usage errors before anything trains.

#include "tools/tune_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>

#include <cblas.h>

#include <nlohmann/json.hpp>

namespace actorflow {
namespace cli {
namespace {

using ::testing::HasSubstr;

TuneCommandOptions SmallSearch() {
  TuneCommandOptions options;
  options.cluster = "local:worker=2";
  options.grid = "lr=0.01|0.1;hidden=10,10|32";
  options.train.steps = 150;
  options.json = true;
  return options;
}

TEST(TuneCommandTest, FourConfigurationsOnTwoWorkersEndWithTableAndJson) {
  std::ostringstream out, err;
  ASSERT_EQ(TuneCommand(SmallSearch(), out, err), kExitOk) << err.str() << out.str();
  // --json: the table goes to stderr, stdout is the JSON line alone.
  const std::string text = err.str();
  EXPECT_THAT(text, HasSubstr("lr    hidden  accuracy")) << text;
  EXPECT_THAT(text, HasSubstr("best: lr=")) << text;
  const std::string line = out.str();
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << line;

  auto j = nlohmann::json::parse(line);
  ASSERT_EQ(j["results"].size(), 4u);
  std::set<std::string> tasks;
  std::set<std::string> configs;
  for (const auto& r : j["results"]) {
    configs.insert(r["params"]["lr"].get<std::string>() + "/" +
                   r["params"]["hidden"].get<std::string>());
    tasks.insert(r["task"].get<std::string>());
    EXPECT_GE(r["accuracy"].get<double>(), 0.0);
    EXPECT_GT(r["seconds"].get<double>(), 0.0);
  }
  EXPECT_EQ(configs, (std::set<std::string>{"0.01/10,10", "0.01/32", "0.1/10,10", "0.1/32"}));
  for (const std::string& t : tasks) {
    EXPECT_TRUE(t == "/job:worker/task:0" || t == "/job:worker/task:1") << t;
  }
  double best = 0;
  for (const auto& r : j["results"]) best = std::max(best, r["accuracy"].get<double>());
  EXPECT_EQ(j["best"]["accuracy"].get<double>(), best);
  EXPECT_GE(best, 0.9);
}

TEST(TuneCommandTest, ConfigurationsRunOneAfterAnotherOnATaskDoNotShareVariables) {
  // One worker trains both models: the second must not meet the first's variables
  // (a [4,10] kernel where it builds a [4,32] one).
  TuneCommandOptions options = SmallSearch();
  options.cluster = "local:worker=1";
  options.grid = "hidden=10,10|32";
  auto report = RunTune(options, nullptr);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->results.size(), 2u);
  for (const TrialResult& r : report->results) {
    EXPECT_TRUE(r.status.ok()) << ConfigString(r.params) << ": " << r.status;
    EXPECT_EQ(r.slot, 0);
  }
  EXPECT_EQ(report->tasks, (std::vector<std::string>{"/job:worker/task:0"}));
}

TEST(TuneCommandTest, ALocalClusterComputesWithOneBlasThreadPerConfiguration) {
  // Its configurations share this process's cores: OpenBLAS's threads would spin
  // against them (unless OPENBLAS_NUM_THREADS says otherwise).
  if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr) GTEST_SKIP() << "set by the environment";
  openblas_set_num_threads(2);
  if (openblas_get_num_threads() < 2) GTEST_SKIP() << "OpenBLAS keeps one thread here";
  TuneCommandOptions options = SmallSearch();
  options.cluster = "local:worker=1";
  options.grid = "lr=0.1";
  options.train.steps = 10;
  auto report = RunTune(options, nullptr);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(openblas_get_num_threads(), 1);
}

TEST(TuneCommandTest, GridThatDoesNotParseIsAUsageError) {
  TuneCommandOptions options = SmallSearch();
  options.grid = "lr=0.01|;hidden";
  std::ostringstream out, err;
  EXPECT_EQ(TuneCommand(options, out, err), kExitUsageError);
  EXPECT_THAT(err.str(), HasSubstr("grid")) << err.str();
}

TEST(TuneCommandTest, UnknownOrBadParametersAreUsageErrorsNamingThem) {
  TuneCommandOptions options = SmallSearch();
  options.grid = "lrate=0.1";
  std::ostringstream out, err;
  EXPECT_EQ(TuneCommand(options, out, err), kExitUsageError);
  EXPECT_THAT(err.str(), HasSubstr("'lrate' is not a tunable")) << err.str();
  options.grid = "batch=0|8";
  std::ostringstream out2, err2;
  EXPECT_EQ(TuneCommand(options, out2, err2), kExitUsageError);
  EXPECT_THAT(err2.str(), HasSubstr("batch")) << err2.str();
}

TEST(TuneCommandTest, ClusterWithoutWorkersIsRejected) {
  TuneCommandOptions options = SmallSearch();
  options.cluster = "local:ps=1";
  std::ostringstream out, err;
  EXPECT_EQ(TuneCommand(options, out, err), kExitUsageError);
  EXPECT_THAT(err.str(), HasSubstr("worker")) << err.str();
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
