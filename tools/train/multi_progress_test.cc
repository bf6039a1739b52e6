#include "tools/train/multi_progress.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace actorflow {
namespace cli {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;
using Clock = MultiProgress::Clock;
using std::chrono::milliseconds;

const Clock::time_point kStart{};

// The frame's lines, cursor-up escape included in the first; the text after the last
// "\n" (nothing, for a whole frame) is the last element.
std::vector<std::string> Lines(const std::string& frame) {
  std::vector<std::string> lines;
  size_t at = 0;
  for (size_t end; (end = frame.find('\n', at)) != std::string::npos; at = end + 1) {
    lines.push_back(frame.substr(at, end - at));
  }
  lines.push_back(frame.substr(at));
  return lines;
}

TEST(MultiProgressTest, TheFirstStepDrawsOneLinePerWorkerWithoutMovingTheCursor) {
  MultiProgress bars(/*workers=*/3, /*batch_size=*/10, kStart);
  const std::string frame = bars.Update(1, 1, 100, 0.5, kStart + milliseconds(10));
  const std::vector<std::string> lines = Lines(frame);
  ASSERT_EQ(lines.size(), 4u) << frame;
  EXPECT_THAT(lines[3], IsEmpty());
  EXPECT_THAT(frame, Not(HasSubstr("A\r")));  // no cursor-up before the first frame
  EXPECT_EQ(lines[0], "\rworker 0 [....................] waiting for its first step\033[K");
  EXPECT_THAT(lines[1], StartsWith("\rworker 1 [....................]   1% 1/100"));
  EXPECT_THAT(lines[1], HasSubstr("loss 0.5000"));
  EXPECT_EQ(lines[2], "\rworker 2 [....................] waiting for its first step\033[K");
}

TEST(MultiProgressTest, ARedrawMovesTheCursorUpOverThePreviousFrame) {
  MultiProgress bars(/*workers=*/2, /*batch_size=*/10, kStart);
  ASSERT_THAT(bars.Update(0, 1, 100, 1.0, kStart), Not(IsEmpty()));
  const std::string frame = bars.Update(1, 1, 100, 1.0, kStart + milliseconds(100));
  ASSERT_THAT(frame, StartsWith("\033[2A\r"));
  const std::vector<std::string> lines = Lines(frame);
  ASSERT_EQ(lines.size(), 3u) << frame;
  EXPECT_THAT(lines[0], StartsWith("\033[2A\rworker 0 "));
  EXPECT_THAT(lines[1], StartsWith("\rworker 1 "));
  for (int i = 0; i < 2; ++i) EXPECT_THAT(lines[i], testing::EndsWith("\033[K"));
}

TEST(MultiProgressTest, NoRedrawWithin100MillisecondsOfTheLastFrame) {
  MultiProgress bars(/*workers=*/2, /*batch_size=*/10, kStart);
  ASSERT_THAT(bars.Update(0, 1, 100, 1.0, kStart + milliseconds(5)), Not(IsEmpty()));
  EXPECT_THAT(bars.Update(1, 1, 100, 1.0, kStart + milliseconds(6)), IsEmpty());
  EXPECT_THAT(bars.Update(0, 2, 100, 1.0, kStart + milliseconds(104)), IsEmpty());
  EXPECT_THAT(bars.Update(1, 2, 100, 1.0, kStart + milliseconds(105)), Not(IsEmpty()));
  // The interval counts from that redraw, not from the first frame.
  EXPECT_THAT(bars.Update(0, 3, 100, 1.0, kStart + milliseconds(204)), IsEmpty());
  EXPECT_THAT(bars.Update(0, 4, 100, 1.0, kStart + milliseconds(205)), Not(IsEmpty()));
}

TEST(MultiProgressTest, ShowsTheMeanLossOfTheStepsSinceThePreviousFrame) {
  MultiProgress bars(/*workers=*/1, /*batch_size=*/10, kStart);
  EXPECT_THAT(bars.Update(0, 1, 100, 9.0, kStart), HasSubstr("loss 9.0000"));
  EXPECT_THAT(bars.Update(0, 2, 100, 2.0, kStart + milliseconds(40)), IsEmpty());
  EXPECT_THAT(bars.Update(0, 3, 100, 4.0, kStart + milliseconds(80)), IsEmpty());
  EXPECT_THAT(bars.Update(0, 4, 100, 6.0, kStart + milliseconds(120)), HasSubstr("loss 4.0000"));
}

TEST(MultiProgressTest, ShowsTheBarStepExamplesPerSecondAndEta) {
  MultiProgress bars(/*workers=*/1, /*batch_size=*/32, kStart);
  // 50 of 100 steps of 32 rows in 4 s: 400 examples/s; 50 steps left at 12.5 steps/s.
  const std::string frame = bars.Update(0, 50, 100, 0.25, kStart + milliseconds(4000));
  EXPECT_EQ(frame,
            "\rworker 0 [##########..........]  50% 50/100  400 ex/s  loss 0.2500  ETA 4.0s"
            "\033[K\n");
}

TEST(MultiProgressTest, ALongEtaIsInMinutes) {
  MultiProgress bars(/*workers=*/1, /*batch_size=*/1, kStart);
  EXPECT_THAT(bars.Update(0, 1, 1000, 0.1, kStart + milliseconds(1000)), HasSubstr("ETA 16m39s"));
}

TEST(MultiProgressTest, FinishDrawsTheFinalFrameAtOnceAndOnlyOnce) {
  MultiProgress bars(/*workers=*/2, /*batch_size=*/10, kStart);
  ASSERT_THAT(bars.Update(0, 399, 400, 1.0, kStart + milliseconds(1000)), Not(IsEmpty()));
  // The last steps come within the redraw interval: no frame until Finish.
  EXPECT_THAT(bars.Update(0, 400, 400, 1.0, kStart + milliseconds(1010)), IsEmpty());
  EXPECT_THAT(bars.Update(1, 400, 400, 1.0, kStart + milliseconds(1020)), IsEmpty());
  const std::string final_frame = bars.Finish(kStart + milliseconds(1030));
  const std::vector<std::string> lines = Lines(final_frame);
  ASSERT_EQ(lines.size(), 3u) << final_frame;
  EXPECT_THAT(lines[0], StartsWith("\033[2A\rworker 0 [####################] 100% 400/400"));
  EXPECT_THAT(lines[1], StartsWith("\rworker 1 [####################] 100% 400/400"));
  EXPECT_THAT(lines[0], HasSubstr("ETA 0.0s"));
  EXPECT_THAT(bars.Finish(kStart + milliseconds(2000)), IsEmpty());
  EXPECT_THAT(bars.Update(0, 401, 400, 1.0, kStart + milliseconds(3000)), IsEmpty());
}

TEST(MultiProgressTest, FinishWithoutAnyStepStillDrawsEveryWorker) {
  MultiProgress bars(/*workers=*/2, /*batch_size=*/10, kStart);
  const std::vector<std::string> lines = Lines(bars.Finish(kStart + milliseconds(10)));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_THAT(lines[0], HasSubstr("worker 0 [....................] waiting"));
  EXPECT_THAT(lines[1], HasSubstr("worker 1 [....................] waiting"));
}

TEST(MultiProgressTest, AStepBeyondThePlanFillsTheBarAndAnUnknownPlanShowsTheStep) {
  MultiProgress bars(/*workers=*/3, /*batch_size=*/10, kStart);
  EXPECT_THAT(bars.Update(7, 1, 10, 1.0, kStart), IsEmpty());  // no worker 7: ignored
  bars.Update(0, 12, 10, 1.0, kStart + milliseconds(1000));
  bars.Update(1, 5, 0, 1.0, kStart + milliseconds(1000));
  const std::vector<std::string> lines = Lines(bars.Finish(kStart + milliseconds(1000)));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_THAT(lines[0], HasSubstr("[####################] 100% 12/10"));
  EXPECT_THAT(lines[1], HasSubstr("[....................] step 5  50 ex/s"));
  EXPECT_THAT(lines[1], Not(HasSubstr("ETA")));
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
