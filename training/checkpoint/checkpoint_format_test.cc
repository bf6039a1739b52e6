// The checkpoint file format: CRC-32, checkpoint names, the manifest's JSON and its
// checks, and verified reading of the data file.

#include "training/checkpoint/checkpoint_format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "training/checkpoint/checkpoint_test_util.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;
using checkpoint_test::NewTempDir;
using checkpoint_test::WriteFile;

TEST(Crc32Test, MatchesTheStandardCheckValueAndExtendsIncrementally) {
  const char* text = "123456789";
  EXPECT_EQ(Crc32(text, 9), 0xCBF43926u);
  EXPECT_EQ(Crc32(text + 4, 5, Crc32(text, 4)), 0xCBF43926u);
  EXPECT_EQ(Crc32(nullptr, 0), 0u);
}

TEST(CheckpointBasenameTest, RoundTripsAndRejectsEveryOtherName) {
  EXPECT_EQ(CheckpointBasename(42), "ckpt-42");
  EXPECT_EQ(ParseCheckpointBasename("ckpt-42"), std::optional<int64_t>(42));
  EXPECT_EQ(ParseCheckpointBasename("ckpt-0"), std::optional<int64_t>(0));
  for (const char* name : {"ckpt-", "ckpt-042", "ckpt-4x", "ckpt-1.json", ".ckpt-1.data.tmp.7.0",
                           "latest", "ckpt--0", "ckpt-99999999999999999999"}) {
    EXPECT_FALSE(ParseCheckpointBasename(name).has_value()) << name;
  }
}

std::vector<std::pair<std::string, Tensor>> SampleTensors() {
  return {{"w", Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3})},
          {"flag", Tensor::FromVector<bool>({true, false, true})},
          {"step", Tensor::Scalar<int64_t>(9)}};
}

TEST(ManifestTest, LaysTensorsOutBackToBackWithTheirChecksums) {
  auto tensors = SampleTensors();
  CheckpointManifest m = BuildManifest(9, tensors);
  ASSERT_EQ(m.tensors.size(), 3u);
  EXPECT_EQ(m.global_step, 9);
  EXPECT_EQ(m.tensors[0].offset, 0u);
  EXPECT_EQ(m.tensors[0].size, 24u);
  EXPECT_EQ(m.tensors[1].offset, 24u);
  EXPECT_EQ(m.tensors[1].size, 3u);
  EXPECT_EQ(m.tensors[2].offset, 27u);
  EXPECT_EQ(m.tensors[2].checksum, Crc32(tensors[2].second.raw_data(), 8));
}

TEST(ManifestTest, JsonTextHasTheContractsKeysAndParsesBack) {
  CheckpointManifest m = BuildManifest(9, SampleTensors());
  std::string text = ManifestToJsonText(m);
  auto json = nlohmann::json::parse(text);
  EXPECT_EQ(json["format"], "actorflow.checkpoint/1");
  EXPECT_EQ(json["global_step"], 9);
  EXPECT_EQ(json["tensors"][0]["name"], "w");
  EXPECT_EQ(json["tensors"][0]["dtype"], "float32");
  EXPECT_EQ(json["tensors"][0]["shape"], nlohmann::json({2, 3}));
  EXPECT_EQ(json["tensors"][1]["offset"], 24);
  EXPECT_EQ(json["tensors"][1]["size"], 3);
  EXPECT_EQ(json["tensors"][1]["checksum"], m.tensors[1].checksum);

  auto parsed = ParseManifest(text, "m.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->tensors.size(), 3u);
  EXPECT_EQ(parsed->tensors[1].name, "flag");
  EXPECT_EQ(parsed->tensors[1].dtype, DType::kBool);
  EXPECT_EQ(parsed->tensors[0].shape, (Shape{2, 3}));
  EXPECT_EQ(parsed->tensors[2].checksum, m.tensors[2].checksum);
}

TEST(ManifestTest, MalformedJsonNamesTheFileLineAndColumn) {
  auto parsed = ParseManifest("{\"format\": \"actorflow.checkpoint/1\",\n  \"global_step\": ,\n}",
                              "/ckpts/ckpt-3.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(parsed.status().message(), HasSubstr("/ckpts/ckpt-3.json")) << parsed.status();
  EXPECT_THAT(parsed.status().message(), HasSubstr("line 2, column 18")) << parsed.status();
}

// Found by fuzzing with deep inputs (tools/fuzz/): a shape nested 200000 lists deep
// overflowed the stack while the error message quoted it.
TEST(ManifestTest, DeeplyNestedValuesAreRefusedNotQuoted) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  Status s = ParseManifest(R"({"format": "actorflow.checkpoint/1", "global_step": 1, "tensors": [)"
                           R"({"name": "w", "dtype": "float32", "shape": )" + deep +
                               R"(, "offset": 0, "size": 4, "checksum": 0}]})",
                           "dir/ckpt-1.json")
                 .status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("dir/ckpt-1.json: JSON nested deeper than 256 levels"));
}

