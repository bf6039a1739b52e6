// `actorflow convert` and `actorflow train --dataset fashion-mnist` on a small
// Fashion-MNIST-shaped data set written here: the TFRecord shards hold exactly the
// IDX files' images and labels, shards written by an encoder of this test's own (its
// own protobuf bytes and CRC-32C, not the project's) train exactly as the IDX files
// do, and bad input is named.
#include "tools/convert_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/test_files.h"
#include "tools/train/train_command.h"
#include "tools/train/train_data.h"
#include "tools/train/train_datasets.h"
#include "tools/train/train_flags.h"
#include "training/estimators/dnn_classifier.h"

namespace actorflow {
namespace cli {
namespace {

using ::testing::HasSubstr;

constexpr int kSide = 28;

struct FakeSplit {
  std::vector<uint8_t> pixels;  // [n, 28, 28]
  std::vector<uint8_t> labels;  // [n], in 0..9
};

// Images whose class shows: class c lights rows 2c and 2c+1, with some noise.
FakeSplit MakeSplit(int n, uint32_t seed) {
  FakeSplit split;
  uint32_t state = seed;
  auto next = [&state] { return state = state * 1664525u + 1013904223u; };
  for (int i = 0; i < n; ++i) {
    const int label = static_cast<int>(next() >> 24) % 10;
    split.labels.push_back(static_cast<uint8_t>(label));
    for (int p = 0; p < kSide * kSide; ++p) {
      const int row = p / kSide;
      const bool lit = row / 2 == label;
      split.pixels.push_back(static_cast<uint8_t>((lit ? 160 : 0) + (next() >> 27)));
    }
  }
  return split;
}

std::string BigEndian32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

void WriteIdx(const std::string& path, const std::vector<uint32_t>& dims,
              const std::vector<uint8_t>& values) {
  std::string bytes = {'\0', '\0', '\x08', static_cast<char>(dims.size())};
  for (uint32_t d : dims) bytes += BigEndian32(d);
  bytes.append(values.begin(), values.end());
  ASSERT_TRUE(WriteTestFile(path, bytes)) << path;
}

// A directory in Fashion-MNIST's layout (unzipped file names), 300 training and 100
// test images.
std::string FakeFashionMnist() {
  static const std::string dir = [] {
    const std::string d = NewTestTempDir("fashion");
    const FakeSplit train = MakeSplit(300, 1), test = MakeSplit(100, 2);
    WriteIdx(d + "/train-images-idx3-ubyte", {300, kSide, kSide}, train.pixels);
    WriteIdx(d + "/train-labels-idx1-ubyte", {300}, train.labels);
    WriteIdx(d + "/t10k-images-idx3-ubyte", {100, kSide, kSide}, test.pixels);
    WriteIdx(d + "/t10k-labels-idx1-ubyte", {100}, test.labels);
    return d;
  }();
  return dir;
}

// --- This test's own tf.train.Example encoder and TFRecord framing -------------------

std::string Varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  return s + static_cast<char>(v);
}
std::string LengthDelimited(int field, const std::string& body) {
  return Varint(static_cast<uint64_t>(field) << 3 | 2) + Varint(body.size()) + body;
}
// Feature { int64_list = 3 { value = 1, unpacked } }, as proto2 writers emit it.
std::string Int64Feature(int64_t v) {
  return LengthDelimited(3, Varint(1 << 3 | 0) + Varint(static_cast<uint64_t>(v)));
}
std::string BytesFeature(const std::string& bytes) {
  return LengthDelimited(1, LengthDelimited(1, bytes));
}
std::string MapEntry(const std::string& key, const std::string& feature) {
  return LengthDelimited(1, LengthDelimited(1, key) + LengthDelimited(2, feature));
}
// The features in another order than the project's encoder writes them.
std::string ImageExample(int64_t label, const std::string& raw) {
  return LengthDelimited(1, MapEntry("label", Int64Feature(label)) +
                                MapEntry("image_raw", BytesFeature(raw)) +
                                MapEntry("width", Int64Feature(kSide)) +
                                MapEntry("height", Int64Feature(kSide)) +
                                MapEntry("depth", Int64Feature(1)));
}
// CRC-32C bit by bit, and TFRecord's mask.
uint32_t Crc32c(const std::string& data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : data) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}
std::string LittleEndian32(uint32_t v) {
  return {static_cast<char>(v), static_cast<char>(v >> 8), static_cast<char>(v >> 16),
          static_cast<char>(v >> 24)};
}
std::string Framed(const std::string& data) {
  auto masked = [](uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; };
  std::string length;
  for (int i = 0; i < 8; ++i) length += static_cast<char>((data.size() >> (8 * i)) & 0xFF);
  return length + LittleEndian32(masked(Crc32c(length))) + data +
         LittleEndian32(masked(Crc32c(data)));
}

// The fake data set as one TFRecord file per split, written by the encoder above.
std::string IndependentShards() {
  static const std::string dir = [] {
    const std::string d = NewTestTempDir("independent");
    for (const auto& [name, split] :
         {std::pair<std::string, FakeSplit>{"train", MakeSplit(300, 1)}, {"test", MakeSplit(100, 2)}}) {
      std::string file;
      for (size_t i = 0; i < split.labels.size(); ++i) {
        const auto* first = split.pixels.data() + i * kSide * kSide;
        file += Framed(ImageExample(split.labels[i],
                                    std::string(first, first + kSide * kSide)));
      }
      EXPECT_TRUE(WriteTestFile(d + "/" + name + ".tfrecord", file));
    }
    return d;
  }();
  return dir;
}

TrainCommandOptions FashionRun(const std::string& dir, const std::string& format) {
  TrainCommandOptions options;
  options.dataset = "fashion-mnist";
  options.data_dir = dir;
  options.data_format = format;
  options.hidden = "32";
  options.batch = 50;
  options.epochs = 3;
  options.optimizer = "adam";
  options.learning_rate = 0.01;
  options.json = true;
  return options;
}

nlohmann::json Train(const TrainCommandOptions& options) {
  std::ostringstream out, err;
  EXPECT_EQ(TrainCommand(options, out, err, /*interactive=*/false), kExitOk) << err.str();
  return nlohmann::json::parse(out.str(), nullptr, /*allow_exceptions=*/false);
}

TEST(ConvertCommandTest, ShardsHoldExactlyTheIdxImagesAndLabels) {
  const std::string out_dir = NewTestTempDir("shards");
  ConvertCommandOptions convert;
  convert.dataset = "fashion-mnist";
  convert.data_dir = FakeFashionMnist();
  convert.out_dir = out_dir;
  convert.shards = 3;
  std::ostringstream out, err;
  ASSERT_EQ(ConvertCommand(convert, out, err), kExitOk) << err.str();
  EXPECT_THAT(out.str(), HasSubstr("train: 300 records in 3 shard(s)"));
  EXPECT_TRUE(std::ifstream(out_dir + "/train-00002-of-00003.tfrecord").good());

  auto idx = LoadNamedDataset(FashionRun(FakeFashionMnist(), "idx"));
  auto records = LoadNamedDataset(FashionRun(out_dir, "tfrecord"));
  ASSERT_TRUE(idx.ok()) << idx.status();
  ASSERT_TRUE(records.ok()) << records.status();
  for (const auto& [a, b] : {std::pair{&idx->train, &records->train}, {&idx->test, &records->test}}) {
    ASSERT_EQ(a->features.shape(), b->features.shape());
    EXPECT_EQ(a->features.shape().ToString(), b->features.shape().ToString());
    for (int64_t i = 0; i < a->features.NumElements(); ++i) {
      ASSERT_EQ(a->features.data<float>()[i], b->features.data<float>()[i]) << i;
    }
    for (int64_t i = 0; i < a->labels.NumElements(); ++i) {
      ASSERT_EQ(a->labels.data<int32_t>()[i], b->labels.data<int32_t>()[i]) << i;
    }
  }
}

TEST(ConvertCommandTest, IndependentlyWrittenRecordsTrainExactlyAsTheIdxFiles) {
  nlohmann::json idx = Train(FashionRun(FakeFashionMnist(), "idx"));
  nlohmann::json records = Train(FashionRun(IndependentShards(), "tfrecord"));
  ASSERT_TRUE(idx.is_object() && records.is_object());
  EXPECT_GT(idx["accuracy"].get<double>(), 0.8);  // the classes are easy to tell apart
  EXPECT_EQ(idx["accuracy"], records["accuracy"]);
  EXPECT_EQ(idx["loss"], records["loss"]);
  EXPECT_EQ(idx["accuracy_by_epoch"], records["accuracy_by_epoch"]);
}

TEST(ConvertCommandTest, EachEpochIsEvaluatedAndTheSameSeedRepeatsTheRun) {
  TrainCommandOptions options = FashionRun(FakeFashionMnist(), "idx");
  options.augment = true;
  nlohmann::json first = Train(options);
  nlohmann::json again = Train(options);
  ASSERT_TRUE(first.is_object());
  ASSERT_EQ(first["accuracy_by_epoch"].size(), 3u);
  EXPECT_EQ(first["accuracy"], first["accuracy_by_epoch"][2]);
  const auto& seconds = first["seconds_by_epoch"];
  EXPECT_LT(seconds[0].get<double>(), seconds[2].get<double>());
  EXPECT_GT(first["samples_per_second"].get<double>(), 0.0);
  EXPECT_GE(first["input_wait_fraction"].get<double>(), 0.0);
  EXPECT_LE(first["input_wait_fraction"].get<double>(), 1.0);
  EXPECT_EQ(first["accuracy"], again["accuracy"]);
  EXPECT_EQ(first["loss"], again["loss"]);
}

TEST(ConvertCommandTest, TheSyncClustersChiefEvaluatesEachEpochAsOneProcessDoes) {
  TrainCommandOptions options = FashionRun(FakeFashionMnist(), "idx");
  options.cluster = "local:ps=1,worker=2";
  options.mode = "sync";
  nlohmann::json ran = Train(options);
  ASSERT_TRUE(ran.is_object());
  ASSERT_EQ(ran["accuracy_by_epoch"].size(), 3u) << ran;
  // The last epoch ends at the final sync update: the chief evaluated what the end
  // evaluates.
  EXPECT_EQ(ran["accuracy"], ran["accuracy_by_epoch"][2]);
  const auto& seconds = ran["seconds_by_epoch"];
  ASSERT_EQ(seconds.size(), 3u);
  EXPECT_LT(seconds[0].get<double>(), seconds[1].get<double>());
  EXPECT_LT(seconds[1].get<double>(), seconds[2].get<double>());
  EXPECT_GT(ran["samples_per_second"].get<double>(), 0.0);
  // 300 training rows x 3 epochs over the chief's training seconds (which the JSON
  // rounds to milliseconds: a few percent of so short a run).
  EXPECT_NEAR(ran["samples_per_second"].get<double>() * seconds[2].get<double>(), 900.0, 45.0);
}

// Without --batch, a named dataset's batch is the rows of one sync update: each of
// the two workers reads half of it, so the run takes one process's updates.
TEST(ConvertCommandTest, TheDatasetsBatchIsSplitOverTheWorkersASyncUpdateAverages) {
  TrainCommandOptions options = FashionRun(FakeFashionMnist(), "idx");
  options.cluster = "local:ps=1,worker=2";
  options.mode = "sync";
  options.split_batch_over_replicas = true;
  nlohmann::json ran = Train(options);
  ASSERT_TRUE(ran.is_object());
  EXPECT_EQ(ran["batch"], 25) << ran;
  // 300 rows x 3 epochs in updates of 2 x 25 rows, as one process's batches of 50.
  EXPECT_EQ(ran["updates_applied"], 18) << ran;
  ASSERT_EQ(ran["worker_reports"].size(), 2u);
  for (const auto& worker : ran["worker_reports"]) EXPECT_EQ(worker["steps"], 18) << worker;
  EXPECT_GT(ran["accuracy"].get<double>(), 0.8);
  options.split_batch_over_replicas = false;  // --batch given: 50 rows each
  ran = Train(options);
  ASSERT_TRUE(ran.is_object());
  EXPECT_EQ(ran["batch"], 50);
  EXPECT_EQ(ran["updates_applied"], 9) << ran;
}

// A convnet with batch normalization written to --checkpoint-dir and loaded back for
// prediction evaluates exactly as at the end of training: the checkpoint holds the
// moving averages the inference path reads.
TEST(ConvertCommandTest, ACheckpointedConvnetPredictsAsItEvaluated) {
  TrainCommandOptions options = FashionRun(FakeFashionMnist(), "idx");
  options.model = "convnet-bn";
  options.hidden = "16";
  options.epochs = 1;
  options.checkpoint_dir = NewTestTempDir("convnet_bn");
  nlohmann::json trained = Train(options);
  ASSERT_TRUE(trained.is_object());
  auto loaded = DNNClassifier::Load(options.checkpoint_dir, SessionFactoryFor(SessionOptions()));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto data = LoadNamedDataset(options);
  ASSERT_TRUE(data.ok()) << data.status();
  auto eval = (*loaded)->Evaluate(EvaluationInput(data->test));
  ASSERT_TRUE(eval.ok()) << eval.status();
  EXPECT_EQ(eval->accuracy, trained["accuracy"].get<double>());
  EXPECT_DOUBLE_EQ(eval->loss, trained["loss"].get<double>());
}

TEST(ConvertCommandTest, BadInputIsNamed) {
  ConvertCommandOptions convert;
  convert.dataset = "mnist";
  convert.out_dir = NewTestTempDir("bad");
  std::ostringstream out, err;
  EXPECT_EQ(ConvertCommand(convert, out, err), kExitUsageError);
  EXPECT_THAT(err.str(), HasSubstr("--dataset 'mnist': valid are fashion-mnist"));

  convert.dataset = "fashion-mnist";
  convert.data_dir = "/nonexistent/fashion";
  std::ostringstream out2, err2;
  EXPECT_EQ(ConvertCommand(convert, out2, err2), kExitRuntimeError);
  EXPECT_THAT(err2.str(), HasSubstr("dataset-fashion-mnist"));

  // A record whose data was damaged: the error names the file and the offset; with
  // --skip-corrupt-records the record is left out and counted.
  const std::string damaged = NewTestTempDir("damaged");
  const std::string good = Framed(ImageExample(1, std::string(kSide * kSide, '\x10')));
  std::string file = good + good;
  file[30] ^= 0x01;
  ASSERT_TRUE(WriteTestFile(damaged + "/train.tfrecord", file));
  ASSERT_TRUE(WriteTestFile(damaged + "/test.tfrecord", good));
  std::ostringstream said;
  auto loaded = LoadNamedDataset(FashionRun(damaged, "tfrecord"), said);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("train.tfrecord"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("offset 0"));
  TrainCommandOptions skipping = FashionRun(damaged, "tfrecord");
  skipping.skip_corrupt_records = true;
  auto rest = LoadNamedDataset(skipping, said);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(rest->train.labels.NumElements(), 1);
  EXPECT_THAT(said.str(), HasSubstr("skipped 1 damaged record(s)"));

  TrainCommandOptions both = FashionRun(FakeFashionMnist(), "idx");
  both.train_path = "x.csv";
  EXPECT_THAT(LoadNamedDataset(both).status().message(), HasSubstr("drop --train"));
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
