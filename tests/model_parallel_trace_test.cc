// `actorflow train --trace` on model-parallel splits: the Chrome trace of one
// steady-state step shows each device's track busy (the CNN's two towers) and a deep
// RNN's cells on the device of their layer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/subprocess.h"

namespace actorflow {
namespace {

std::string Data(const std::string& file) { return subprocess::Runfile("examples/data/" + file); }

// Trains one epoch of the digits with `flags` and --trace; returns the trace.
nlohmann::json TraceOf(const std::vector<std::string>& flags, const std::string& name) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name + ".json";
  std::vector<std::string> args = {"train", "--train", Data("digits_training.csv"), "--test",
                                   Data("digits_test.csv"), "--normalize", "--epochs", "1",
                                   "--trace", path, "--json"};
  args.insert(args.end(), flags.begin(), flags.end());
  const subprocess::ProcessResult r =
      subprocess::RunProcess(subprocess::Runfile("tools/actorflow"), args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str(), nullptr, false);
}

TEST(ModelParallelTraceTest, TheCnnsTowersKeepBothDeviceTracksBusy) {
  const nlohmann::json trace =
      TraceOf({"--model", "cnn", "--split", "towers", "--devices", "cpu=2"}, "cnn");
  ASSERT_TRUE(trace.is_object());
  std::map<std::pair<int, int>, std::string> track_name;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") track_name[{e["pid"], e["tid"]}] = e["args"]["name"];
  }
  std::map<std::string, int64_t> busy;  // track -> micros of nodes
  std::map<std::string, int> convs;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const std::string track = track_name[{e["pid"], e["tid"]}];
    busy[track] += e["dur"].get<int64_t>();
    if (e["cat"] == "Conv2D") ++convs[track];
  }
  EXPECT_GT(busy["CPU:0"], 0);
  EXPECT_GT(busy["CPU:1"], 0);
  // Each tower convolves on its own device.
  EXPECT_EQ(convs["CPU:0"], 2);
  EXPECT_EQ(convs["CPU:1"], 2);
}

TEST(ModelParallelTraceTest, ADeepRnnSplitByLayersRunsEachLayersCellsOnItsDevice) {
  const nlohmann::json trace =
      TraceOf({"--model", "rnn", "--split", "layer", "--devices", "cpu=3"}, "rnn");
  ASSERT_TRUE(trace.is_object());
  std::map<std::pair<int, int>, std::string> track_name;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") track_name[{e["pid"], e["tid"]}] = e["args"]["name"];
  }
  const std::regex cell("^rnn/layer([0-9]+)/t([0-9]+)/");
  std::map<std::pair<int, int>, std::string> device_of_cell;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const std::string name = e["name"];
    std::smatch m;
    if (!std::regex_search(name, m, cell)) continue;
    device_of_cell[{std::stoi(m[1]), std::stoi(m[2])}] = track_name[{e["pid"], e["tid"]}];
  }
  EXPECT_EQ(device_of_cell.size(), 3u * 8u);  // 3 layers x 8 time steps, all traced
  for (const auto& [cell_key, device] : device_of_cell) {
    EXPECT_EQ(device, "CPU:" + std::to_string(cell_key.first))
        << "layer " << cell_key.first << " t " << cell_key.second;
  }
}

TEST(ModelParallelTraceTest, TraceWithAClusterIsAUsageError) {
  const subprocess::ProcessResult r = subprocess::RunProcess(
      subprocess::Runfile("tools/actorflow"),
      {"train", "--cluster", "local:ps=1,worker=2", "--trace", "/tmp/x.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, ::testing::HasSubstr("--trace"));
}

}  // namespace
}  // namespace actorflow
