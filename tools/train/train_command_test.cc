// `actorflow train` through its C++ entry point, on the bundled Iris split: where the
// progress and the result go (stdout is the JSON line alone under --json), and the
// line that says how a cluster turns --steps into epochs.
#include "tools/train/train_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "graph/test_files.h"
#include "tools/train/predict_command.h"
#include "tools/train/train_cluster.h"
#include "tools/train/train_flags.h"

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

// --model cnn --split towers --devices cpu=2 on the digits, at the cnn's defaults
// (those a command line without the tuned flags gets).
TrainCommandOptions DigitsCnnOnTwoTowers() {
  TrainCommandOptions options;
  options.train_path = TestDataFile("digits_training.csv");
  options.test_path = TestDataFile("digits_test.csv");
  options.normalize = true;
  options.model = "cnn";
  options.split = "towers";
  options.devices = "cpu=2";
  options.json = true;
  ApplyModelDefaults([](const std::string&) { return false; }, &options);
  return options;
}

TEST(TrainCommandTest, CnnTowersOnTwoCpusLearnTheDigitsAndReportTheirTraffic) {
  ScopedTempDir dir("cnn_towers");
  TrainCommandOptions options = DigitsCnnOnTwoTowers();
  options.checkpoint_dir = dir.path();
  std::ostringstream out, err;
  ASSERT_EQ(TrainCommand(options, out, err, /*interactive=*/false), kExitOk) << err.str();
  const nlohmann::json j = nlohmann::json::parse(out.str());
  EXPECT_GE(j["accuracy"].get<double>(), 0.95) << out.str();
  EXPECT_EQ(j["model"], "cnn");
  EXPECT_EQ(j["split"], "towers");
  EXPECT_EQ(j["devices"], (nlohmann::json{"/job:localhost/replica:0/task:0/device:CPU:0",
                                          "/job:localhost/replica:0/task:0/device:CPU:1"}));
  // Per step of 32 rows: the input [32, 64] to tower 1, its features [32, 64] to the
  // head and their gradient back, float32; then only scalars and control signals.
  const int64_t bytes = j["cross_device_bytes_per_step"].get<int64_t>();
  EXPECT_GE(bytes, 3 * 32 * 64 * 4) << out.str();
  EXPECT_LT(bytes, 3 * 32 * 64 * 4 + 256) << out.str();
  EXPECT_THAT(err.str(), HasSubstr("bytes cross devices per step")) << err.str();

  // predict rebuilds the towers from model.json on the default device alone.
  PredictCommandOptions predict;
  predict.checkpoint_dir = dir.path();
  predict.input_path = TestDataFile("digits_test.csv");
  predict.json = true;
  std::ostringstream predicted, predict_err;
  ASSERT_EQ(PredictCommand(predict, predicted, predict_err), kExitOk) << predict_err.str();
  EXPECT_EQ(nlohmann::json::parse(predicted.str())["predictions"].size(), 360u);
}

TEST(TrainCommandTest, MlpJsonNamesTheModelAndItsOneDevice) {
  TrainCommandOptions options = ShortRun();
  options.json = true;
  std::ostringstream out, err;
  ASSERT_EQ(TrainCommand(options, out, err, /*interactive=*/false), kExitOk) << err.str();
  const nlohmann::json j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["model"], "mlp");
  EXPECT_EQ(j["split"], "none");
  EXPECT_EQ(j["devices"].size(), 1u);
  EXPECT_EQ(j["cross_device_bytes_per_step"], 0);
}

TEST(TrainCommandTest, SplitsThatCannotRunAreUsageErrorsNamingTheDevices) {
  TrainCommandOptions one_cpu = DigitsCnnOnTwoTowers();
  one_cpu.devices = "cpu=1";
  std::ostringstream out, err;
  EXPECT_EQ(TrainCommand(one_cpu, out, err, false), kExitUsageError);
  EXPECT_THAT(err.str(), HasSubstr("needs 2 devices")) << err.str();
  EXPECT_THAT(err.str(), HasSubstr("device:CPU:0")) << err.str();
  EXPECT_THAT(err.str(), HasSubstr("--devices cpu=2")) << err.str();

  TrainCommandOptions rnn_towers = DigitsCnnOnTwoTowers();
  rnn_towers.model = "rnn";
  std::ostringstream out2, err2;
  EXPECT_EQ(TrainCommand(rnn_towers, out2, err2, false), kExitUsageError);
  EXPECT_THAT(err2.str(), HasSubstr("the rnn has splits none, layer")) << err2.str();

  TrainCommandOptions clustered = ShortRun();
  clustered.split = "layer";
  clustered.cluster = "local:ps=1,worker=2";
  std::ostringstream out3, err3;
  EXPECT_EQ(TrainCommand(clustered, out3, err3, false), kExitUsageError);
  EXPECT_THAT(err3.str(), HasSubstr("--cluster trains --model mlp, cnn, rnn, convnet or convnet-bn"))
      << err3.str();
}

