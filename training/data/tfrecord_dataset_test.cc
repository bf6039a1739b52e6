#include "training/data/tfrecord_dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "graph/status_testing.h"
#include "graph/test_files.h"
#include "training/data/decode_raw.h"
#include "training/data/example.h"
#include "training/data/tfrecord.h"

namespace actorflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

void WriteFile(const std::string& path, const std::vector<std::string>& records) {
  auto writer = TFRecordWriter::Create(path);
  ASSERT_OK(writer.status());
  for (const std::string& r : records) ASSERT_OK((*writer)->Write(r));
  ASSERT_OK((*writer)->Close());
}

struct Drained {
  std::vector<std::string> records;
  std::vector<Status> errors;
};

// Every element of a records dataset as a string, and every error, in order.
Drained Drain(const Dataset& records) {
  Drained drained;
  std::unique_ptr<Iterator> it = records.MakeIterator();
  Element element;
  for (int calls = 0; calls < 1000; ++calls) {
    Status s = it->GetNext(&element);
    if (s.code() == Code::kOutOfRange) break;
    if (!s.ok()) {
      drained.errors.push_back(s);
      continue;
    }
    EXPECT_EQ(element.size(), 1u);
    StatusOr<std::string> bytes = TensorToBytes(element[0]);
    EXPECT_OK(bytes.status());
    if (bytes.ok()) drained.records.push_back(*bytes);
  }
  return drained;
}

class TFRecordDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = dir_.File("train-0.tfrecord");
    b_ = dir_.File("train-1.tfrecord");
    c_ = dir_.File("train-2.tfrecord");
    WriteFile(a_, {"a0", "a1", "a2"});
    WriteFile(b_, {"b0"});
    WriteFile(c_, {"c0", "c1"});
  }

  ScopedTempDir dir_{"tfrecord_dataset"};
  std::string a_, b_, c_;
};

TEST_F(TFRecordDatasetTest, YieldsEachRecordAsBytesFileAfterFile) {
  ASSERT_OK_AND_ASSIGN(auto records, TFRecordDataset({a_, b_, c_}));
  EXPECT_EQ(ElementSpecString(records->output_dtypes(), records->output_shapes()), "(int32 [?])");
  const Drained drained = Drain(*records);
  EXPECT_THAT(drained.records, ElementsAre("a0", "a1", "a2", "b0", "c0", "c1"));
  EXPECT_THAT(drained.errors, IsEmpty());
  EXPECT_THAT(records->DebugString(), HasSubstr("TFRecord(3 files"));
  // A new iterator reads the files again.
  EXPECT_EQ(Drain(*records).records.size(), 6u);
}

TEST_F(TFRecordDatasetTest, CycleLengthInterleavesTheFiles) {
  TFRecordDatasetOptions options;
  options.cycle_length = 2;
  ASSERT_OK_AND_ASSIGN(auto records, TFRecordDataset({a_, b_, c_}, options));
  EXPECT_THAT(Drain(*records).records, ElementsAre("a0", "b0", "a1", "a2", "c0", "c1"));
}

TEST_F(TFRecordDatasetTest, ACorruptRecordIsAnErrorInPlaceOrSkippedAndCounted) {
  std::string bytes = ReadTestFile(a_);
  bytes[2 + 16 + 12] ^= 0x01;  // the data of "a1"
  ASSERT_TRUE(WriteTestFile(a_, bytes));

  ASSERT_OK_AND_ASSIGN(auto strict, TFRecordDataset({a_, b_}));
  const Drained drained = Drain(*strict);
  EXPECT_THAT(drained.records, ElementsAre("a0", "a2", "b0"));
  ASSERT_EQ(drained.errors.size(), 1u);
  EXPECT_TRUE(IsDataLoss(drained.errors[0]));
  EXPECT_THAT(drained.errors[0].message(), HasSubstr(a_ + ": data CRC mismatch in the record "
                                                          "at offset 18"));

  TFRecordDatasetOptions options;
  options.skip_corrupt_records = true;
  options.skipped_records = std::make_shared<std::atomic<int64_t>>(0);
  ASSERT_OK_AND_ASSIGN(auto skipping, TFRecordDataset({a_, b_}, options));
  const Drained skipped = Drain(*skipping);
  EXPECT_THAT(skipped.records, ElementsAre("a0", "a2", "b0"));
  EXPECT_THAT(skipped.errors, IsEmpty());
  EXPECT_EQ(options.skipped_records->load(), 1);
}

TEST_F(TFRecordDatasetTest, BadArgumentsAreErrorsNamingWhat) {
  EXPECT_EQ(TFRecordDataset({}).status().code(), Code::kInvalidArgument);
  const Status missing = TFRecordDataset({a_, dir_.File("nope.tfrecord")}).status();
  EXPECT_EQ(missing.code(), Code::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr("nope.tfrecord"));
  TFRecordDatasetOptions options;
  options.cycle_length = 0;
  EXPECT_EQ(TFRecordDataset({a_}, options).status().code(), Code::kInvalidArgument);
}

