// The test kit's lowest layer: the Status assertions fail, with the Status in the
// message, exactly when the Status is an error; the file helpers make, find and
// remove what they promise.
#include "graph/status_testing.h"

#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>

#include <filesystem>
#include <memory>
#include <string>

#include "graph/test_files.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

StatusOr<int> Answer() { return 42; }
StatusOr<int> NoAnswer() { return NotFound("no answer in 'deep_thought'"); }
StatusOr<std::unique_ptr<int>> MoveOnly() { return std::make_unique<int>(7); }

TEST(StatusTestingTest, OkPassesForStatusAndStatusOr) {
  EXPECT_OK(Status::OK());
  ASSERT_OK(Status::OK());
  EXPECT_OK(Answer());
  ASSERT_OK(Answer());
}

TEST(StatusTestingTest, ExpectOkFailsWithTheStatusMessage) {
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(InvalidArgument("bad feed 'x'")), "bad feed 'x'");
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(NoAnswer()), "no answer in 'deep_thought'");
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(NoAnswer()), "NoAnswer()");
}

void AssertOkOnError() { ASSERT_OK(Aborted("step 3 aborted")); }
void AssertOkAndAssignOnError() {
  ASSERT_OK_AND_ASSIGN(auto value, NoAnswer());
  (void)value;
}

TEST(StatusTestingTest, AssertOkFailsFatallyWithTheStatusMessage) {
  EXPECT_FATAL_FAILURE(AssertOkOnError(), "step 3 aborted");
  EXPECT_FATAL_FAILURE(AssertOkAndAssignOnError(), "no answer in 'deep_thought'");
  EXPECT_FATAL_FAILURE(AssertOkAndAssignOnError(), "NoAnswer()");
}

TEST(StatusTestingTest, AssertOkAndAssignDeclaresOrAssigns) {
  ASSERT_OK_AND_ASSIGN(auto declared, Answer());
  EXPECT_EQ(declared, 42);
  int assigned = 0;
  ASSERT_OK_AND_ASSIGN(assigned, Answer());
  EXPECT_EQ(assigned, 42);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<int> moved, MoveOnly());
  ASSERT_NE(moved, nullptr);
  EXPECT_EQ(*moved, 7);
  // Two on one scope (distinct temporaries).
  ASSERT_OK_AND_ASSIGN(auto first, Answer());
  ASSERT_OK_AND_ASSIGN(auto second, Answer());
  EXPECT_EQ(first + second, 84);
}

TEST(TestFilesTest, RunfilesFindTheBundledData) {
  EXPECT_TRUE(std::filesystem::exists(TestDataFile("iris_training.csv")))
      << TestDataFile("iris_training.csv");
  EXPECT_EQ(TestDataFile("iris_test.csv"), TestRunfile("examples/data/iris_test.csv"));
}

TEST(TestFilesTest, TempDirsAreUniqueAndScopedOnesAreRemoved) {
  const std::string kept = NewTestTempDir("kept");
  ASSERT_FALSE(kept.empty());
  EXPECT_NE(kept, NewTestTempDir("kept"));
  EXPECT_THAT(kept, HasSubstr(TestTempRoot()));
  std::string removed;
  {
    ScopedTempDir dir("scoped");
    ASSERT_TRUE(dir.ok());
    removed = dir.path();
    ASSERT_TRUE(WriteTestFile(dir.File("a.txt"), "hello"));
    EXPECT_EQ(ReadTestFile(dir.File("a.txt")), "hello");
    EXPECT_TRUE(std::filesystem::exists(removed));
  }
  EXPECT_FALSE(std::filesystem::exists(removed)) << removed;
  EXPECT_TRUE(std::filesystem::exists(kept)) << kept;
  EXPECT_FALSE(WriteTestFile(removed + "/gone/b.txt", "x"));
}

}  // namespace
}  // namespace actorflow
