// End-to-end tests of `actorflow run`: the built binary runs as a child process on
// the example graphs and on bad input; stdout, stderr and the exit status are
// checked. Bad input must end in a non-zero exit (never a signal) with one stderr
// line that names the culprit.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli_failure.h"
#include "tests/subprocess.h"

namespace {

using actorflow::subprocess::FailedWith;
using actorflow::subprocess::ProcessResult;
using actorflow::subprocess::Runfile;
using nlohmann::json;

std::string Example(const std::string& name) { return Runfile("examples/graphs/" + name); }
std::string TestData(const std::string& name) { return Runfile("tests/testdata/" + name); }

// Runs the actorflow binary with `args`; fails the test when it cannot be started
// or had to be killed for not ending.
ProcessResult RunActorflow(const std::vector<std::string>& args) {
  ProcessResult result = actorflow::subprocess::RunProcess(Runfile("tools/actorflow"), args);
  EXPECT_TRUE(result.started && result.error.empty()) << result.error;
  return result;
}

// Runs with --json and returns the parsed line; fails the test unless the command
// succeeded with exactly one line on stdout and nothing on stderr.
json RunJson(std::vector<std::string> args) {
  args.push_back("--json");
  const ProcessResult r = RunActorflow(args);
  EXPECT_TRUE(r.exited) << "killed by signal " << r.signal;
  EXPECT_EQ(r.exit_code, 0) << "stderr: " << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << "stdout: " << r.out;
  json parsed = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(parsed.is_discarded()) << "stdout is not JSON: " << r.out;
  return parsed;
}

std::vector<std::string> Executed(const json& result) {
  return result.at("executed").get<std::vector<std::string>>();
}

using ::testing::Contains;
using ::testing::Not;

constexpr int kRuntimeError = 1;
constexpr int kUsageError = 2;

// ---- The guide's programs -------------------------------------------------------

TEST(CliRunTest, AddOfThreeAndFiveIsEight) {
  json r = RunJson({"run", "--graph", Example("add.json"), "--fetch", "add"});
  EXPECT_EQ(r.at("fetches").at("add"), json::parse(R"({"dtype":"int32","shape":[],"data":[8]})"));
}

TEST(CliRunTest, JsonLineIsCompactWithFetchesFirst) {
  ProcessResult r =
      RunActorflow({"run", "--graph", Example("add.json"), "--fetch", "add", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind(R"({"fetches":{"add":{"dtype":"int32","shape":[],"data":[8]}},"executed":[)",
                        0),
            0u)
      << r.out;
}

TEST(CliRunTest, WithoutJsonPrintsOneLinePerFetchInOrder) {
  ProcessResult r = RunActorflow({"run", "--graph", Example("add.json"), "--fetch", "add,a"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "add = int32[] 8\na = int32[] 3\n");
}

TEST(CliRunTest, PowOfSumAndProductIs15625AndSkipsTheUselessNode) {
  json r = RunJson({"run", "--graph", Example("pow.json"), "--fetch", "pow_op"});
  EXPECT_EQ(r.at("fetches").at("pow_op").at("data"), json::parse("[15625]"));
  EXPECT_EQ(r.at("fetches").at("pow_op").at("dtype"), "int32");
  const std::vector<std::string> executed = Executed(r);
  EXPECT_THAT(executed, Not(Contains("useless")));
  for (const std::string node : {"x", "y", "add_op", "mul_op", "pow_op"}) {
    EXPECT_EQ(std::count(executed.begin(), executed.end(), node), 1) << node;
  }
  EXPECT_EQ(executed.size(), 5u);
}

TEST(CliRunTest, ScalarFeedsConvertToTheFloatPlaceholders) {
  json r = RunJson({"run", "--graph", Example("placeholders.json"), "--fetch", "sum", "--feed",
                    "x=3", "--feed", "y=4.5"});
  EXPECT_EQ(r.at("fetches").at("sum"),
            json::parse(R"({"dtype":"float32","shape":[],"data":[7.5]})"));
}

TEST(CliRunTest, ListFeedsAddElementwise) {
  json r = RunJson({"run", "--graph", Example("placeholders.json"), "--fetch", "sum", "--feed",
                    "x=[1,3]", "--feed", "y=[2,4]"});
  EXPECT_EQ(r.at("fetches").at("sum"),
            json::parse(R"({"dtype":"float32","shape":[2],"data":[3,7]})"));
}

TEST(CliRunTest, HumanReadableVectorFetch) {
  ProcessResult r = RunActorflow({"run", "--graph", Example("placeholders.json"), "--fetch",
                                  "sum", "--feed", "x=[1,3]", "--feed", "y=[2,4]"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "sum = float32[2] [3, 7]\n");
}

TEST(CliRunTest, FeedAndFetchNamesMayCarryAnOutputIndex) {
  json r = RunJson({"run", "--graph", Example("placeholders.json"), "--fetch", "sum:0",
                    "--feed", "x:0=3", "--feed", "y=4"});
  EXPECT_EQ(r.at("fetches").at("sum:0").at("data"), json::parse("[7]"));
}

TEST(CliRunTest, AnyNodesOutputMayBeFedNotOnlyPlaceholders) {
  json r = RunJson({"run", "--graph", Example("add.json"), "--fetch", "add", "--feed", "a=10"});
  EXPECT_EQ(r.at("fetches").at("add").at("data"), json::parse("[15]"));
  EXPECT_THAT(Executed(r), Not(Contains("a")));
}

TEST(CliRunTest, BeforeStepInitializesTheVariableForMatMul) {
  // p [2,2] x w [2,3] with w = [[1,2,3],[4,5,6]].
  json r = RunJson({"run", "--graph", Example("variables.json"), "--before", "init", "--feed",
                    "p=[[1,2],[3,4]]", "--fetch", "m", "--timeout-ms", "10000"});
  EXPECT_EQ(r.at("fetches").at("m"),
            json::parse(R"({"dtype":"float32","shape":[2,3],"data":[9,12,15,19,26,33]})"));
  EXPECT_THAT(Executed(r), Not(Contains("init")));
  EXPECT_THAT(Executed(r), Contains("m"));
}

TEST(CliRunTest, HumanReadableMatrixIsNested) {
  ProcessResult r = RunActorflow({"run", "--graph", Example("variables.json"), "--before",
                                  "init", "--feed", "p=[[1,0],[0,1]]", "--fetch", "m"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "m = float32[2,3] [[1, 2, 3], [4, 5, 6]]\n");
}

// ---- Bad input ------------------------------------------------------------------

TEST(CliRunErrorTest, MissingFeedNamesThePlaceholder) {
  ProcessResult r = RunActorflow(
      {"run", "--graph", Example("placeholders.json"), "--fetch", "sum", "--feed", "x=3"});
  EXPECT_TRUE(FailedWith(r, kRuntimeError, {"InvalidArgument", "'y'"}));
}

// Zero, negative or too short a timeout makes detection impossible: a usage error,
// from the commands that connect and from a server alike.
TEST(CliRunErrorTest, AHeartbeatTimeoutTooShortToDetectAnythingIsAUsageErrorNamingTheFlag) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string cluster = std::string(tmp ? tmp : "/tmp") + "/one_worker.json";
  std::ofstream(cluster) << "{\"worker\": [\"127.0.0.1:1\"]}";
  for (const char* value : {"-5", "0", "20"}) {
    for (const char* command : {"run", "train", "server"}) {
      std::vector<std::string> args = {command, "--heartbeat-timeout-ms", value};
      if (std::string(command) == "run") {
        args.insert(args.end(), {"--graph", Example("placeholders.json"), "--fetch", "sum"});
      }
      if (std::string(command) == "server") {
        args.insert(args.end(), {"--cluster", cluster, "--job", "worker", "--task", "0"});
      }
      ProcessResult r = RunActorflow(args);
      EXPECT_TRUE(FailedWith(r, kUsageError, {"--heartbeat-timeout-ms must be at least 50", value}))
          << command << " " << value << ": " << r.err;
    }
  }
}

TEST(CliRunErrorTest, FeedOfWrongShapeNamesThePlaceholder) {
  ProcessResult r = RunActorflow({"run", "--graph", Example("variables.json"), "--before",
                                  "init", "--feed", "p=[[1,2,3]]", "--fetch", "m"});
  EXPECT_TRUE(FailedWith(r, kRuntimeError, {"InvalidArgument", "'p'"}));
}

TEST(CliRunErrorTest, NonIntegerIntoInt32PlaceholderNamesIt) {
  ProcessResult r = RunActorflow({"run", "--graph", TestData("int_placeholder.json"), "--fetch",
                                  "doubled", "--feed", "count=2.5"});
  EXPECT_TRUE(FailedWith(r, kRuntimeError, {"InvalidArgument", "'count'"}));
}

TEST(CliRunErrorTest, RaggedFeedNamesThePlaceholder) {
  ProcessResult r = RunActorflow({"run", "--graph", Example("placeholders.json"), "--fetch",
                                  "sum", "--feed", "x=[[1,2],[3]]", "--feed", "y=1"});
  EXPECT_TRUE(FailedWith(r, kRuntimeError, {"InvalidArgument", "'x'"}));
}

TEST(CliRunErrorTest, FeedOfUnknownNodeNamesIt) {
  ProcessResult r = RunActorflow({"run", "--graph", Example("add.json"), "--fetch", "add",
                                  "--feed", "no_such_node=1"});
  EXPECT_TRUE(FailedWith(r, kRuntimeError, {"InvalidArgument", "no_such_node"}));
}

TEST(CliRunErrorTest, FeedingOneTensorTwiceNamesIt) {
  ProcessResult r = RunActorflow({"run", "--graph", Example("placeholders.json"), "--fetch",
                                  "sum", "--feed", "x=1", "--feed", "x:0=2", "--feed", "y=1"});
  EXPECT_TRUE(FailedWith(r, kRuntimeError, {"InvalidArgument", "x:0"}));
}

TEST(CliRunErrorTest, UnknownFetchNamesIt) {
  ProcessResult r =
      RunActorflow({"run", "--graph", Example("add.json"), "--fetch", "no_such_fetch"});
  EXPECT_TRUE(FailedWith(r, kRuntimeError, {"NotFound", "no_such_fetch"}));
}

TEST(CliRunErrorTest, ReadingAnUninitializedVariableIsFailedPreconditionNamingIt) {
  ProcessResult r = RunActorflow(
      {"run", "--graph", Example("variables.json"), "--feed", "p=[[1,2]]", "--fetch", "m"});
  EXPECT_TRUE(FailedWith(r, kRuntimeError, {"FailedPrecondition", "'w'"}));
}

TEST(CliRunErrorTest, MalformedGraphFileGivesLineAndColumn) {
  ProcessResult r = RunActorflow({"run", "--graph", TestData("malformed.json"), "--fetch", "a"});
  EXPECT_TRUE(FailedWith(r, kRuntimeError, {"malformed.json", "line 4", "column"}));
}

TEST(CliRunErrorTest, MatMulShapeMismatchIsABuildTimeErrorNamingTheNode) {
  ProcessResult r =
      RunActorflow({"run", "--graph", TestData("matmul_mismatch.json"), "--fetch", "a"});
  EXPECT_TRUE(
      FailedWith(r, kRuntimeError, {"InvalidArgument", "bad_matmul", "MatMul shape mismatch"}));
}

TEST(CliRunErrorTest, IntegerDivisionByZeroNamesTheNode) {
  ProcessResult r =
      RunActorflow({"run", "--graph", TestData("int_div_zero.json"), "--fetch", "quotient"});
  EXPECT_TRUE(FailedWith(r, kRuntimeError, {"InvalidArgument", "quotient"}));
}

TEST(CliRunErrorTest, UnknownOpNamesTheOpAndTheNode) {
  ProcessResult r =
      RunActorflow({"run", "--graph", TestData("unknown_op.json"), "--fetch", "mystery"});
  EXPECT_TRUE(FailedWith(r, kRuntimeError, {"FrobnicateTensor", "mystery"}));
}

TEST(CliRunErrorTest, NonexistentGraphFileNamesThePath) {
  ProcessResult r =
      RunActorflow({"run", "--graph", TestData("does_not_exist.json"), "--fetch", "a"});
  EXPECT_TRUE(FailedWith(r, kRuntimeError, {"does_not_exist.json"}));
}

// ---- Usage errors ---------------------------------------------------------------

TEST(CliUsageTest, MissingFetchIsAUsageError) {
  ProcessResult r = RunActorflow({"run", "--graph", Example("add.json")});
  EXPECT_TRUE(FailedWith(r, kUsageError, {"--fetch"}));
}

TEST(CliUsageTest, FeedWithoutEqualsSignIsAUsageError) {
  ProcessResult r = RunActorflow(
      {"run", "--graph", Example("placeholders.json"), "--fetch", "sum", "--feed", "x"});
  EXPECT_TRUE(FailedWith(r, kUsageError, {"--feed", "NAME=JSON"}));
}

TEST(CliUsageTest, MalformedFeedJsonIsAUsageErrorNamingTheFeed) {
  ProcessResult r = RunActorflow(
      {"run", "--graph", Example("placeholders.json"), "--fetch", "sum", "--feed", "x=[1,"});
  EXPECT_TRUE(FailedWith(r, kUsageError, {"--feed x"}));
}

TEST(CliUsageTest, NonNumericTimeoutIsAUsageError) {
  ProcessResult r = RunActorflow(
      {"run", "--graph", Example("add.json"), "--fetch", "add", "--timeout-ms", "soon"});
  EXPECT_TRUE(FailedWith(r, kUsageError, {"--timeout-ms"}));
}

TEST(CliUsageTest, NoSubcommandIsAUsageError) {
  ProcessResult r = RunActorflow({});
  EXPECT_TRUE(FailedWith(r, kUsageError, {}));
}

}  // namespace
