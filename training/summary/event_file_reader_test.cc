#include "training/summary/event_file_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "graph/status_testing.h"
#include "graph/test_files.h"
#include "training/summary/event_file.h"
#include "training/summary/summary_writer.h"

namespace actorflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

// Writes a file through SummaryWriter: the file_version event, loss at steps 1..3,
// then loss and accuracy together at step 3. Returns the file's path.
std::string WriteRun(const std::string& run_dir, float loss_scale = 1.0f) {
  auto writer = SummaryWriter::Create(run_dir);
  EXPECT_OK(writer.status());
  if (!writer.ok()) return "";
  for (int step = 1; step <= 3; ++step) {
    EXPECT_OK((*writer)->AddScalar("loss", loss_scale / static_cast<float>(step), step));
  }
  EXPECT_OK((*writer)->AddScalars({{"accuracy", 0.9f}, {"loss", 0.125f}}, 3));
  return (*writer)->path();  // flushed when the writer is destroyed
}

// The offsets at which a file's records start.
std::vector<size_t> RecordOffsets(const std::string& bytes) {
  std::vector<size_t> offsets;
  size_t at = 0;
  while (at + 8 <= bytes.size()) {
    offsets.push_back(at);
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<unsigned char>(bytes[at + i]);
    at += 16 + length;
  }
  return offsets;
}

TEST(EventFileReaderTest, ReadsBackWhatSummaryWriterWrote) {
  ScopedTempDir dir("reader");
  const std::string path = WriteRun(dir.File("run"));
  ASSERT_OK_AND_ASSIGN(EventFileContents contents, ReadEventFile(path));
  EXPECT_THAT(contents.warning, IsEmpty());
  ASSERT_EQ(contents.events.size(), 5u);
  EXPECT_EQ(contents.events[0].file_version, kEventFileVersion);
  EXPECT_GT(contents.events[0].wall_time, 1.6e9);  // seconds since 1970, after 2020
  EXPECT_THAT(contents.events[0].scalars, IsEmpty());
  for (int step = 1; step <= 3; ++step) {
    const Event& event = contents.events[step];
    EXPECT_EQ(event.step, step);
    EXPECT_THAT(event.file_version, IsEmpty());
    EXPECT_THAT(event.scalars, ElementsAre(Pair("loss", 1.0f / static_cast<float>(step))));
  }
  EXPECT_EQ(contents.events[4].step, 3);
  EXPECT_THAT(contents.events[4].scalars,
              ElementsAre(Pair("accuracy", 0.9f), Pair("loss", 0.125f)));
}

TEST(EventFileReaderTest, DecodesNegativeAndLargeSteps) {
  for (int64_t step : {int64_t{-5}, int64_t{0}, int64_t{1} << 40}) {
    ASSERT_OK_AND_ASSIGN(Event event, DecodeEvent(EncodeScalarsEvent(2.5, step, {{"x", -1.5f}})));
    EXPECT_EQ(event.step, step);
    EXPECT_EQ(event.wall_time, 2.5);
    EXPECT_THAT(event.scalars, ElementsAre(Pair("x", -1.5f)));
  }
}

TEST(EventFileReaderTest, SkipsFieldsItDoesNotKnow) {
  // Event: wall_time, step 7, an unknown varint field 6 and bytes field 4 (graph_def),
  // then a summary with a tensor-only value (field 8) and a simple value.
  const std::string tensor_value = std::string("\x0a\x01t", 3) + "\x42\x02\x08\x01";
  const std::string simple_value = std::string("\x0a\x01s\x15\0\0\x80\x3f", 8);
  const std::string summary = "\x0a" + std::string(1, static_cast<char>(tensor_value.size())) +
                              tensor_value + "\x0a" +
                              std::string(1, static_cast<char>(simple_value.size())) + simple_value;
  const std::string event = std::string("\x09\0\0\0\0\0\0\xf8\x3f", 9) + "\x10\x07" +
                            "\x30\x96\x01" + "\x22\x03gdf" + "\x2a" +
                            std::string(1, static_cast<char>(summary.size())) + summary;
  ASSERT_OK_AND_ASSIGN(Event decoded, DecodeEvent(event));
  EXPECT_EQ(decoded.wall_time, 1.5);
  EXPECT_EQ(decoded.step, 7);
  EXPECT_THAT(decoded.scalars, ElementsAre(Pair("s", 1.0f)));
}

