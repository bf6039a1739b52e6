#include "training/data/idx_file_dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "graph/status_testing.h"
#include "training/data/idx_file_test_util.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

// 3 images of 2x2 pixels and their 3 labels.
const std::vector<uint8_t> kPixels = {0, 255, 51, 102, 1, 2, 3, 4, 254, 253, 128, 127};
const std::string kImagesIdx = IdxUint8({3, 2, 2}, kPixels);
const std::string kLabelsIdx = IdxUint8({3}, {7, 0, 9});

TEST(IdxFileDatasetTest, LoadsImagesAsNhwcFloatScaledToUnitRangeAndLabelsAsInt32) {
  std::string images = WriteScratchFile("pair_images.idx", kImagesIdx);
  std::string labels = WriteScratchFile("pair_labels.idx", kLabelsIdx);
  ASSERT_OK_AND_ASSIGN(LabeledImages loaded, LoadIdxImagesAndLabels(images, labels));
  ASSERT_EQ(loaded.images.dtype(), DType::kFloat32);
  EXPECT_EQ(loaded.images.shape(), (Shape{3, 2, 2, 1}));
  const float* pixels = loaded.images.data<float>();
  for (size_t i = 0; i < kPixels.size(); ++i) {
    EXPECT_FLOAT_EQ(pixels[i], kPixels[i] / 255.0f) << "pixel " << i;
  }
  EXPECT_EQ(pixels[0], 0.0f);
  EXPECT_EQ(pixels[1], 1.0f);
  EXPECT_FLOAT_EQ(pixels[2], 0.2f);
  ASSERT_EQ(loaded.labels.dtype(), DType::kInt32);
  EXPECT_EQ(loaded.labels.shape(), (Shape{3}));
  EXPECT_EQ(std::vector<int32_t>(loaded.labels.data<int32_t>(), loaded.labels.data<int32_t>() + 3),
            (std::vector<int32_t>{7, 0, 9}));
}

TEST(IdxFileDatasetTest, LoadsAGzippedPairLikeThePlainOne) {
  std::string images = WriteScratchFile("pair_images.idx.gz", Gzip(kImagesIdx));
  std::string labels = WriteScratchFile("pair_labels.idx.gz", Gzip(kLabelsIdx));
  ASSERT_OK_AND_ASSIGN(LabeledImages loaded, LoadIdxImagesAndLabels(images, labels));
  EXPECT_EQ(loaded.images.shape(), (Shape{3, 2, 2, 1}));
  EXPECT_FLOAT_EQ(loaded.images.data<float>()[3], 102 / 255.0f);
  EXPECT_EQ(loaded.labels.data<int32_t>()[2], 9);
}

TEST(IdxFileDatasetTest, CountsThatDisagreeNameBothFiles) {
  std::string images = WriteScratchFile("three_images.idx", kImagesIdx);
  std::string labels = WriteScratchFile("two_labels.idx", IdxUint8({2}, {1, 2}));
  StatusOr<LabeledImages> result = LoadIdxImagesAndLabels(images, labels);
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr(images + " holds 3 images"));
  EXPECT_THAT(result.status().message(), HasSubstr(labels + " holds 2 labels"));
}

TEST(IdxFileDatasetTest, ImagesMustBeRank3AndLabelsRank1) {
  std::string labels = WriteScratchFile("rank_labels.idx", kLabelsIdx);
  std::string flat_images = WriteScratchFile("flat_images.idx", IdxUint8({3, 4}, kPixels));
  StatusOr<LabeledImages> result = LoadIdxImagesAndLabels(flat_images, labels);
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr(flat_images));
  EXPECT_THAT(result.status().message(), HasSubstr("[3,4]"));

  std::string images = WriteScratchFile("rank_images.idx", kImagesIdx);
  std::string matrix_labels = WriteScratchFile("matrix_labels.idx", IdxUint8({3, 1}, {7, 0, 9}));
  result = LoadIdxImagesAndLabels(images, matrix_labels);
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr(matrix_labels));
  EXPECT_THAT(result.status().message(), HasSubstr("[3,1]"));
}

TEST(IdxFileDatasetTest, ImagesOtherThanUint8AreUnimplementedNamingTheType) {
  std::string labels = WriteScratchFile("f32_pair_labels.idx", IdxUint8({1}, {3}));
  std::string images =
      WriteScratchFile("f32_images.idx", IdxBytes(0x0D, {1, 1, 1}, std::string("\0\0\0\0", 4)));
  StatusOr<LabeledImages> result = LoadIdxImagesAndLabels(images, labels);
  EXPECT_EQ(result.status().code(), Code::kUnimplemented);
  EXPECT_THAT(result.status().message(), HasSubstr(images));
  EXPECT_THAT(result.status().message(), HasSubstr("float32"));
}

