// End-to-end tests of `actorflow graph`: the built binary draws graph JSON files as
// DOT (always) and SVG (when Graphviz's `dot` is installed), placed or not, and bad
// input ends in a non-zero exit with one stderr line naming the culprit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "graph/test_files.h"
#include "tests/cli_failure.h"
#include "tests/subprocess.h"

namespace actorflow {
namespace {

using subprocess::FailedWith;
using subprocess::ProcessResult;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Two constants pinned to two CPUs and their sum on the second.
constexpr char kTwoDeviceGraph[] = R"({"format": "actorflow.graph/1", "nodes": [
  {"name": "a", "op": "Const", "device": "/device:CPU:0",
   "attrs": {"value": {"dtype": "float32", "shape": [2], "data": [1, 2]}}},
  {"name": "b", "op": "Const", "device": "/device:CPU:1",
   "attrs": {"value": {"dtype": "float32", "shape": [2], "data": [3, 4]}}},
  {"name": "sum", "op": "Add", "inputs": ["a", "b"], "device": "/device:CPU:1"}
]})";

ProcessResult RunActorflow(const std::vector<std::string>& args) {
  ProcessResult r = subprocess::RunProcess(subprocess::Runfile("tools/actorflow"), args);
  EXPECT_TRUE(r.started) << r.error;
  EXPECT_TRUE(r.exited) << "killed by signal " << r.signal << "; stderr: " << r.err;
  return r;
}

std::string Example(const std::string& name) {
  return subprocess::Runfile("examples/graphs/" + name);
}

std::string TwoDeviceGraphFile() {
  const std::string path = TestTempPath("two_devices.json");
  EXPECT_TRUE(WriteTestFile(path, kTwoDeviceGraph));
  return path;
}

TEST(GraphCliTest, PrintsDotWithEveryNodeAndEdge) {
  const ProcessResult r = RunActorflow({"graph", "--graph", Example("variables.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("digraph actorflow {"));
  EXPECT_THAT(r.out, HasSubstr("[label=\"m\\nMatMul\\nfloat32 [?,3]\""));
  EXPECT_THAT(r.out, HasSubstr("[label=\"ref float32 [2,3]\"]"));  // init's variable
}

TEST(GraphCliTest, PlacedDrawsAClusterPerDeviceAndTheSendRecvPair) {
  const ProcessResult r =
      RunActorflow({"graph", "--graph", TwoDeviceGraphFile(), "--placed", "--devices", "cpu=2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("subgraph cluster_0 {\n    label=\"/job:localhost/replica:0/"
                               "task:0/device:CPU:0\";"));
  EXPECT_THAT(r.out, HasSubstr("subgraph cluster_1 {\n    label=\"/job:localhost/replica:0/"
                               "task:0/device:CPU:1\";"));
  EXPECT_THAT(r.out, HasSubstr("\\n_Send\""));
  EXPECT_THAT(r.out, HasSubstr("\\n_Recv\\nfloat32 [2]\""));
  EXPECT_THAT(r.out, HasSubstr("[label=\"a:0\", style=bold"));
}

TEST(GraphCliTest, APinnedDeviceThatIsNotThereNeedsSoftPlacement) {
  const std::string graph = TwoDeviceGraphFile();
  EXPECT_TRUE(
      FailedWith(RunActorflow({"graph", "--graph", graph, "--placed"}), {"'b'", "CPU:1", "soft"}));
  const ProcessResult soft =
      RunActorflow({"graph", "--graph", graph, "--placed", "--soft-placement"});
  ASSERT_EQ(soft.exit_code, 0) << soft.err;
  EXPECT_THAT(soft.out, HasSubstr("cluster_0"));
  EXPECT_THAT(soft.out, ::testing::Not(HasSubstr("cluster_1")));
}

TEST(GraphCliTest, AMalformedGraphFileNamesTheFileLineAndColumn) {
  EXPECT_TRUE(FailedWith(
      RunActorflow({"graph", "--graph", subprocess::Runfile("tests/testdata/malformed.json")}),
      {"malformed.json", "line 4", "column"}));
  EXPECT_TRUE(FailedWith(RunActorflow({"graph", "--graph", TestTempPath("missing.json")}),
                         {"missing.json"}));
}

TEST(GraphCliTest, BadFlagsAreUsageErrors) {
  ProcessResult r = RunActorflow({"graph", "--graph", Example("add.json"), "--format", "png"});
  EXPECT_TRUE(FailedWith(r, {"--format 'png'", "dot or svg"}));
  EXPECT_EQ(r.exit_code, 2);
  r = RunActorflow({"graph", "--graph", Example("add.json"), "--devices", "cpu=2"});
  EXPECT_TRUE(FailedWith(r, {"--placed"}));
}

TEST(GraphCliTest, SvgNeedsGraphvizAndSaysHowToGetIt) {
  const char* path = std::getenv("PATH");
  const std::string saved = path != nullptr ? path : "";
  setenv("PATH", NewTestTempDir("empty_path").c_str(), 1);
  const ProcessResult r =
      RunActorflow({"graph", "--graph", Example("add.json"), "--format", "svg"});
  setenv("PATH", saved.c_str(), 1);
  EXPECT_TRUE(FailedWith(r, {"`dot`", "apt-get install graphviz", "--format dot"}));
}

TEST(GraphCliTest, SvgThroughGraphviz) {
  const char* path = std::getenv("PATH");
  const std::string dirs = path != nullptr ? path : "";
  bool found = false;
  for (size_t start = 0; start <= dirs.size() && !found;) {
    size_t end = std::min(dirs.find(':', start), dirs.size());
    found = !ReadTestFile(dirs.substr(start, end - start) + "/dot").empty();
    start = end + 1;
  }
  if (!found) GTEST_SKIP() << "Graphviz's dot is not installed (apt-get install graphviz)";
  const std::string out = TestTempPath("placed.svg");
  const ProcessResult r = RunActorflow({"graph", "--graph", TwoDeviceGraphFile(), "--placed",
                                        "--devices", "cpu=2", "--format", "svg", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "wrote " + out + ": 3 nodes, on 2 device(s)\n");
  const std::string svg = ReadTestFile(out);
  EXPECT_THAT(svg, HasSubstr("<svg"));
  EXPECT_THAT(svg, HasSubstr("device:CPU:1"));
  EXPECT_THAT(svg, HasSubstr("_Send"));
}

}  // namespace
}  // namespace actorflow
