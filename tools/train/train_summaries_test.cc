#include "tools/train/train_summaries.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace actorflow {
namespace cli {
namespace {

using ::testing::HasSubstr;

std::string TempDir(const std::string& name) {
  const char* root = std::getenv("TEST_TMPDIR");
  const std::filesystem::path dir =
      std::filesystem::path(root != nullptr ? root : "/tmp") / ("train_summaries_test_" + name);
  std::filesystem::remove_all(dir);
  return dir.string();
}

// The one event file of a run directory.
std::string EventFileBytes(const std::string& run_dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(run_dir)) {
    files.push_back(entry.path());
  }
  EXPECT_EQ(files.size(), 1u) << run_dir;
  if (files.empty()) return "";
  std::ifstream in(files[0], std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int CountOccurrences(const std::string& bytes, const std::string& text) {
  int count = 0;
  for (size_t at = bytes.find(text); at != std::string::npos; at = bytes.find(text, at + 1)) {
    ++count;
  }
  return count;
}

TEST(TrainSummariesTest, WritesLossEveryTenthOfThePlannedStepsPerWorker) {
  const std::string logdir = TempDir("tenth");
  std::ostringstream warnings;
  {
    TrainSummaries summaries(logdir, 8, 0.1, warnings);
    for (int64_t step = 1; step <= 20; ++step) {
      summaries.Progress(0, step, 20, 1.0);
      if (step <= 10) summaries.Progress(1, step, 10, 1.0);
    }
    summaries.End(1, 10, {{"accuracy", 0.5f}});
  }
  EXPECT_EQ(warnings.str(), "");
  const std::string worker0 = EventFileBytes(logdir + "/worker_0");
  const std::string worker1 = EventFileBytes(logdir + "/worker_1");
  EXPECT_EQ(CountOccurrences(worker0, "loss"), 10);  // steps 2, 4, ..., 20
  EXPECT_EQ(CountOccurrences(worker0, "learning_rate"), 10);
  EXPECT_EQ(CountOccurrences(worker0, "accuracy"), 0);
  EXPECT_EQ(CountOccurrences(worker1, "loss"), 10);  // every step
  EXPECT_EQ(CountOccurrences(worker1, "accuracy"), 1);
}

TEST(TrainSummariesTest, WithoutALogdirWritesNothing) {
  std::ostringstream warnings;
  TrainSummaries summaries("", 8, 0.1, warnings);
  EXPECT_FALSE(summaries.enabled());
  summaries.Progress(0, 1, 1, 1.0);
  summaries.End(0, 1, {{"accuracy", 1.0f}});
  EXPECT_EQ(warnings.str(), "");
}

TEST(TrainSummariesTest, AnUnwritableLogdirWarnsOnceNamingIt) {
  const std::string dir = TempDir("blocked");
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/file";
  std::ofstream(file) << "x";
  std::ostringstream warnings;
  TrainSummaries summaries(file + "/L", 8, 0.1, warnings);
  for (int64_t step = 1; step <= 5; ++step) summaries.Progress(step % 2, step, 5, 1.0);
  summaries.End(0, 5, {{"accuracy", 1.0f}});
  EXPECT_THAT(warnings.str(), HasSubstr(file + "/L/worker_"));
  EXPECT_EQ(CountOccurrences(warnings.str(), "warning"), 1);
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