TEST_F(TFRecordDatasetTest, MatchingFilesListsShardsInNameOrder) {
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> files,
                       MatchingFiles(dir_.path() + "/train-*.tfrecord"));
  EXPECT_THAT(files, ElementsAre(a_, b_, c_));
  const Status none = MatchingFiles(dir_.path() + "/test-*.tfrecord").status();
  EXPECT_EQ(none.code(), Code::kNotFound);
  EXPECT_THAT(none.message(), HasSubstr("test-*.tfrecord"));
}

TEST(ParseImageExamplesTest, TurnsImageRecordsIntoScaledImagesAndLabels) {
  ScopedTempDir dir("images");
  const std::string path = dir.File("train.tfrecord");
  WriteFile(path, {EncodeImageExample(2, 2, 1, 3, std::string("\x00\x33\x66\xff", 4)),
                   EncodeImageExample(2, 2, 1, 7, std::string(4, '\xff')),
                   EncodeImageExample(2, 2, 1, 1, "xyz"),  // one byte short
                   EncodeImageExample(2, 2, 1, 5, std::string(4, '\0'))});
  ASSERT_OK_AND_ASSIGN(auto records, TFRecordDataset({path}));
  auto images = ParseImageExamples(records, {2, 2, 1});
  ASSERT_OK(images->status());
  EXPECT_EQ(ElementSpecString(images->output_dtypes(), images->output_shapes()),
            "(float32 [2,2,1], int32 [])");
  std::unique_ptr<Iterator> it = images->MakeIterator();
  Element e;
  ASSERT_OK(it->GetNext(&e));
  EXPECT_EQ(e[0].DebugString(), "float32[2,2,1]");
  EXPECT_THAT(std::vector<float>(e[0].data<float>(), e[0].data<float>() + 4),
              ElementsAre(0.0f, 0.2f, 0.4f, 1.0f));
  EXPECT_EQ(*e[1].scalar<int32_t>(), 3);
  ASSERT_OK(it->GetNext(&e));
  EXPECT_EQ(*e[1].scalar<int32_t>(), 7);
  const Status bad = it->GetNext(&e);
  EXPECT_EQ(bad.code(), Code::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("feature 'image_raw' holds 3 bytes"));
  ASSERT_OK(it->GetNext(&e));  // and the next record parses
  EXPECT_EQ(*e[1].scalar<int32_t>(), 5);
  EXPECT_EQ(it->GetNext(&e).code(), Code::kOutOfRange);

  // Batched, on two threads: the order stays.
  auto batched = ParseImageExamples(records, {2, 2, 1}, /*num_parallel_calls=*/2)->Batch(2);
  std::unique_ptr<Iterator> batches = batched->MakeIterator();
  ASSERT_OK(batches->GetNext(&e));
  EXPECT_EQ(e[0].DebugString(), "float32[2,2,2,1]");
  EXPECT_THAT(std::vector<int32_t>(e[1].data<int32_t>(), e[1].data<int32_t>() + 2),
              ElementsAre(3, 7));
}

TEST(ParseExamplesTest, ParsesRecordsWithASpecIntoOneComponentPerFeature) {
  ScopedTempDir dir("examples");
  const std::string path = dir.File("e.tfrecord");
  Features features;
  features["x"] = Feature::Floats({1.5f, 2.5f});
  features["tag"] = Feature::Bytes({"ab"});
  WriteFile(path, {EncodeExample(features), EncodeImageExample(1, 1, 1, 0, "z")});
  ASSERT_OK_AND_ASSIGN(auto records, TFRecordDataset({path}));
  auto parsed = ParseExamples(records, {{"x", FeatureType::kFloat32, Shape{2}, {}},
                                        {"tag", FeatureType::kBytes, Shape{}, {}}});
  ASSERT_OK(parsed->status());
  EXPECT_EQ(ElementSpecString(parsed->output_dtypes(), parsed->output_shapes()),
            "(float32 [2], int32 [?])");
  std::unique_ptr<Iterator> it = parsed->MakeIterator();
  Element e;
  ASSERT_OK(it->GetNext(&e));
  EXPECT_THAT(std::vector<float>(e[0].data<float>(), e[0].data<float>() + 2),
              ElementsAre(1.5f, 2.5f));
  ASSERT_OK_AND_ASSIGN(std::string tag, TensorToBytes(e[1]));
  EXPECT_EQ(tag, "ab");
  const Status missing = it->GetNext(&e);  // the image record has no "x"
  EXPECT_THAT(missing.message(), HasSubstr("feature 'x' is missing"));
  EXPECT_EQ(it->GetNext(&e).code(), Code::kOutOfRange);
}

TEST(ParseImageExamplesTest, AnotherElementSpecIsAnErrorDataset) {
  ASSERT_OK_AND_ASSIGN(auto floats, Dataset::FromTensorSlices({Tensor::FromVector<float>({1})}));
  auto images = ParseImageExamples(floats);
  EXPECT_EQ(images->status().code(), Code::kInvalidArgument);
  EXPECT_THAT(images->status().message(), HasSubstr("expected records (int32 [?])"));
  ASSERT_OK_AND_ASSIGN(auto records,
                       Dataset::FromTensorSlices({Tensor::FromVector<int32_t>({1, 2}, {1, 2})}));
  EXPECT_THAT(ParseImageExamples(records, {0, 28, 1})->status().message(),
              HasSubstr("needs height, width and depth >= 1"));
  EXPECT_EQ(ParseExamples(floats, {})->status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace actorflow
