// End-to-end tests of `actorflow train` and `actorflow predict`: the built binary runs
// as a child process (the actor runtime inside) on the bundled data sets and on bad
// input. Bad input must end in a non-zero exit (never a signal) with one stderr line
// that names the culprit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli_failure.h"
#include "tests/subprocess.h"

namespace actorflow {
namespace {

using nlohmann::json;
using subprocess::FailedWith;
using subprocess::ProcessResult;

ProcessResult RunActorflow(const std::vector<std::string>& args) {
  ProcessResult r = subprocess::RunProcess(subprocess::Runfile("tools/actorflow"), args);
  EXPECT_TRUE(r.started) << r.error;
  return r;
}

std::string Data(const std::string& file) { return subprocess::Runfile("examples/data/" + file); }

std::string TempPath(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(tmp ? tmp : "/tmp") + "/" + name;
  std::filesystem::remove_all(path);
  return path;
}

std::string WriteFile(const std::string& name, const std::string& contents) {
  const std::string path = TempPath(name);
  std::ofstream(path) << contents;
  return path;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// Runs a --json command that must succeed and returns the JSON object that is its
// only stdout line (progress goes to stderr).
json RunJson(const std::vector<std::string>& args) {
  const ProcessResult r = RunActorflow(args);
  EXPECT_TRUE(r.exited) << "killed by signal " << r.signal;
  EXPECT_EQ(r.exit_code, 0) << "stderr: " << r.err;
  EXPECT_EQ(r.err.find("actorflow: "), std::string::npos) << "stderr: " << r.err;
  const std::vector<std::string> lines = Lines(r.out);
  EXPECT_EQ(lines.size(), 1u) << "stdout: " << r.out;
  if (lines.empty()) {
    ADD_FAILURE() << "no output";
    return json();
  }
  json parsed = json::parse(lines.back(), nullptr, /*allow_exceptions=*/false);
  EXPECT_TRUE(parsed.is_object()) << "last line is not a JSON object: " << lines.back();
  return parsed;
}

TEST(TrainCliTest, WithNoFlagsTrainsIrisToTheTargetAccuracy) {
  json r = RunJson({"train", "--json"});
  for (const char* key : {"accuracy", "loss", "global_step", "seconds"}) {
    EXPECT_TRUE(r.contains(key)) << key << " missing from " << r.dump();
  }
  EXPECT_GE(r.value("accuracy", 0.0), 0.966) << r.dump();
  EXPECT_GT(r.value("loss", -1.0), 0.0);
  EXPECT_EQ(r.value("global_step", 0), 1000);
  EXPECT_GT(r.value("seconds", -1.0), 0.0);
}

TEST(TrainCliTest, TheSameSeedGivesTheSameAccuracyAndLossBitForBit) {
  json a = RunJson({"train", "--seed", "4", "--steps", "300", "--json"});
  json b = RunJson({"train", "--seed", "4", "--steps", "300", "--json"});
  json other = RunJson({"train", "--seed", "5", "--steps", "300", "--json"});
  EXPECT_EQ(a.at("accuracy").get<double>(), b.at("accuracy").get<double>());
  EXPECT_EQ(a.at("loss").get<double>(), b.at("loss").get<double>());
  EXPECT_EQ(a.at("train_loss").get<double>(), b.at("train_loss").get<double>());
  EXPECT_NE(a.at("loss").get<double>(), other.at("loss").get<double>());
}

TEST(TrainCliTest, WithoutATerminalProgressIsAPlainLineEveryTenthOfTheSteps) {
  const ProcessResult r = RunActorflow({"train", "--steps", "200"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find('\r'), std::string::npos);
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 11u) << r.out;
  EXPECT_EQ(lines[0].find(" 10% step 20/200  loss "), 0u) << lines[0];
  EXPECT_NE(lines[0].find("steps/s"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("ETA"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[9].find("100% step 200/200"), 0u) << lines[9];
  EXPECT_EQ(lines[10].find("test accuracy "), 0u) << lines[10];
}

TEST(TrainCliTest, EpochsCountPassesAndOverrideSteps) {
  // 120 rows in batches of 32: 4 steps a pass.
  json r = RunJson({"train", "--epochs", "3", "--steps", "999", "--json"});
  EXPECT_EQ(r.value("global_step", 0), 12);
}

TEST(TrainCliTest, DigitsWithNormalizationReachTheTarget) {
  json r =
      RunJson({"train", "--train", Data("digits_training.csv"), "--test", Data("digits_test.csv"),
               "--hidden", "128", "--normalize", "--seed", "2", "--json"});
  EXPECT_GE(r.value("accuracy", 0.0), 0.96) << r.dump();
  EXPECT_EQ(r.value("classes", 0), 10);
}

TEST(TrainCliTest, PredictNeedsOnlyTheCheckpointDirectory) {
  const std::string dir = TempPath("iris_model");
  json trained =
      RunJson({"train", "--steps", "300", "--normalize", "--checkpoint-dir", dir, "--json"});
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/latest"));

  json r =
      RunJson({"predict", "--checkpoint-dir", dir, "--input", Data("iris_test.csv"), "--json"});
  ASSERT_TRUE(r.contains("predictions")) << r.dump();
  const json& predictions = r.at("predictions");
  ASSERT_EQ(predictions.size(), 30u);
  for (const json& p : predictions) {
    const std::vector<double> probabilities = p.at("probabilities").get<std::vector<double>>();
    ASSERT_EQ(probabilities.size(), 3u);
    double sum = 0;
    for (double v : probabilities) sum += v;
    EXPECT_NEAR(sum, 1.0, 1e-5) << p.dump();
    const int64_t argmax =
        std::max_element(probabilities.begin(), probabilities.end()) - probabilities.begin();
    EXPECT_EQ(p.at("class").get<int64_t>(), argmax) << p.dump();
  }
  // The first test rows are setosa, versicolor, setosa, virginica.
  EXPECT_EQ(predictions[0].at("class"), 0);
  EXPECT_EQ(predictions[1].at("class"), 1);
  EXPECT_EQ(predictions[3].at("class"), 2);

  const ProcessResult text =
      RunActorflow({"predict", "--checkpoint-dir", dir, "--input", Data("iris_test.csv")});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(Lines(text.out).size(), 30u);
  EXPECT_EQ(text.out.find("row 1: class 0  probabilities "), 0u) << text.out;
}

TEST(TrainCliTest, BadCsvValuesNameTheFileLineAndColumn) {
  const std::string bad = WriteFile("bad_value.csv", "a,b,label\n1,2,0\n3,x,1\n");
  EXPECT_TRUE(
      FailedWith(RunActorflow({"train", "--train", bad, "--test", bad}), {bad + ":3:3", "'x'"}));
  const std::string missing = WriteFile("missing_column.csv", "a,b,label\n1,2,0\n3\n");
  EXPECT_TRUE(FailedWith(RunActorflow({"train", "--train", missing, "--test", missing}),
                         {missing + ":3:", "missing"}));
}

TEST(TrainCliTest, LabelOutOfRangeNamesTheLabelAndItsLine) {
  const std::string file = WriteFile("labels.csv", "a,b,label\n1,2,0\n3,4,5\n");
  EXPECT_TRUE(FailedWith(RunActorflow({"train", "--train", file, "--test", file, "--classes", "3"}),
                         {file + ":3", "label 5", "[0, 3)"}));
  EXPECT_TRUE(
      FailedWith(RunActorflow({"train", "--classes", "2"}), {"iris_training.csv", "label 2"}));
}

TEST(TrainCliTest, EmptyOrZeroHiddenUnitsAreUsageErrors) {
  EXPECT_TRUE(FailedWith(RunActorflow({"train", "--hidden", ""}), {"--hidden"}));
  EXPECT_TRUE(FailedWith(RunActorflow({"train", "--hidden", "0"}), {"--hidden", "0 units"}));
  EXPECT_TRUE(FailedWith(RunActorflow({"train", "--hidden", "10,0"}), {"--hidden", "layer 2"}));
}

TEST(TrainCliTest, UnknownOptimizerIsNamed) {
  EXPECT_TRUE(FailedWith(RunActorflow({"train", "--optimizer", "rmsprop"}), {"rmsprop", "adam"}));
}

TEST(TrainCliTest, CheckpointDirectoryThatCannotBeWrittenIsNamed) {
  const std::string file = WriteFile("not_a_directory", "x");
  EXPECT_TRUE(
      FailedWith(RunActorflow({"train", "--steps", "5", "--checkpoint-dir", file + "/model"}),
                 {file + "/model"}));
}

TEST(TrainCliTest, PredictWithoutAModelNamesTheDirectory) {
  const std::string dir = TempPath("no_model_here");
  EXPECT_TRUE(FailedWith(
      RunActorflow({"predict", "--checkpoint-dir", dir, "--input", Data("iris_test.csv")}), {dir}));
}

}  // namespace
}  // namespace actorflow
