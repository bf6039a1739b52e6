// End-to-end tests of `actorflow train --replication in-graph`: the built binary runs
// as a child process, on two local CPU devices and on a local cluster (ps=1,
// worker=2), and keeps `actorflow train`'s output contract; its model directory is
// one `actorflow predict` reads; flags of between-graph training and bad cluster
// shapes are usage errors naming the flag.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/subprocess.h"

namespace actorflow {
namespace {

using nlohmann::json;
using subprocess::ProcessResult;

ProcessResult RunActorflow(const std::vector<std::string>& args) {
  ProcessResult r = subprocess::RunProcess(subprocess::Runfile("tools/actorflow"), args);
  EXPECT_TRUE(r.started) << r.error;
  return r;
}

std::string Data(const std::string& file) { return subprocess::Runfile("examples/data/" + file); }

// The JSON object on the last stdout line of a command that must succeed.
json RunJson(const std::vector<std::string>& args) {
  const ProcessResult r = RunActorflow(args);
  EXPECT_TRUE(r.exited && r.exit_code == 0) << r.err;
  std::string out = r.out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  const std::string last = out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1);
  json j = json::parse(last, nullptr, /*allow_exceptions=*/false);
  EXPECT_TRUE(j.is_object()) << "last line: " << last;
  return j;
}

using ::testing::HasSubstr;

TEST(InGraphCliTest, TrainsIrisOnTwoLocalCpusWithTrainsJsonContract) {
  json j = RunJson({"train", "--replication", "in-graph", "--steps", "300", "--json"});
  ASSERT_TRUE(j.is_object());
  EXPECT_GE(j["accuracy"].get<double>(), 0.9);
  EXPECT_GT(j["loss"].get<double>(), 0.0);
  EXPECT_EQ(j["global_step"].get<int64_t>(), 300);
  EXPECT_GT(j["seconds"].get<double>(), 0.0);
  EXPECT_EQ(j["replication"], "in-graph");
  EXPECT_EQ(j["towers"].get<int>(), 2);
}

TEST(InGraphCliTest, OnALocalClusterItGivesTheSameResultAsOnLocalCpusAndPredictReadsItsDirectory) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(tmp ? tmp : "/tmp") + "/in_graph_cli_model";
  std::filesystem::remove_all(dir);
  json local = RunJson({"train", "--replication", "in-graph", "--steps", "200", "--json"});
  json cluster = RunJson({"train", "--replication", "in-graph", "--cluster",
                          "local:ps=1,worker=2", "--steps", "200", "--checkpoint-dir", dir, "--json"});
  ASSERT_TRUE(local.is_object() && cluster.is_object());
  EXPECT_EQ(cluster["towers"].get<int>(), 2);
  EXPECT_EQ(cluster["ps_tasks"].get<int>(), 1);
  // The same graph, the same seeds and batches: the placement changes nothing.
  EXPECT_EQ(cluster["accuracy"], local["accuracy"]);
  EXPECT_NEAR(cluster["loss"].get<double>(), local["loss"].get<double>(), 1e-6);

  const ProcessResult predict = RunActorflow(
      {"predict", "--checkpoint-dir", dir, "--input", Data("iris_test.csv")});
  EXPECT_TRUE(predict.exited && predict.exit_code == 0) << predict.err;
}

// On a simulated cluster (the library trainer's TrainerCluster::Simulated): the same
// graph gives the same result as on local CPUs, and the same flags the same run.
TEST(InGraphCliTest, OnASimulatedClusterItGivesTheSameResultAndReplays) {
  const std::vector<std::string> args = {"train", "--replication", "in-graph", "--cluster",
                                         "sim:ps=1,worker=2", "--steps", "100", "--json"};
  json simulated = RunJson(args);
  json again = RunJson(args);
  json local = RunJson({"train", "--replication", "in-graph", "--steps", "100", "--json"});
  ASSERT_TRUE(simulated.is_object() && again.is_object() && local.is_object());
  EXPECT_EQ(simulated["towers"].get<int>(), 2);
  EXPECT_EQ(simulated["global_step"].get<int64_t>(), 100);
  EXPECT_EQ(simulated["accuracy"], local["accuracy"]);
  EXPECT_NEAR(simulated["loss"].get<double>(), local["loss"].get<double>(), 1e-6);
  EXPECT_GT(simulated["virtual_seconds"].get<double>(), 0.0);
  EXPECT_EQ(simulated["event_log_hash"], again["event_log_hash"]);
}

TEST(InGraphCliTest, BetweenGraphFlagsABadReplicationAndABadShapeAreUsageErrors) {
  struct Case {
    std::vector<std::string> flags;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--replication", "in-graph", "--mode", "async"}, "--mode is for between-graph training"},
      {{"--replication", "sideways"}, "--replication 'sideways'"},
      {{"--replication", "in-graph", "--cluster", "local:worker=2"}, "needs ps=P and worker=W"},
      {{"--replication", "in-graph", "--cluster", "local:ps=1,worker=2,chief=1"}, "job 'chief'"},
      {{"--replication", "in-graph", "--cluster", "sim:worker=2"}, "needs ps=P and worker=W"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"train"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const ProcessResult r = RunActorflow(args);
    EXPECT_TRUE(r.exited) << c.says;
    EXPECT_EQ(r.exit_code, 2) << c.says << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.says)) << r.err;
  }
}

}  // namespace
}  // namespace actorflow