// The convolutional and recurrent classifiers train data-parallel like the MLP: a
// ps task and two worker threads on real servers of this process, synchronous steps,
// and a checkpoint that predict reads back (its model.json names the model).
TEST(TrainCommandTest, CnnAndRnnTrainOnALocalClusterAndCheckpointTheirModel) {
  for (const std::string model : {"cnn", "rnn"}) {
    ScopedTempDir dir("cluster_" + model);
    TrainCommandOptions options = DigitsCnnOnTwoTowers();
    options.model = model;
    options.split = "none";
    options.devices = "";
    options.cluster = "local:ps=1,worker=2";
    options.mode = "sync";
    options.epochs = 2;
    options.checkpoint_dir = dir.path();
    std::ostringstream out, err;
    ASSERT_EQ(TrainCommand(options, out, err, /*interactive=*/false), kExitOk) << model << err.str();
    const nlohmann::json j = nlohmann::json::parse(out.str());
    EXPECT_GE(j["accuracy"].get<double>(), 0.85) << model << out.str();
    EXPECT_EQ(j["workers"], 2) << out.str();
    EXPECT_EQ(j["updates_applied"], j["global_step"]) << out.str();
    std::ifstream spec(dir.path() + "/model.json");
    std::stringstream text;
    text << spec.rdbuf();
    EXPECT_THAT(text.str(), HasSubstr("\"" + model + "\"")) << text.str();
  }
}

TEST(TrainCommandTest, PipelinedLayerSplitTrainsTheDigitsAndReportsItsBubble) {
  // 1437 rows in batches of 32: the epoch's last batch of 29 rows is cut into
  // micro-batches at run time too.
  TrainCommandOptions options;
  options.train_path = TestDataFile("digits_training.csv");
  options.test_path = TestDataFile("digits_test.csv");
  options.normalize = true;
  options.split = "layer";
  options.devices = "cpu=2";
  options.hidden = "64,64";
  options.epochs = 1;
  options.pipeline = 4;
  options.schedule = "gpipe";
  options.json = true;
  std::ostringstream out, err;
  ASSERT_EQ(TrainCommand(options, out, err, /*interactive=*/false), kExitOk) << err.str();
  const nlohmann::json j = nlohmann::json::parse(out.str());
  EXPECT_GE(j["accuracy"].get<double>(), 0.8) << out.str();
  EXPECT_EQ(j["pipeline"], 4);
  EXPECT_EQ(j["schedule"], "gpipe");
  const double bubble = j["bubble_fraction"].get<double>();
  EXPECT_GT(bubble, 0.0) << out.str();
  EXPECT_LT(bubble, 1.0) << out.str();
  EXPECT_DOUBLE_EQ(j["bubble_fraction_theory"].get<double>(), 1.0 / 5.0);
  EXPECT_EQ(j["devices"].size(), 2u);
}

TEST(TrainCommandTest, PipelineFlagsThatCannotWorkAreUsageErrors) {
  TrainCommandOptions uneven = ShortRun();
  uneven.split = "layer";
  uneven.devices = "cpu=2";
  uneven.pipeline = 5;
  std::ostringstream out, err;
  EXPECT_EQ(TrainCommand(uneven, out, err, false), kExitUsageError);
  EXPECT_THAT(err.str(), HasSubstr("--pipeline 5 --batch 32")) << err.str();
  EXPECT_EQ(LineCount(err.str()), 1) << err.str();

  TrainCommandOptions schedule_alone = ShortRun();
  schedule_alone.schedule = "1f1b";
  std::ostringstream out2, err2;
  EXPECT_EQ(TrainCommand(schedule_alone, out2, err2, false), kExitUsageError);
  EXPECT_THAT(err2.str(), HasSubstr("--schedule 1f1b")) << err2.str();
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
