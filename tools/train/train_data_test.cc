// The files that train and tune load: the bundled fallback, the label column, the
// checks that name a file and line, the number of classes, and the input functions.
#include "tools/train/train_data.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

namespace actorflow {
namespace cli {
namespace {

using ::testing::HasSubstr;

std::string WriteFile(const std::string& name, const std::string& contents) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(tmp ? tmp : "/tmp") + "/" + name;
  std::ofstream(path) << contents;
  return path;
}

TrainCommandOptions Files(const std::string& train, const std::string& test) {
  TrainCommandOptions options;
  options.train_path = train;
  options.test_path = test;
  return options;
}

TEST(LoadTrainingDataTest, WithoutFilesLoadsTheBundledIrisSplit) {
  auto data = LoadTrainingData(TrainCommandOptions());
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_THAT(data->train_path, HasSubstr("iris_training.csv"));
  EXPECT_EQ(data->train.features.dim(0), 120);
  EXPECT_EQ(data->test.features.dim(0), 30);
  EXPECT_EQ(data->train.feature_names.size(), 4u);
}

TEST(LoadTrainingDataTest, TheLabelDefaultsToTheLastColumnByName) {
  const std::string file = WriteFile("label_last.csv", "a,b, kind \n1,2,0\n3,4,1\n");
  auto data = LoadTrainingData(Files(file, file));
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->label_column, "kind");
  TrainCommandOptions by_name = Files(file, file);
  by_name.label = "a";
  auto other = LoadTrainingData(by_name);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->label_column, "a");
  EXPECT_EQ(other->train.feature_names, (std::vector<std::string>{"b", "kind"}));
}

TEST(LoadTrainingDataTest, TestFileWithOtherFeaturesNamesTheFirstDifferentColumn) {
  const std::string train = WriteFile("features_train.csv", "a,b,label\n1,2,0\n");
  const std::string test = WriteFile("features_test.csv", "a,c,label\n1,2,0\n");
  auto data = LoadTrainingData(Files(train, test));
  ASSERT_FALSE(data.ok());
  EXPECT_THAT(data.status().message(), HasSubstr("at column 2 ('c' instead of 'b')"))
      << data.status();
}

TEST(LoadTrainingDataTest, ATrainingFileWithoutRowsIsNamed) {
  const std::string empty = WriteFile("no_rows.csv", "a,b,label\n");
  const std::string test = WriteFile("some_rows.csv", "a,b,label\n1,2,0\n");
  auto data = LoadTrainingData(Files(empty, test));
  ASSERT_FALSE(data.ok());
  EXPECT_THAT(data.status().message(), HasSubstr(empty + ": no data rows")) << data.status();
}

TEST(ResolveClassesTest, DefaultsToTheLargestTrainingLabelPlusOneAndAtLeastTwo) {
  const std::string three = WriteFile("three.csv", "a,label\n1,0\n2,2\n");
  auto data = LoadTrainingData(Files(three, three));
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(*ResolveClasses(*data, 0), 3);
  EXPECT_EQ(*ResolveClasses(*data, 5), 5);
  const std::string zeros = WriteFile("zeros.csv", "a,label\n1,0\n2,0\n");
  auto one_class = LoadTrainingData(Files(zeros, zeros));
  ASSERT_TRUE(one_class.ok()) << one_class.status();
  EXPECT_EQ(*ResolveClasses(*one_class, 0), 2);
}

TEST(ResolveClassesTest, ALabelOutsideTheClassesNamesItsFileLineAndWhy) {
  const std::string train = WriteFile("in_range.csv", "a,label\n1,0\n2,1\n");
  const std::string test = WriteFile("out_of_range.csv", "a,label\n1,0\n\n2,4\n");
  auto data = LoadTrainingData(Files(train, test));
  ASSERT_TRUE(data.ok()) << data.status();
  auto inferred = ResolveClasses(*data, 0);
  ASSERT_FALSE(inferred.ok());
  EXPECT_THAT(inferred.status().message(), HasSubstr(test + ":4: label 4 is outside [0, 2)"))
      << inferred.status();
  EXPECT_THAT(inferred.status().message(), HasSubstr("set --classes")) << inferred.status();
  auto given = ResolveClasses(*data, 3);
  ASSERT_FALSE(given.ok());
  EXPECT_THAT(given.status().message(), HasSubstr("(--classes 3)")) << given.status();
}

TEST(TrainingInputTest, BatchesEveryRowOncePerPassForTheGivenEpochs) {
  const std::string file = WriteFile("five_rows.csv", "a,label\n1,0\n2,1\n3,0\n4,1\n5,0\n");
  auto data = LoadTrainingData(Files(file, file));
  ASSERT_TRUE(data.ok()) << data.status();
  auto dataset = TrainingInput(data->train, /*batch=*/2, /*seed=*/1, /*epochs=*/2)();
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  std::unique_ptr<Iterator> iterator = (*dataset)->MakeIterator();
  int64_t batches = 0;
  int64_t rows = 0;
  Element batch;
  Status status;
  while ((status = iterator->GetNext(&batch)).ok()) {
    ++batches;
    rows += batch[0].dim(0);
  }
  EXPECT_EQ(status.code(), Code::kOutOfRange) << status;
  EXPECT_EQ(batches, 6);  // 2 passes of batches 2, 2, 1
  EXPECT_EQ(rows, 10);
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