TEST(EventFileReaderTest, MalformedPayloadsAreErrors) {
  EXPECT_EQ(DecodeEvent("\x10").status().code(), Code::kInvalidArgument);  // no varint
  EXPECT_EQ(DecodeEvent("\x2a\x05"
                        "ab")
                .status()
                .code(),
            Code::kInvalidArgument);                                               // short
  EXPECT_EQ(DecodeEvent("\x09\x01\x02").status().code(), Code::kInvalidArgument);  // fixed64
  EXPECT_EQ(DecodeEvent("\x0b").status().code(), Code::kInvalidArgument);  // group wire type
}

TEST(EventFileReaderTest, AKnownFieldWithTheWrongWireTypeIsAnError) {
  // Field 2 (step) as fixed32 instead of a varint.
  const Status status = DecodeEvent(std::string("\x15\0\0\0\0", 5)).status();
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("field 2"));
}

TEST(EventFileReaderTest, AFileCutInsideARecordYieldsTheRecordsBeforeItAndAWarning) {
  ScopedTempDir dir("truncated");
  const std::string bytes = ReadTestFile(WriteRun(dir.File("run")));
  const std::vector<size_t> offsets = RecordOffsets(bytes);
  ASSERT_EQ(offsets.size(), 5u);
  const size_t last = offsets.back();
  for (size_t cut = last + 1; cut < bytes.size(); ++cut) {
    std::string warning;
    ASSERT_OK_AND_ASSIGN(std::vector<std::string> records,
                         SplitRecords(bytes.substr(0, cut), "f.tfevents", &warning));
    EXPECT_EQ(records.size(), 4u) << "cut at " << cut;
    EXPECT_THAT(warning,
                HasSubstr("f.tfevents: truncated record at offset " + std::to_string(last)))
        << "cut at " << cut;
  }
  // A cut between records loses nothing and warns of nothing.
  std::string warning;
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> records,
                       SplitRecords(bytes.substr(0, last), "f.tfevents", &warning));
  EXPECT_EQ(records.size(), 4u);
  EXPECT_THAT(warning, IsEmpty());
}

TEST(EventFileReaderTest, ATruncatedFileOnDiskStillReads) {
  ScopedTempDir dir("truncated_file");
  const std::string path = WriteRun(dir.File("run"));
  const std::string bytes = ReadTestFile(path);
  ASSERT_TRUE(WriteTestFile(path, bytes.substr(0, bytes.size() - 3)));
  ASSERT_OK_AND_ASSIGN(EventFileContents contents, ReadEventFile(path));
  EXPECT_EQ(contents.events.size(), 4u);
  EXPECT_THAT(contents.warning, HasSubstr(path));
}

TEST(EventFileReaderTest, EveryFlippedBitIsCaughtAndNamesTheFileAndTheRecordOffset) {
  ScopedTempDir dir("flips");
  const std::string bytes = ReadTestFile(WriteRun(dir.File("run")));
  const std::vector<size_t> offsets = RecordOffsets(bytes);
  for (size_t at = 0; at < bytes.size(); ++at) {
    std::string flipped = bytes;
    flipped[at] = static_cast<char>(flipped[at] ^ (1 << (at % 8)));
    size_t record = offsets.front();
    for (size_t start : offsets) {
      if (start <= at) record = start;
    }
    const Status status = SplitRecords(flipped, "f.tfevents", nullptr).status();
    ASSERT_FALSE(status.ok()) << "flip at byte " << at << " went unnoticed";
    EXPECT_THAT(status.message(), HasSubstr("data loss: f.tfevents: "));
    EXPECT_THAT(status.message(),
                HasSubstr("CRC mismatch in the record at offset " + std::to_string(record)))
        << "flip at byte " << at;
    const bool in_header = at - record < 12;
    EXPECT_THAT(status.message(), HasSubstr(in_header ? "length CRC" : "data CRC"));
  }
}

