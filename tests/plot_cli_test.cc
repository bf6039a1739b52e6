// End-to-end test of `actorflow plot`: `actorflow train --logdir` on a local cluster
// of two workers, then the plot of that log directory, both as processes; the plot as
// headless Chromium (Debian's `chromium`, installed by tools/setup.sh) renders it;
// and the errors a user meets (no event files, an unknown tag).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "graph/test_files.h"
#include "tests/subprocess.h"

namespace actorflow {
namespace {

using subprocess::ProcessResult;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kChromium[] = "/usr/bin/chromium";

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

// Headless Chromium on `file` with `flags` (bounded by RunProcess); its own profile
// directory under TEST_TMPDIR.
ProcessResult RunChromium(const std::vector<std::string>& flags, const std::string& file) {
  std::vector<std::string> args = {"--headless", "--no-sandbox", "--disable-gpu",
                                   "--user-data-dir=" + std::string(std::getenv("TEST_TMPDIR")) +
                                       "/chromium"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back("file://" + file);
  ProcessResult r = subprocess::RunProcess(kChromium, args);
  EXPECT_TRUE(r.started) << r.error;
  EXPECT_TRUE(r.exited) << r.error;
  return r;
}

int64_t FileSize(const std::string& path) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  return file ? static_cast<int64_t>(file.tellg()) : -1;
}

// Trains two workers for 40 steps under a log directory, once for the suite.
class PlotOfATrainingRunTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    logdir_ = new std::string(NewTestTempDir("L"));
    const ProcessResult train = RunActorflow(
        {"train", "--cluster", "local:ps=1,worker=2", "--logdir", *logdir_, "--steps", "40"});
    trained_ = train.exit_code == 0;
    EXPECT_TRUE(trained_) << train.err;
  }
  static void TearDownTestSuite() {
    delete logdir_;
    logdir_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(trained_) << "actorflow train --logdir failed"; }

  static std::string* logdir_;
  static bool trained_;
};

std::string* PlotOfATrainingRunTest::logdir_ = nullptr;
bool PlotOfATrainingRunTest::trained_ = false;

TEST_F(PlotOfATrainingRunTest, PlotsTheLossOfBothWorkersOfATrainingRun) {
  const std::string& logdir = *logdir_;
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

TEST_F(PlotOfATrainingRunTest, HeadlessChromiumRendersThePlotWithoutAnXmlError) {
  if (access(kChromium, X_OK) != 0) GTEST_SKIP() << kChromium << " missing: run tools/setup.sh";
  const std::string out = TestTempPath("rendered.svg");
  const ProcessResult plot = RunActorflow({"plot", "--logdir", *logdir_, "--out", out});
  ASSERT_EQ(plot.exit_code, 0) << plot.err;

  // The DOM Chromium built from the file: an SVG document, not its XML error page.
  const ProcessResult dom = RunChromium({"--dump-dom"}, out);
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  EXPECT_THAT(dom.out, HasSubstr("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_THAT(dom.out, Not(HasSubstr("This page contains the following errors")));
  EXPECT_THAT(dom.out, Not(HasSubstr("parsererror")));
  for (const std::string worker : {"worker_0", "worker_1"}) {
    const std::regex curve("<polyline data-series=\"" + worker +
                           "\"[^>]*points=\"[0-9.]+,[0-9.]+ [0-9.]+,[0-9.]+");
    EXPECT_TRUE(std::regex_search(dom.out, curve)) << worker << ":\n" << dom.out;
    EXPECT_THAT(dom.out, HasSubstr(">" + worker + "</text>"));
  }

  // A screenshot of the plot (curves, axes, text) holds far more than one of a blank
  // SVG of the same size (about 58 KB against 4.5 KB).
  std::smatch size;
  const std::string svg = ReadTestFile(out);
  ASSERT_TRUE(std::regex_search(svg, size, std::regex("<svg [^>]*width=\"([0-9.]+)\" "
                                                      "height=\"([0-9.]+)\"")));
  const std::string blank = TestTempPath("blank.svg");
  ASSERT_TRUE(WriteTestFile(blank, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                                   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                                       size[1].str() + "\" height=\"" + size[2].str() +
                                       "\"><rect width=\"100%\" height=\"100%\" "
                                       "fill=\"white\"/></svg>\n"));
  const std::string tmp = std::getenv("TEST_TMPDIR");
  const std::string curves_png = tmp + "/curves.png";
  const std::string blank_png = tmp + "/blank.png";
  const ProcessResult shot =
      RunChromium({"--screenshot=" + curves_png, "--window-size=1200,800"}, out);
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  const ProcessResult blank_shot =
      RunChromium({"--screenshot=" + blank_png, "--window-size=1200,800"}, blank);
  ASSERT_EQ(blank_shot.exit_code, 0) << blank_shot.err;
  const int64_t blank_bytes = FileSize(blank_png);
  ASSERT_GT(blank_bytes, 0) << blank_shot.err;
  EXPECT_GT(FileSize(curves_png), 2 * blank_bytes) << shot.err;
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