TEST(IdxFileDatasetTest, FloatLabelsAreRefusedAndWiderIntegerLabelsAccepted) {
  std::string images = WriteScratchFile("one_image.idx", IdxUint8({1, 1, 1}, {9}));
  std::string float_labels =
      WriteScratchFile("float_labels.idx", IdxBytes(0x0D, {1}, std::string("\0\0\0\0", 4)));
  StatusOr<LabeledImages> result = LoadIdxImagesAndLabels(images, float_labels);
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr(float_labels));

  std::string int32_labels =
      WriteScratchFile("int32_labels.idx", IdxBytes(0x0C, {1}, std::string("\0\0\x01\x2c", 4)));
  ASSERT_OK_AND_ASSIGN(LabeledImages loaded, LoadIdxImagesAndLabels(images, int32_labels));
  EXPECT_EQ(loaded.labels.data<int32_t>()[0], 300);
}

TEST(IdxFileDatasetTest, AMissingOrDamagedFileOfThePairIsNamed) {
  std::string images = WriteScratchFile("lonely_images.idx", kImagesIdx);
  std::string missing = TestTempPath("no_labels_here.idx");
  StatusOr<LabeledImages> result = LoadIdxImagesAndLabels(images, missing);
  EXPECT_EQ(result.status().code(), Code::kNotFound);
  EXPECT_THAT(result.status().message(), HasSubstr(missing));

  std::string gzipped = Gzip(kLabelsIdx);
  std::string cut = WriteScratchFile("cut_labels.idx.gz", gzipped.substr(0, gzipped.size() - 4));
  result = LoadIdxImagesAndLabels(images, cut);
  EXPECT_EQ(result.status().code(), Code::kInternal);
  EXPECT_THAT(result.status().message(), HasSubstr("data loss: " + cut));
}

TEST(IdxFileDatasetTest, DatasetYieldsOneImageAndLabelPerElement) {
  std::string images = WriteScratchFile("ds_images.idx.gz", Gzip(kImagesIdx));
  std::string labels = WriteScratchFile("ds_labels.idx", kLabelsIdx);
  ASSERT_OK_AND_ASSIGN(auto dataset, IdxImagesAndLabelsDataset(images, labels));
  EXPECT_EQ(dataset->output_dtypes(), (std::vector<DType>{DType::kFloat32, DType::kInt32}));
  EXPECT_EQ(dataset->output_shapes()[0], (Shape{2, 2, 1}));
  EXPECT_EQ(dataset->output_shapes()[1], Shape{});

  std::unique_ptr<Iterator> it = dataset->MakeIterator();
  std::vector<int32_t> labels_seen;
  Element element;
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(it->GetNext(&element));
    labels_seen.push_back(element[1].data<int32_t>()[0]);
    if (i == 1) {
      EXPECT_EQ(element[0].shape(), (Shape{2, 2, 1}));
      EXPECT_FLOAT_EQ(element[0].data<float>()[0], 1 / 255.0f);
      EXPECT_FLOAT_EQ(element[0].data<float>()[3], 4 / 255.0f);
    }
  }
  EXPECT_EQ(labels_seen, (std::vector<int32_t>{7, 0, 9}));
  EXPECT_EQ(it->GetNext(&element).code(), Code::kOutOfRange);
}

// --- Fashion-MNIST -----------------------------------------------------------------------

TEST(FashionMnistTest, MissingDirectoryIsNotFoundSayingWhatToInstall) {
  std::string dir = TestTempPath("no_fashion_here");
  StatusOr<IdxFilePair> result = FashionMnistPaths(dir, "train");
  EXPECT_EQ(result.status().code(), Code::kNotFound);
  EXPECT_THAT(result.status().message(), HasSubstr(dir));
  EXPECT_THAT(result.status().message(), HasSubstr("dataset-fashion-mnist"));
  EXPECT_EQ(LoadFashionMnist(dir, "test").status().code(), Code::kNotFound);
}

TEST(FashionMnistTest, MissingFileIsNotFoundNamingItAndWhatToInstall) {
  std::string dir = NewTestTempDir("fashion_partial");
  ASSERT_TRUE(WriteTestFile(dir + "/t10k-images-idx3-ubyte.gz", Gzip(kImagesIdx)));
  StatusOr<IdxFilePair> result = FashionMnistPaths(dir, "test");
  EXPECT_EQ(result.status().code(), Code::kNotFound);
  EXPECT_THAT(result.status().message(), HasSubstr(dir + "/t10k-labels-idx1-ubyte.gz"));
  EXPECT_THAT(result.status().message(), HasSubstr("dataset-fashion-mnist"));
}

TEST(FashionMnistTest, UnknownSplitIsInvalidArgument) {
  StatusOr<IdxFilePair> result = FashionMnistPaths(NewTestTempDir("fashion_split"), "validation");
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("validation"));
}

