// End-to-end test of `actorflow plot`: `actorflow train --logdir` on a local cluster
// of two workers, then the plot of that log directory, both as processes; and the
// errors a user meets (no event files, an unknown tag).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "graph/test_files.h"
#include "tests/subprocess.h"

namespace actorflow {
namespace {

using subprocess::ProcessResult;
using ::testing::HasSubstr;
using ::testing::StartsWith;

ProcessResult RunActorflow(const std::vector<std::string>& args) {
  ProcessResult r = subprocess::RunProcess(subprocess::Runfile("tools/actorflow"), args);
  EXPECT_TRUE(r.started) << r.error;
  EXPECT_TRUE(r.exited) << "killed by signal " << r.signal << "; stderr: " << r.err;
  return r;
}

int Count(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

TEST(PlotCliTest, PlotsTheLossOfBothWorkersOfATrainingRun) {
  const std::string logdir = NewTestTempDir("L");
  const ProcessResult train = RunActorflow(
      {"train", "--cluster", "local:ps=1,worker=2", "--logdir", logdir, "--steps", "40"});
  ASSERT_EQ(train.exit_code, 0) << train.err;

  const std::string out = TestTempPath("curves.svg");
  const ProcessResult plot = RunActorflow({"plot", "--logdir", logdir, "--out", out});
  ASSERT_EQ(plot.exit_code, 0) << plot.err;
  EXPECT_THAT(plot.out, StartsWith("wrote " + out + ": 2 runs (worker_0, worker_1), "));
  EXPECT_THAT(plot.out, HasSubstr("panels (loss, accuracy, "));
  const std::string svg = ReadTestFile(out);
  EXPECT_THAT(svg, StartsWith("<?xml"));
  EXPECT_THAT(svg, HasSubstr("</svg>"));
  EXPECT_THAT(svg, HasSubstr("font-size=\"12\">worker_0</text>"));
  EXPECT_THAT(svg, HasSubstr("font-size=\"12\">worker_1</text>"));

  // Only the loss: one curve per worker.
  const std::string loss_out = TestTempPath("loss.svg");
  const ProcessResult loss =
      RunActorflow({"plot", "--logdir", logdir, "--out", loss_out, "--tags", "loss"});
  ASSERT_EQ(loss.exit_code, 0) << loss.err;
  const std::string loss_svg = ReadTestFile(loss_out);
  EXPECT_EQ(Count(loss_svg, "<polyline"), 2) << loss_svg;
  EXPECT_EQ(Count(loss_svg, "<polyline data-series=\"worker_0\""), 1);
  EXPECT_EQ(Count(loss_svg, "<polyline data-series=\"worker_1\""), 1);
  EXPECT_THAT(loss_svg, HasSubstr("font-weight=\"bold\">loss</text>"));
}

TEST(PlotCliTest, ALogdirWithoutEventFilesIsAnErrorNamingIt) {
  const std::string logdir = NewTestTempDir("empty");
  const ProcessResult r =
      RunActorflow({"plot", "--logdir", logdir, "--out", TestTempPath("c.svg")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, StartsWith("actorflow: NotFound: no event files"));
  EXPECT_THAT(r.err, HasSubstr(logdir));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace actorflow
