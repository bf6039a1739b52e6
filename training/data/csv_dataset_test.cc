#include "training/data/csv_dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "kernels/direct_session.h"
#include "training/data/dataset_test_util.h"
#include "training/data/iterator_ops.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

TEST(CsvTest, LoadsTheIrisTrainingSet) {
  auto data = LoadCsv(DataPath("iris_training.csv"));
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->features.dtype(), DType::kFloat32);
  EXPECT_EQ(data->features.shape(), (Shape{120, 4}));
  EXPECT_EQ(data->labels.dtype(), DType::kInt32);
  EXPECT_EQ(data->labels.shape(), (Shape{120}));
  EXPECT_EQ(data->feature_names, (std::vector<std::string>{"sepal_length_cm", "sepal_width_cm",
                                                           "petal_length_cm", "petal_width_cm"}));
  std::vector<int> per_class(3, 0);
  for (double label : Values(data->labels)) {
    ASSERT_TRUE(label >= 0 && label <= 2) << label;
    ++per_class[static_cast<int>(label)];
  }
  EXPECT_EQ(per_class, (std::vector<int>{40, 40, 40}));
  // The first row: 4.8,3,1.4,0.3,0
  EXPECT_FLOAT_EQ(data->features.data<float>()[0], 4.8f);
  EXPECT_FLOAT_EQ(data->features.data<float>()[3], 0.3f);
}

TEST(CsvTest, DatasetYieldsTheSameRowsAsLoadCsv) {
  auto data = LoadCsv(DataPath("iris_test.csv"));
  auto ds = CsvDataset(DataPath("iris_test.csv"));
  ASSERT_TRUE(data.ok() && ds.ok());
  EXPECT_EQ((*ds)->output_shapes(), (std::vector<Shape>{Shape{4}, Shape{}}));
  std::vector<Element> rows = Drain(**ds);
  ASSERT_EQ(rows.size(), 30u);
  std::vector<double> all = Values(data->features);
  for (size_t r = 0; r < rows.size(); ++r) {
    EXPECT_EQ(Values(rows[r][0]),
              std::vector<double>(all.begin() + 4 * r, all.begin() + 4 * r + 4));
    EXPECT_EQ(rows[r][1].ElementAsDouble(0), data->labels.ElementAsDouble(r));
  }
}

TEST(CsvTest, LoadsTheDigitsSets) {
  auto train = LoadCsv(DataPath("digits_training.csv"));
  auto test = LoadCsv(DataPath("digits_test.csv"));
  ASSERT_TRUE(train.ok() && test.ok()) << train.status() << test.status();
  EXPECT_EQ(train->features.shape(), (Shape{1437, 64}));
  EXPECT_EQ(test->features.shape(), (Shape{360, 64}));
  std::vector<double> labels = Values(train->labels);
  EXPECT_EQ(*std::max_element(labels.begin(), labels.end()), 9);
}

TEST(CsvTest, FeedsAGraphThroughABatchedIterator) {
  auto ds = CsvDataset(DataPath("iris_training.csv"));
  ASSERT_TRUE(ds.ok()) << ds.status();
  Scope root = Scope::NewRootScope();
  std::vector<Output> next =
      MakeOneShotIterator(root, (*ds)->Shuffle(120, 1)->Batch(32)->Prefetch(2)).GetNext();
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = NewDirectSession(root.graph()).value();
  int rows = 0;
  std::vector<Tensor> out;
  Status s;
  while ((s = session->Run({}, {next[0].name(), next[1].name()}, {}, &out)).ok()) {
    EXPECT_EQ(out[0].dim(1), 4);
    EXPECT_EQ(out[0].dim(0), out[1].dim(0));
    rows += static_cast<int>(out[1].dim(0));
  }
  EXPECT_EQ(s.code(), Code::kOutOfRange) << s;
  EXPECT_EQ(rows, 120);
}

TEST(CsvTest, ChoosesTheLabelColumnByName) {
  const std::string path = WriteTempFile("label_first.csv", "y,a,b\n1,2.5,3\n0,4,5\n");
  CsvOptions options;
  options.label_column = "y";
  auto data = LoadCsv(path, options);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->feature_names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Values(data->features), (std::vector<double>{2.5, 3, 4, 5}));
  EXPECT_EQ(Values(data->labels), (std::vector<double>{1, 0}));
}