// A directory laid out like the Debian package, with 2 images of 28x28: the train
// files gzipped, the test files unzipped.
std::string FakeFashionDir(uint8_t second_label) {
  std::string dir = NewTestTempDir("fashion_fake");
  std::vector<uint8_t> pixels(2 * 28 * 28, 0);
  pixels[28 * 28 + 5] = 255;  // pixel (0, 5) of the second image
  std::string images = IdxUint8({2, 28, 28}, pixels);
  std::string labels = IdxUint8({2}, {9, second_label});
  EXPECT_TRUE(WriteTestFile(dir + "/train-images-idx3-ubyte.gz", Gzip(images)));
  EXPECT_TRUE(WriteTestFile(dir + "/train-labels-idx1-ubyte.gz", Gzip(labels)));
  EXPECT_TRUE(WriteTestFile(dir + "/t10k-images-idx3-ubyte", images));
  EXPECT_TRUE(WriteTestFile(dir + "/t10k-labels-idx1-ubyte", labels));
  return dir;
}

TEST(FashionMnistTest, FindsTheSplitsFilesGzippedOrNot) {
  std::string dir = FakeFashionDir(2);
  ASSERT_OK_AND_ASSIGN(IdxFilePair train, FashionMnistPaths(dir, "train"));
  EXPECT_EQ(train.images, dir + "/train-images-idx3-ubyte.gz");
  EXPECT_EQ(train.labels, dir + "/train-labels-idx1-ubyte.gz");
  ASSERT_OK_AND_ASSIGN(IdxFilePair test, FashionMnistPaths(dir, "test"));
  EXPECT_EQ(test.images, dir + "/t10k-images-idx3-ubyte");
  EXPECT_EQ(test.labels, dir + "/t10k-labels-idx1-ubyte");

  for (const char* split : {"train", "test"}) {
    ASSERT_OK_AND_ASSIGN(LabeledImages loaded, LoadFashionMnist(dir, split));
    EXPECT_EQ(loaded.images.shape(), (Shape{2, 28, 28, 1})) << split;
    EXPECT_EQ(loaded.images.data<float>()[28 * 28 + 5], 1.0f) << split;
    EXPECT_EQ(loaded.labels.data<int32_t>()[1], 2) << split;
  }
}

TEST(FashionMnistTest, LabelOutsideTheTenClassesIsRefusedNamingItsIndex) {
  std::string dir = FakeFashionDir(10);
  StatusOr<LabeledImages> result = LoadFashionMnist(dir, "train");
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr(dir + "/train-labels-idx1-ubyte.gz"));
  EXPECT_THAT(result.status().message(), HasSubstr("label 10 at index 1"));
}

TEST(FashionMnistTest, ImagesThatAreNot28By28AreRefused) {
  std::string dir = NewTestTempDir("fashion_small");
  ASSERT_TRUE(WriteTestFile(dir + "/t10k-images-idx3-ubyte.gz", Gzip(kImagesIdx)));
  ASSERT_TRUE(WriteTestFile(dir + "/t10k-labels-idx1-ubyte.gz", Gzip(kLabelsIdx)));
  StatusOr<LabeledImages> result = LoadFashionMnist(dir, "test");
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("2x2"));
}

bool DirectoryExists(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

TEST(FashionMnistTest, ReadsTheInstalledTestSplit) {
  if (!DirectoryExists(kFashionMnistDefaultDir)) {
    GTEST_SKIP() << kFashionMnistDefaultDir << " is absent (Debian package dataset-fashion-mnist)";
  }
  // An empty directory means the default one.
  ASSERT_OK_AND_ASSIGN(LabeledImages test, LoadFashionMnist("", "test"));
  ASSERT_EQ(test.images.shape(), (Shape{10000, 28, 28, 1}));
  ASSERT_EQ(test.labels.shape(), (Shape{10000}));

  const int32_t* labels = test.labels.data<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(labels, labels + 5), (std::vector<int32_t>{9, 2, 1, 1, 6}));
  std::array<int, kFashionMnistNumClasses> per_class{};
  for (int i = 0; i < 10000; ++i) ++per_class[labels[i]];  // LoadFashionMnist checked 0..9
  for (int count : per_class) EXPECT_EQ(count, 1000);  // the test split is balanced

  // The first image's pixels sum to 33456 / 255; its first ink is pixel 215, value 3.
  const float* pixels = test.images.data<float>();
  double first_image_sum = 0;
  for (int i = 0; i < 28 * 28; ++i) first_image_sum += pixels[i];
  EXPECT_NEAR(first_image_sum, 33456 / 255.0, 1e-3);
  EXPECT_EQ(pixels[214], 0.0f);
  EXPECT_FLOAT_EQ(pixels[215], 3 / 255.0f);
  float lowest = 1, highest = 0;
  for (int64_t i = 0; i < test.images.NumElements(); ++i) {
    lowest = std::min(lowest, pixels[i]);
    highest = std::max(highest, pixels[i]);
  }
  EXPECT_EQ(lowest, 0.0f);
  EXPECT_EQ(highest, 1.0f);
}

}  // namespace
}  // namespace actorflow
