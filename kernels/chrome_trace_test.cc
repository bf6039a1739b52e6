#include "kernels/chrome_trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace actorflow {
namespace {

NodeExecStats Stats(const std::string& name, const std::string& op, const std::string& device,
                    int64_t start, int64_t end) {
  NodeExecStats s;
  s.node_name = name;
  s.op = op;
  s.device = device;
  s.start_micros = start;
  s.end_micros = end;
  return s;
}

TEST(ChromeTraceTest, OneRowPerTaskATrackPerDeviceAndAnArrowPerTensorThatCrossed) {
  const std::string ps = "/job:ps/replica:0/task:0/device:CPU:0";
  const std::string worker = "/job:worker/replica:0/task:0/device:CPU:0";
  RunMetadata meta;
  meta.step_stats = {Stats("w", "VariableV2", ps, 1, 2), Stats("y", "MatMul", worker, 10, 20)};
  meta.transfer_stats = {Stats("_send/w_0/to_worker", "_Send", ps, 3, 4),
                         Stats("_recv/w_0/to_worker", "_Recv", worker, 2, 9)};
  meta.clock_offsets = {{ps, 0, 40}, {worker, 1200, 35}};
  const nlohmann::json trace = nlohmann::json::parse(ChromeTraceJson(meta));
  std::set<std::string> processes, threads;
  int starts = 0, finishes = 0, start_pid = -1, finish_pid = -1;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") processes.insert(e["args"]["name"]);
    if (e["ph"] == "M" && e["name"] == "thread_name") threads.insert(e["args"]["name"]);
    if (e["ph"] == "s") {
      ++starts;
      start_pid = e["pid"];
      EXPECT_EQ(e["name"], "w_0/to_worker");
    }
    if (e["ph"] == "f") {
      ++finishes;
      finish_pid = e["pid"];
      EXPECT_EQ(e["ts"], 9);  // the end of the Recv
    }
  }
  EXPECT_EQ(processes, (std::set<std::string>{"/job:ps/replica:0/task:0",
                                              "/job:worker/replica:0/task:0"}));
  EXPECT_EQ(threads, (std::set<std::string>{"CPU:0", "CPU:0 send/recv"}));
  EXPECT_EQ(starts, 1);
  EXPECT_EQ(finishes, 1);
  EXPECT_NE(start_pid, finish_pid);
  EXPECT_EQ(trace["otherData"]["clock_skew_bound_micros"], 40);
  EXPECT_EQ(trace["otherData"]["clock_offsets"][1]["offset_micros"], 1200);
}

TEST(ChromeTraceTest, ASendWithoutItsRecvDrawsNoArrow) {
  RunMetadata meta;
  meta.transfer_stats = {Stats("_send/x_0/to_b", "_Send", "/device:CPU:0", 0, 1)};
  const nlohmann::json trace = nlohmann::json::parse(ChromeTraceJson(meta));
  for (const nlohmann::json& e : trace["traceEvents"]) EXPECT_NE(e["ph"], "s");
}

}  // namespace
}  // namespace actorflow