TEST(CsvTest, ReadsFilesWithoutAHeaderAndWithBlankLinesAndCrLf) {
  const std::string path = WriteTempFile("no_header.csv", "1, 2 ,0\r\n\r\n3,4,1\r\n\n");
  CsvOptions options;
  options.has_header = false;
  auto data = LoadCsv(path, options);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->feature_names, (std::vector<std::string>{"column_1", "column_2"}));
  EXPECT_EQ(Values(data->features), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(Values(data->labels), (std::vector<double>{0, 1}));
}

TEST(CsvErrorTest, AMissingColumnNamesFileLineAndColumn) {
  const std::string path = WriteTempFile("missing.csv", "a,b,label\n1,2,0\n3,4\n");
  auto data = LoadCsv(path);
  ASSERT_EQ(data.status().code(), Code::kInvalidArgument);
  // Line 3, "3,4" ends at character 3: the missing field would start at character 4.
  EXPECT_THAT(data.status().message(), HasSubstr(path + ":3:4: field 3 (label) at character 4"))
      << data.status();
  EXPECT_THAT(data.status().message(), HasSubstr("missing")) << data.status();
}

TEST(CsvErrorTest, ANonNumericValueNamesFileLineAndColumn) {
  const std::string path = WriteTempFile("non_numeric.csv", "a,b,label\n1,2,0\n3, abc,1\n");
  auto data = LoadCsv(path);
  ASSERT_EQ(data.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(data.status().message(), HasSubstr(path + ":3:4: field 2 (b) at character 4"))
      << data.status();
  EXPECT_THAT(data.status().message(), HasSubstr("'abc' is not a number")) << data.status();

  const std::string bad_label = WriteTempFile("bad_label.csv", "a,label\n1,2.5\n");
  auto labels = LoadCsv(bad_label);
  EXPECT_THAT(labels.status().message(), HasSubstr(bad_label + ":2:3: field 2 (label)"))
      << labels.status();
}

TEST(CsvErrorTest, AnExtraFieldIsAnError) {
  const std::string path = WriteTempFile("extra.csv", "a,label\n1,0,9\n");
  auto data = LoadCsv(path);
  EXPECT_EQ(data.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(data.status().message(), HasSubstr(path + ":2:5: field 3 at character 5"))
      << data.status();
}

TEST(CsvErrorTest, AnUnknownLabelColumnListsTheHeader) {
  const std::string path = WriteTempFile("header.csv", "a,b,label\n1,2,0\n");
  CsvOptions options;
  options.label_column = "species";
  for (const Status& s : {LoadCsv(path, options).status(), CsvDataset(path, options).status()}) {
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("'species'")) << s;
    EXPECT_THAT(s.message(), HasSubstr("a, b, label")) << s;
  }
}

TEST(CsvErrorTest, AMissingFileIsNotFoundNamingIt) {
  const std::string path = DataPath("no_such_file.csv");
  for (const Status& s : {LoadCsv(path).status(), CsvDataset(path).status()}) {
    EXPECT_EQ(s.code(), Code::kNotFound);
    EXPECT_THAT(s.message(), HasSubstr(path)) << s;
  }
}

TEST(CsvErrorTest, ADatasetReportsABadRowWhenReachedAndGoesOn) {
  const std::string path = WriteTempFile("bad_row.csv", "a,label\n1,0\nx,1\n3,2\n");
  auto ds = CsvDataset(path);
  ASSERT_TRUE(ds.ok()) << ds.status();
  std::unique_ptr<Iterator> it = (*ds)->MakeIterator();
  Element e;
  ASSERT_TRUE(it->GetNext(&e).ok());
  Status s = it->GetNext(&e);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(path + ":3:1:")) << s;
  ASSERT_TRUE(it->GetNext(&e).ok());
  EXPECT_EQ(e[1].ElementAsDouble(0), 2);
  EXPECT_EQ(it->GetNext(&e).code(), Code::kOutOfRange);
}

}  // namespace
}  // namespace actorflow
