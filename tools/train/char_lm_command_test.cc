// `actorflow train --model char-lstm|char-transformer` through its C++ entry point on a
// generated text of fortune records: its JSON line, a model directory that resumes,
// the fields --split layer, --pipeline and --cluster (real servers) add, and the
// flags it refuses, each named.
#include "tools/train/char_lm_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/test_files.h"
#include "tools/train/train_command.h"
#include "tools/train/train_flags.h"

namespace actorflow {
namespace cli {
namespace {

using ::testing::HasSubstr;

// 100 records of "the cat sat on the mat", "%"-separated.
std::string WriteText(const ScopedTempDir& dir) {
  std::string text;
  for (int k = 0; k < 100; ++k) text += "the cat sat on the mat " + std::to_string(k % 7) + "\n%\n";
  const std::string path = dir.File("text.txt");
  EXPECT_TRUE(WriteTestFile(path, text));
  return path;
}

TrainCommandOptions CharLm(const std::string& model, const std::string& text) {
  TrainCommandOptions options;
  options.model = model;
  ApplyModelDefaults([](const std::string&) { return false; }, &options);
  options.text_path = text;
  options.steps = 40;
  options.seq_len = 16;
  options.batch = 8;
  options.hidden = "32";
  options.embedding_dim = 8;
  options.width = 16;
  options.heads = 2;
  options.blocks = 1;
  options.json = true;
  return options;
}

nlohmann::json RunJson(const TrainCommandOptions& options) {
  std::ostringstream out, err;
  EXPECT_EQ(TrainCommand(options, out, err, /*interactive=*/false), kExitOk) << err.str();
  return nlohmann::json::parse(out.str(), nullptr, /*allow_exceptions=*/false);
}

class CharLmCommandTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CharLmCommandTest, PrintsTheJsonFieldsAndResumes) {
  ScopedTempDir dir("char_lm");
  TrainCommandOptions options = CharLm(GetParam(), WriteText(dir));
  options.checkpoint_dir = dir.File("model");
  const nlohmann::json j = RunJson(options);
  ASSERT_TRUE(j.is_object()) << j;
  EXPECT_EQ(j["model"], GetParam());
  EXPECT_EQ(j["steps"], 40);
  EXPECT_EQ(j["global_step"], 40);
  EXPECT_LT(j["bits_per_char"].get<double>(), j["first_bits_per_char"].get<double>()) << j;
  EXPECT_GT(j["samples_per_second"].get<double>(), 0);
  EXPECT_EQ(j["train_chars"].get<int64_t>() + j["validation_chars"].get<int64_t>(), 100 * 25);
  const nlohmann::json resumed = RunJson(options);
  ASSERT_TRUE(resumed.is_object()) << resumed;
  EXPECT_EQ(resumed["global_step"], 80);
}

INSTANTIATE_TEST_SUITE_P(Models, CharLmCommandTest,
                         ::testing::Values("char-lstm", "char-transformer"));

TEST(CharLmPlacementCommandTest, SplitPipelineAndClusterAddTheirJsonFields) {
  ScopedTempDir dir("char_lm");
  const std::string text = WriteText(dir);
  TrainCommandOptions lstm = CharLm("char-lstm", text);
  lstm.hidden = "16,16";
  lstm.steps = 5;
  lstm.split = "layer";
  lstm.devices = "cpu=3";  // one more than the layers: left idle
  lstm.trace_path = dir.File("trace.json");
  nlohmann::json j = RunJson(lstm);
  ASSERT_TRUE(j.is_object()) << j;
  EXPECT_EQ(j["split"], "layer");
  EXPECT_EQ(j["devices"].size(), 2u) << j;
  EXPECT_GT(j["cross_device_bytes_per_step"].get<int64_t>(), 0);
  EXPECT_FALSE(j.contains("pipeline"));
  EXPECT_TRUE(std::ifstream(dir.File("trace.json")).good());

  TrainCommandOptions transformer = CharLm("char-transformer", text);
  transformer.blocks = 2;
  transformer.steps = 5;
  transformer.split = "layer";
  transformer.pipeline = 4;
  transformer.devices = "cpu=2";
  j = RunJson(transformer);
  ASSERT_TRUE(j.is_object()) << j;
  EXPECT_EQ(j["pipeline"], 4);
  EXPECT_DOUBLE_EQ(j["bubble_fraction_theory"].get<double>(), 1.0 / 5.0);
  EXPECT_GT(j["bubble_fraction"].get<double>(), 0.0);
  EXPECT_LT(j["bubble_fraction"].get<double>(), 1.0);

  // Real servers on 127.0.0.1: a tower per worker, the variables on the ps task.
  TrainCommandOptions towers = CharLm("char-lstm", text);
  towers.steps = 5;
  towers.cluster = "local:ps=1,worker=2";
  j = RunJson(towers);
  ASSERT_TRUE(j.is_object()) << j;
  EXPECT_EQ(j["replication"], "in-graph");
  EXPECT_EQ(j["towers"], 2);
  EXPECT_EQ(j["ps_tasks"], 1);
  EXPECT_EQ(j["devices"], (nlohmann::json{"/job:worker/task:0", "/job:worker/task:1"}));
  EXPECT_GT(j["cross_device_bytes_per_step"].get<int64_t>(), 0);
  EXPECT_LT(j["bits_per_char"].get<double>(), j["first_bits_per_char"].get<double>() + 1.0);

  // The same towers on a simulated cluster: the same flags give the same run.
  towers.cluster = "sim:ps=1,worker=2";
  j = RunJson(towers);
  ASSERT_TRUE(j.is_object()) << j;
  EXPECT_EQ(j["towers"], 2);
  EXPECT_EQ(j["invariant_violations"], 0);
  const nlohmann::json again = RunJson(towers);
  EXPECT_EQ(j["event_log_hash"], again["event_log_hash"]);
  EXPECT_EQ(j["bits_per_char"], again["bits_per_char"]);
}

TEST(CharLmCommandFlagsTest, BadFlagsAreNamed) {
  ScopedTempDir dir("char_lm");
  const std::string text = WriteText(dir);
  struct Case {
    std::string model;
    std::function<void(TrainCommandOptions*)> change;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"char-lstm", [](TrainCommandOptions* o) { o->text_path.clear(); }, "needs --text"},
      {"char-lstm", [](TrainCommandOptions* o) { o->text_path = "/nonexistent/t"; },
       "/nonexistent/t"},
      {"char-transformer", [](TrainCommandOptions* o) { o->heads = 3; },
       "3 heads do not divide the width 16"},
      {"char-lstm", [](TrainCommandOptions* o) { o->hidden = "32,x"; }, "--hidden '32,x'"},
      {"char-lstm", [](TrainCommandOptions* o) { o->seq_len = 0; }, "seq_len must be >= 1"},
      {"char-lstm", [](TrainCommandOptions* o) { o->seq_len = 5000; }, "--seq-len 5000"},
      {"char-lstm", [](TrainCommandOptions* o) { o->split = "towers"; },
       "its splits are none and layer"},
      {"char-lstm", [](TrainCommandOptions* o) { o->pipeline = 2; },
       "--pipeline needs --split layer"},
      {"char-transformer",
       [](TrainCommandOptions* o) {
         o->split = "layer";
         o->pipeline = 2;
         o->schedule = "gpipe";
       },
       "follow the dataflow"},
      {"char-lstm", [](TrainCommandOptions* o) { o->split = "layer"; },
       "--split layer needs at least 2 devices"},
      {"char-lstm",
       [](TrainCommandOptions* o) {
         o->cluster = "local:ps=1,worker=2";
         o->split = "layer";
       },
       "do not combine"},
      {"char-lstm",
       [](TrainCommandOptions* o) {
         o->cluster = "local:ps=1,worker=2";
         o->mode = "async";
       },
       "--mode async: its workers train synchronously"},
      {"char-lstm", [](TrainCommandOptions* o) { o->cluster = "sim:worker=2"; },
       "needs ps and worker tasks"},
      {"char-lstm", [](TrainCommandOptions* o) { o->cluster = "local:worker=2"; }, "ps"},
  };
  for (const Case& c : cases) {
    TrainCommandOptions options = CharLm(c.model, text);
    c.change(&options);
    std::ostringstream out, err;
    EXPECT_NE(TrainCommand(options, out, err, /*interactive=*/false), kExitOk) << c.message;
    EXPECT_THAT(err.str(), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