TEST(ManifestTest, InconsistentManifestsAreInvalidArgumentNamingTheFileAndTensor) {
  const std::string head = R"({"format": "actorflow.checkpoint/1", "global_step": 1, "tensors": [)";
  const std::string entry =
      R"({"name": "w", "dtype": "float32", "shape": [2], "offset": 0, "size": 8, "checksum": 0})";
  struct Case {
    std::string text;
    std::string expected;
  } cases[] = {
      {R"({"format": "other/2", "global_step": 1, "tensors": []})", "\"format\""},
      {R"({"format": "actorflow.checkpoint/1", "global_step": "1", "tensors": []})", "global_step"},
      {head + R"({"name": "w", "dtype": "float32", "shape": [2], "offset": 0, "size": 4, "checksum": 0}]})",
       "tensor 'w': size 4 does not match float32[2]"},
      {head + R"({"name": "w", "dtype": "complex", "shape": [2], "offset": 0, "size": 8, "checksum": 0}]})",
       "tensor 'w'"},
      {head + R"({"name": "w", "dtype": "float32", "shape": [-2], "offset": 0, "size": 8, "checksum": 0}]})",
       "tensor 'w': shape"},
      {head + R"({"name": "w", "dtype": "float32", "shape": [2], "size": 8, "checksum": 0}]})",
       "has no \"offset\""},
      {head + entry + "," + entry + "]}", "tensor 'w' appears twice"},
      {R"({"format": "actorflow.checkpoint/1", "global_step": -5, "tensors": []})",
       "\"global_step\" -5 is outside [0, 2^62]"},
      {R"({"format": "actorflow.checkpoint/1", "global_step": 9223372036854775807, "tensors": []})",
       "\"global_step\" 9223372036854775807 is outside"},
      {R"({"format": "actorflow.checkpoint/1", "global_step": 2, "tensors": []})",
       "\"global_step\" 2 does not match the file's name (step 1)"},
      {head + entry + "," +
           R"({"name": "v", "dtype": "int32", "shape": [], "offset": 4, "size": 4, "checksum": 0}]})",
       "'w' and 'v' overlap"},
  };
  for (const Case& c : cases) {
    auto parsed = ParseManifest(c.text, "dir/ckpt-1.json");
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument) << c.text;
    EXPECT_THAT(parsed.status().message(), HasSubstr("dir/ckpt-1.json")) << parsed.status();
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.expected)) << parsed.status();
  }
}

// Writes the sample tensors' data file; returns its path.
std::string WriteSampleData(const CheckpointManifest& m,
                            const std::vector<std::pair<std::string, Tensor>>& tensors) {
  std::string bytes;
  for (const auto& [name, t] : tensors) bytes.append(static_cast<const char*>(t.raw_data()), t.TotalBytes());
  EXPECT_EQ(bytes.size(), m.tensors.back().offset + m.tensors.back().size);
  std::string path = NewTempDir() + "/ckpt-9.data";
  WriteFile(path, bytes);
  return path;
}

TEST(ReadCheckpointTensorsTest, ReadsBackExactlyWhatWasWritten) {
  auto tensors = SampleTensors();
  CheckpointManifest m = BuildManifest(9, tensors);
  auto read = ReadCheckpointTensors(m, WriteSampleData(m, tensors));
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 3u);
  for (const auto& [name, t] : tensors) EXPECT_TRUE(TensorsEqual(read->at(name), t)) << name;
}

TEST(ReadCheckpointTensorsTest, AFlippedByteIsAChecksumMismatchNamingTheTensor) {
  auto tensors = SampleTensors();
  CheckpointManifest m = BuildManifest(9, tensors);
  std::string path = WriteSampleData(m, tensors);
  std::string bytes = checkpoint_test::ReadFile(path);
  bytes[27 + 3] ^= 0x10;  // inside "step"
  WriteFile(path, bytes);
  auto read = ReadCheckpointTensors(m, path);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), Code::kInternal);
  EXPECT_THAT(read.status().message(), HasSubstr("tensor 'step': checksum mismatch"))
      << read.status();
}

TEST(ReadCheckpointTensorsTest, ATruncatedDataFileIsCorruptionNamingTheFile) {
  auto tensors = SampleTensors();
  CheckpointManifest m = BuildManifest(9, tensors);
  std::string path = WriteSampleData(m, tensors);
  WriteFile(path, checkpoint_test::ReadFile(path).substr(0, 30));
  auto read = ReadCheckpointTensors(m, path);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), Code::kInternal);
  EXPECT_THAT(read.status().message(), HasSubstr(path + "' is 30 bytes")) << read.status();
}

TEST(ReadCheckpointTensorsTest, ABoolByteOtherThanZeroOrOneIsRejectedEvenWithAMatchingChecksum) {
  auto tensors = SampleTensors();
  std::memset(static_cast<char*>(tensors[1].second.raw_data()) + 1, 7, 1);
  CheckpointManifest m = BuildManifest(9, tensors);
  auto read = ReadCheckpointTensors(m, WriteSampleData(m, tensors));
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(read.status().message(), HasSubstr("tensor 'flag': invalid bool")) << read.status();
}

}  // namespace
}  // namespace actorflow