TEST(EventFileReaderTest, ACorruptFileOnDiskIsAnErrorNamingIt) {
  ScopedTempDir dir("corrupt");
  const std::string path = WriteRun(dir.File("run"));
  std::string bytes = ReadTestFile(path);
  bytes[bytes.size() - 6] ^= 0x10;  // inside the last record's data
  ASSERT_TRUE(WriteTestFile(path, bytes));
  const Status status = ReadEventFile(path).status();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(path));
  EXPECT_THAT(status.message(), HasSubstr("data CRC mismatch"));
}

TEST(EventFileReaderTest, ARecordWithGoodCrcsButNoEventNamesTheFileAndOffset) {
  ScopedTempDir dir("garbage");
  const std::string path = dir.File("events.out.tfevents.1.host");
  const std::string first = FrameRecord(EncodeFileVersionEvent(1.0));
  ASSERT_TRUE(WriteTestFile(path, first + FrameRecord("\x2a\x09short")));
  const Status status = ReadEventFile(path).status();
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr(path + ": the Event in the record at offset " +
                                          std::to_string(first.size())));
}

TEST(LogdirScalarsTest, GroupsScalarsByRunAndTag) {
  ScopedTempDir dir("logdir");
  WriteRun(dir.File("worker_0"), 1.0f);
  WriteRun(dir.File("worker_1"), 2.0f);
  ASSERT_OK_AND_ASSIGN(LogdirScalars scalars, ReadLogdirScalars(dir.path()));
  EXPECT_EQ(scalars.event_files, 2);
  EXPECT_THAT(scalars.warnings, IsEmpty());
  ASSERT_EQ(scalars.runs.size(), 2u);
  const auto& loss = scalars.runs.at("worker_1").at("loss");
  ASSERT_EQ(loss.size(), 4u);
  EXPECT_EQ(loss[0].step, 1);
  EXPECT_EQ(loss[0].value, 2.0);
  EXPECT_EQ(loss[3].step, 3);
  EXPECT_EQ(loss[3].value, 0.125);
  ASSERT_EQ(scalars.runs.at("worker_0").at("accuracy").size(), 1u);
  EXPECT_FLOAT_EQ(scalars.runs.at("worker_0").at("accuracy")[0].value, 0.9f);
}

TEST(LogdirScalarsTest, EventFilesInTheLogdirItselfAreTheRunDot) {
  ScopedTempDir dir("flat");
  WriteRun(dir.path());
  ASSERT_OK_AND_ASSIGN(LogdirScalars scalars, ReadLogdirScalars(dir.path()));
  ASSERT_EQ(scalars.runs.size(), 1u);
  EXPECT_EQ(scalars.runs.begin()->first, ".");
}

TEST(LogdirScalarsTest, AnEmptyOrMissingLogdirIsNotFoundNamingIt) {
  ScopedTempDir dir("empty");
  ASSERT_TRUE(WriteTestFile(dir.File("notes.txt"), "no events here"));
  Status status = ReadLogdirScalars(dir.path()).status();
  EXPECT_EQ(status.code(), Code::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("no event files"));
  EXPECT_THAT(status.message(), HasSubstr(dir.path()));

  status = ReadLogdirScalars(dir.File("missing")).status();
  EXPECT_EQ(status.code(), Code::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr(dir.File("missing")));
}

}  // namespace
}  // namespace actorflow
