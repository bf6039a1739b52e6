// `actorflow run` through its C++ entry point on a small graph with a variable, its
// initializer and a NoOp: nodes without outputs fetched as targets, --before with any
// node, and misspelt node names answered with the near ones.
#include "tools/run_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace actorflow {
namespace cli {
namespace {

using ::testing::HasSubstr;

// y = w * 2 with w a variable that `init` sets to 3; `step` (a NoOp) depends on init.
std::string WriteGraph() {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/run_command_test.json";
  std::ofstream(path) << R"({"format": "actorflow.graph/1", "nodes": [
    {"name": "w", "op": "Variable", "attrs": {"dtype": "float32", "shape": []}},
    {"name": "three", "op": "Const", "attrs": {"value": {"dtype": "float32", "shape": [], "data": [3]}}},
    {"name": "init", "op": "Assign", "inputs": ["w", "three"]},
    {"name": "two", "op": "Const", "attrs": {"value": {"dtype": "float32", "shape": [], "data": [2]}}},
    {"name": "y", "op": "Mul", "inputs": ["w", "two"]},
    {"name": "step", "op": "NoOp", "inputs": ["^init"]}
  ]})";
  return path;
}

RunCommandOptions Options(std::vector<std::string> fetches) {
  RunCommandOptions options;
  options.graph_path = WriteGraph();
  options.fetches = std::move(fetches);
  return options;
}

TEST(RunCommandTest, ANodeWithoutOutputsIsRunAsATargetAndSaysSo) {
  RunCommandOptions options = Options({"step", "y"});
  std::ostringstream out, err;
  // init runs as its own step first; the fetch step runs step (and init again,
  // through its control input) and y.
  options.before = {"init"};
  ASSERT_EQ(RunGraphCommand(options, out, err), kExitOk) << err.str();
  EXPECT_EQ(out.str(), "step: ran (no outputs)\ny = float32[] 6\n");
  EXPECT_EQ(err.str(), "");
}

TEST(RunCommandTest, JsonGivesATargetNullAndListsWhatRan) {
  RunCommandOptions options = Options({"step"});
  options.json = true;
  std::ostringstream out, err;
  ASSERT_EQ(RunGraphCommand(options, out, err), kExitOk) << err.str();
  const nlohmann::json j = nlohmann::json::parse(out.str());
  EXPECT_TRUE(j["fetches"].contains("step"));
  EXPECT_TRUE(j["fetches"]["step"].is_null()) << out.str();
  const std::vector<std::string> executed = j["executed"];
  EXPECT_THAT(executed, ::testing::Contains("init")) << out.str();
  EXPECT_THAT(executed, ::testing::Contains("step")) << out.str();
}

TEST(RunCommandTest, BeforeAcceptsAnyNodeAndATensorNameMeansItsNode) {
  RunCommandOptions options = Options({"y"});
  options.before = {"init:0"};
  std::ostringstream out, err;
  ASSERT_EQ(RunGraphCommand(options, out, err), kExitOk) << err.str();
  EXPECT_EQ(out.str(), "y = float32[] 6\n");
}

TEST(RunCommandTest, AnUnknownFetchProposesNearNodeNames) {
  RunCommandOptions options = Options({"yy"});
  std::ostringstream out, err;
  EXPECT_EQ(RunGraphCommand(options, out, err), kExitRuntimeError);
  EXPECT_EQ(out.str(), "");
  EXPECT_EQ(err.str(),
            "actorflow: NotFound: --fetch 'yy': the graph has no node named 'yy' (did you mean "
            "'y'?)\n");
}

TEST(RunCommandTest, UnknownBeforeAndFeedNamesProposeNearNodeNames) {
  RunCommandOptions options = Options({"y"});
  options.before = {"int"};
  std::ostringstream out, err;
  EXPECT_EQ(RunGraphCommand(options, out, err), kExitRuntimeError);
  EXPECT_THAT(err.str(), HasSubstr("--before 'int': the graph has no node named 'int' (did you "
                                   "mean 'init'?)"));
  options.before.clear();
  options.feeds = {"tow=1"};
  std::ostringstream out2, err2;
  EXPECT_EQ(RunGraphCommand(options, out2, err2), kExitRuntimeError);
  EXPECT_THAT(err2.str(), HasSubstr("feed 'tow': the graph has no node named 'tow' (did you mean "
                                    "'two'?)"));
}

TEST(RunCommandTest, AnOutputIndexOfANodeWithoutOutputsIsStillAnError) {
  RunCommandOptions options = Options({"step:0"});
  std::ostringstream out, err;
  EXPECT_NE(RunGraphCommand(options, out, err), kExitOk);
  EXPECT_THAT(err.str(), HasSubstr("step")) << err.str();
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
