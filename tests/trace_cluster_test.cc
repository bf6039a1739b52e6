// One timeline for a distributed step: `actorflow run --target` against a cluster of
// real server processes (1 ps, 2 workers) on 127.0.0.1 writes a Chrome trace with a
// process row per task, device tracks, and a flow arrow for each tensor that crossed
// between them; the clock offsets and their bound are in the trace's metadata.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/process_cluster.h"
#include "tests/subprocess.h"

namespace actorflow {
namespace {

using subprocess::ProcessCluster;
using subprocess::ProcessClusterOptions;

// a (ps) and b (worker 0) meet on worker 1, whose product goes back to worker 0.
constexpr char kThreeTaskGraph[] = R"({"format": "actorflow.graph/1", "nodes": [
  {"name": "a", "op": "Const", "device": "/job:ps/task:0",
   "attrs": {"value": {"dtype": "float32", "shape": [2, 2], "data": [1, 2, 3, 4]}}},
  {"name": "b", "op": "Const", "device": "/job:worker/task:0",
   "attrs": {"value": {"dtype": "float32", "shape": [2, 2], "data": [5, 6, 7, 8]}}},
  {"name": "c", "op": "MatMul", "inputs": ["a", "b"], "device": "/job:worker/task:1"},
  {"name": "d", "op": "Add", "inputs": ["c", "a"], "device": "/job:worker/task:0"}]})";

TEST(TraceClusterTest, AStepAcrossThreeTasksIsOneTimelineWithArrowsBetweenTheirRows) {
  const std::string dir = std::getenv("TEST_TMPDIR");
  ProcessClusterOptions options;
  options.binary = subprocess::Runfile("tools/actorflow");
  options.shape = {{"ps", 1}, {"worker", 2}};
  options.dir = dir;
  auto cluster = ProcessCluster::Start(std::move(options));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::string graph = dir + "/three_tasks.json";
  std::ofstream(graph) << kThreeTaskGraph;
  const std::string trace_path = dir + "/trace.json";
  const subprocess::ProcessResult r = subprocess::RunProcess(
      subprocess::Runfile("tools/actorflow"),
      {"run", "--target", (*cluster)->Target("worker", 0), "--graph", graph, "--fetch", "d",
       "--trace", trace_path, "--timeout-ms", "30000"});
  ASSERT_TRUE(r.exited) << r.error;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // d = a.b + a = [[19, 22], [43, 50]] + [[1, 2], [3, 4]]
  EXPECT_THAT(r.out, ::testing::HasSubstr("20"));

  std::ifstream in(trace_path);
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json trace = nlohmann::json::parse(text.str());
  std::map<int, std::string> process_of_pid;
  std::map<int, int> flow_start_pid;
  std::set<std::pair<int, int>> arrows;  // (from pid, to pid)
  std::set<std::string> nodes;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") process_of_pid[e["pid"]] = e["args"]["name"];
    if (e["ph"] == "X") nodes.insert(e["name"].get<std::string>());
    if (e["ph"] == "s") flow_start_pid[e["id"]] = e["pid"];
  }
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["ph"] == "f") arrows.insert({flow_start_pid.at(e["id"]), e["pid"]});
  }
  std::set<std::string> processes;
  for (const auto& [pid, name] : process_of_pid) processes.insert(name);
  EXPECT_EQ(processes, (std::set<std::string>{"/job:ps/replica:0/task:0",
                                              "/job:worker/replica:0/task:0",
                                              "/job:worker/replica:0/task:1"}));
  for (const char* node : {"a", "b", "c", "d"}) EXPECT_EQ(nodes.count(node), 1u) << node;
  std::set<std::pair<std::string, std::string>> named_arrows;
  for (const auto& [from, to] : arrows) {
    named_arrows.insert({process_of_pid[from], process_of_pid[to]});
  }
  // a: ps -> worker 1 and ps -> worker 0; b: worker 0 -> worker 1; c: worker 1 -> worker 0.
  EXPECT_EQ(named_arrows,
            (std::set<std::pair<std::string, std::string>>{
                {"/job:ps/replica:0/task:0", "/job:worker/replica:0/task:1"},
                {"/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"},
                {"/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"},
                {"/job:worker/replica:0/task:1", "/job:worker/replica:0/task:0"}}));
  const nlohmann::json& offsets = trace["otherData"]["clock_offsets"];
  EXPECT_EQ(offsets.size(), 3u);
  for (const nlohmann::json& o : offsets) {
    // One host: one monotonic clock, so no device is shifted.
    EXPECT_EQ(o["offset_micros"], 0) << o;
    EXPECT_GE(o["uncertainty_micros"].get<int64_t>(), 0);
  }
  EXPECT_GE(trace["otherData"]["clock_skew_bound_micros"].get<int64_t>(), 0);
}

}  // namespace
}  // namespace actorflow
