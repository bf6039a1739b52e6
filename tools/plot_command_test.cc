#include "tools/plot_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "graph/status_testing.h"
#include "graph/test_files.h"
#include "training/summary/summary_writer.h"

namespace actorflow {
namespace cli {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

int Count(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

// A log directory as `train --logdir` leaves it: loss and learning_rate along the
// way, accuracy once at the end, for each of `workers` runs. Returns the last run's
// event file.
std::string WriteLogdir(const std::string& logdir, int workers) {
  std::string path;
  for (int w = 0; w < workers; ++w) {
    auto writer = SummaryWriter::Create(logdir + "/worker_" + std::to_string(w));
    EXPECT_OK(writer.status());
    if (!writer.ok()) return "";
    for (int step = 4; step <= 20; step += 4) {
      EXPECT_OK((*writer)->AddScalars(
          {{"learning_rate", 0.1f}, {"loss", 1.0f / static_cast<float>(step + w)}}, step));
    }
    EXPECT_OK((*writer)->AddScalar("accuracy", 0.9f, 20));
    path = (*writer)->path();
  }
  return path;
}

struct Result {
  int exit_code;
  std::string out, err;
};

Result Plot(const PlotCommandOptions& options) {
  std::ostringstream out, err;
  const int code = PlotCommand(options, out, err);
  return {code, out.str(), err.str()};
}

TEST(PlotCommandTest, DrawsEveryTagWithLossAndAccuracyFirst) {
  ScopedTempDir dir("plot");
  WriteLogdir(dir.File("L"), 3);
  const Result r = Plot({dir.File("L"), dir.File("c.svg"), {}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, IsEmpty());
  EXPECT_EQ(r.out, "wrote " + dir.File("c.svg") +
                       ": 3 runs (worker_0, worker_1, worker_2), 3 panels (loss, accuracy, "
                       "learning_rate)\n");
  const std::string svg = ReadTestFile(dir.File("c.svg"));
  EXPECT_THAT(svg, StartsWith("<?xml"));
  EXPECT_EQ(Count(svg, "<g class=\"panel\""), 3);
  EXPECT_EQ(Count(svg, "<polyline"), 6);                 // loss and learning_rate, 3 runs
  EXPECT_EQ(Count(svg, "<circle class=\"marker\""), 3);  // accuracy, logged once
  EXPECT_LT(svg.find(">loss</text>"), svg.find(">accuracy</text>"));
  EXPECT_LT(svg.find(">accuracy</text>"), svg.find(">learning_rate</text>"));
}

TEST(PlotCommandTest, TagsPicksThePanelsInTheGivenOrder) {
  ScopedTempDir dir("plot_tags");
  WriteLogdir(dir.File("L"), 2);
  const Result r = Plot({dir.File("L"), dir.File("c.svg"), {"accuracy", "loss"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string svg = ReadTestFile(dir.File("c.svg"));
  EXPECT_EQ(Count(svg, "<g class=\"panel\""), 2);
  EXPECT_EQ(Count(svg, "<polyline"), 2);
  EXPECT_LT(svg.find("bold\">accuracy</text>"), svg.find("bold\">loss</text>"));
  EXPECT_EQ(svg.find("learning_rate"), std::string::npos);
}

TEST(PlotCommandTest, RunsAreInNaturalOrder) {
  ScopedTempDir dir("plot_order");
  WriteLogdir(dir.File("L"), 11);
  const Result r = Plot({dir.File("L"), dir.File("c.svg"), {"loss"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(worker_0, worker_1, worker_2, worker_3, worker_4, worker_5, "
                               "worker_6, worker_7, worker_8, worker_9, worker_10)"));
}

TEST(PlotCommandTest, AnUnknownTagListsTheTagsThereAre) {
  ScopedTempDir dir("plot_unknown");
  WriteLogdir(dir.File("L"), 1);
  const Result r = Plot({dir.File("L"), dir.File("c.svg"), {"loss", "los_s"}});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, StartsWith("actorflow: NotFound: --tags: no run in " + dir.File("L") +
                                " logged the scalar 'los_s' (did you mean 'loss'?)"));
  EXPECT_THAT(r.err, HasSubstr("the tags there are: loss, accuracy, learning_rate"));
  EXPECT_FALSE(std::ifstream(dir.File("c.svg")).good());
}

TEST(PlotCommandTest, AnEmptyOrMissingLogdirNamesIt) {
  ScopedTempDir dir("plot_empty");
  Result r = Plot({dir.path(), dir.File("c.svg"), {}});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("no event files"));
  EXPECT_THAT(r.err, HasSubstr(dir.path()));
  EXPECT_EQ(Count(r.err, "\n"), 1);

  r = Plot({dir.File("nope"), dir.File("c.svg"), {}});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr(dir.File("nope")));
}

TEST(PlotCommandTest, AnUnwritableOutIsAnErrorNamingIt) {
  ScopedTempDir dir("plot_out");
  WriteLogdir(dir.File("L"), 1);
  const std::string out = dir.File("no/such/dir/c.svg");
  const Result r = Plot({dir.File("L"), out, {}});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("cannot write --out " + out));
  EXPECT_THAT(r.out, IsEmpty());
}

TEST(PlotCommandTest, ATruncatedEventFileIsAWarningAndItsRecordsAreDrawn) {
  ScopedTempDir dir("plot_truncated");
  const std::string file = WriteLogdir(dir.File("L"), 1);
  const std::string bytes = ReadTestFile(file);
  ASSERT_TRUE(WriteTestFile(file, bytes.substr(0, bytes.size() - 5)));  // loses accuracy
  const Result r = Plot({dir.File("L"), dir.File("c.svg"), {}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, StartsWith("warning: " + file + ": truncated record at offset"));
  EXPECT_THAT(r.out, HasSubstr("2 panels (loss, learning_rate)"));
}

TEST(PlotCommandTest, AMissingFlagIsAUsageError) {
  const Result r = Plot({"", "c.svg", {}});
  EXPECT_EQ(r.exit_code, kExitUsageError);
  EXPECT_THAT(r.err, HasSubstr("--logdir"));
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
