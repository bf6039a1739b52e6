#include "training/data/tfrecord.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "graph/status_testing.h"
#include "graph/test_files.h"

namespace actorflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string WriteRecords(const std::string& path, const std::vector<std::string>& records) {
  auto writer = TFRecordWriter::Create(path);
  EXPECT_OK(writer.status());
  if (!writer.ok()) return path;
  for (const std::string& record : records) EXPECT_OK((*writer)->Write(record));
  EXPECT_OK((*writer)->Close());
  return path;
}

struct ReadResult {
  std::vector<std::string> records;
  std::vector<Status> errors;  // in the order met
  int64_t skipped = 0;
};

// Reads until OutOfRange, collecting records and errors (each error stands for one
// record, so reading goes on after it). Bounded, so a reader that never ends fails.
ReadResult ReadAll(const std::string& path, bool skip = false) {
  ReadResult result;
  TFRecordReaderOptions options;
  options.skip_corrupt_records = skip;
  auto reader = TFRecordReader::Open(path, options);
  EXPECT_OK(reader.status());
  if (!reader.ok()) return result;
  for (int calls = 0; calls < 10000; ++calls) {
    std::string record;
    Status s = (*reader)->ReadRecord(&record);
    if (s.code() == Code::kOutOfRange) break;
    if (s.ok()) {
      result.records.push_back(record);
    } else {
      result.errors.push_back(s);
    }
  }
  result.skipped = (*reader)->skipped_records();
  return result;
}

TEST(Crc32cTest, MatchesKnownVectors) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  const std::string zeros(32, '\0');
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  const std::string ones(32, '\xff');
  EXPECT_EQ(Crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  EXPECT_EQ(Crc32c("", 0), 0u);
  EXPECT_EQ(Crc32c("a", 1), 0xC1D04330u);
}

TEST(Crc32cTest, MaskRotatesAndAddsTheConstant) {
  EXPECT_EQ(MaskCrc(0), 0xa282ead8u);
  EXPECT_EQ(MaskCrc(0x00008000u), 0xa282ead9u);  // bit 15 rotates to bit 0
  EXPECT_EQ(MaskCrc(1), 0xa282ead8u + (1u << 17));
}

TEST(TFRecordTest, FramesARecordAsLengthCrcDataCrc) {
  const std::string framed = FrameRecord("abc");
  ASSERT_EQ(framed.size(), 3u + kTFRecordHeaderBytes + kTFRecordFooterBytes);
  EXPECT_EQ(framed.substr(0, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(framed.substr(12, 3), "abc");
  std::string warning;
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> split, SplitRecords(framed, "mem", &warning));
  EXPECT_THAT(split, ElementsAre("abc"));
  EXPECT_TRUE(warning.empty());
}

TEST(TFRecordTest, WhatTheWriterWritesTheReaderReadsBack) {
  ScopedTempDir dir("roundtrip");
  std::string big(3 << 20, '\0');  // larger than the read buffer
  std::mt19937 random(1);
  for (char& c : big) c = static_cast<char>(random());
  const std::vector<std::string> records = {"first", "", std::string("\0\x01\xff", 3), big, "last"};
  const std::string path = WriteRecords(dir.File("r.tfrecord"), records);
  ASSERT_OK_AND_ASSIGN(auto reader, TFRecordReader::Open(path));
  std::string record;
  uint64_t offset = 0;
  for (const std::string& expected : records) {
    EXPECT_EQ(reader->offset(), offset);
    ASSERT_OK(reader->ReadRecord(&record));
    EXPECT_TRUE(record == expected) << "a record of " << expected.size() << " bytes";
    offset += expected.size() + 16;
  }
  EXPECT_EQ(reader->ReadRecord(&record).code(), Code::kOutOfRange);
  EXPECT_EQ(reader->ReadRecord(&record).code(), Code::kOutOfRange);  // and it stays there
  // The bytes are what FrameRecord makes, record after record.
  std::string framed;
  for (const std::string& r : records) framed += FrameRecord(r);
  EXPECT_TRUE(ReadTestFile(path) == framed);
}

TEST(TFRecordTest, AnEmptyFileHasNoRecords) {
  ScopedTempDir dir("empty");
  const ReadResult result = ReadAll(WriteRecords(dir.File("e.tfrecord"), {}));
  EXPECT_TRUE(result.records.empty());
  EXPECT_TRUE(result.errors.empty());
}

TEST(TFRecordTest, ARecordCutShortIsAnErrorNamingTheFileAndItsOffset) {
  ScopedTempDir dir("cut");
  const std::string path = WriteRecords(dir.File("c.tfrecord"), {"one", "two", "three!"});
  const std::string bytes = ReadTestFile(path);
  const size_t last = 2 * (3 + 16);
  for (size_t cut = last + 1; cut < bytes.size(); ++cut) {
    ASSERT_TRUE(WriteTestFile(path, bytes.substr(0, cut)));
    const ReadResult result = ReadAll(path);
    EXPECT_THAT(result.records, ElementsAre("one", "two")) << "cut at " << cut;
    ASSERT_EQ(result.errors.size(), 1u) << "cut at " << cut;
    EXPECT_TRUE(IsDataLoss(result.errors[0]));
    EXPECT_THAT(
        result.errors[0].message(),
        StartsWith("data loss: " + path + ": truncated record at offset " + std::to_string(last)));
  }
}

TEST(TFRecordTest, SkippingCountsACutShortTailAsOneRecordAndEndsTheFile) {
  ScopedTempDir dir("cut_skip");
  const std::string path = WriteRecords(dir.File("c.tfrecord"), {"one", "two", "three!"});
  const std::string bytes = ReadTestFile(path);
  ASSERT_TRUE(WriteTestFile(path, bytes.substr(0, bytes.size() - 5)));
  const ReadResult result = ReadAll(path, /*skip=*/true);
  EXPECT_THAT(result.records, ElementsAre("one", "two"));
  EXPECT_TRUE(result.errors.empty());
  EXPECT_EQ(result.skipped, 1);
}

TEST(TFRecordTest, AFlippedDataByteIsAnErrorAndReadingGoesOnAfterIt) {
  ScopedTempDir dir("flip_data");
  const std::string path = WriteRecords(dir.File("f.tfrecord"), {"one", "two", "three"});
  std::string bytes = ReadTestFile(path);
  const size_t second = 3 + 16;
  bytes[second + 12 + 1] ^= 0x04;  // inside "two"
  ASSERT_TRUE(WriteTestFile(path, bytes));

  const ReadResult strict = ReadAll(path);
  EXPECT_THAT(strict.records, ElementsAre("one", "three"));
  ASSERT_EQ(strict.errors.size(), 1u);
  EXPECT_TRUE(IsDataLoss(strict.errors[0]));
  EXPECT_EQ(strict.errors[0].message(), "data loss: " + path +
                                            ": data CRC mismatch in the record at offset " +
                                            std::to_string(second) + ": the file is corrupt");
  EXPECT_EQ(strict.skipped, 0);

  const ReadResult skipping = ReadAll(path, /*skip=*/true);
  EXPECT_THAT(skipping.records, ElementsAre("one", "three"));
  EXPECT_TRUE(skipping.errors.empty());
  EXPECT_EQ(skipping.skipped, 1);
}

TEST(TFRecordTest, AFlippedDataCrcByteIsCaughtToo) {
  ScopedTempDir dir("flip_crc");
  const std::string path = WriteRecords(dir.File("f.tfrecord"), {"one", "two"});
  std::string bytes = ReadTestFile(path);
  bytes[bytes.size() - 1] ^= 0x80;
  ASSERT_TRUE(WriteTestFile(path, bytes));
  const ReadResult skipping = ReadAll(path, /*skip=*/true);
  EXPECT_THAT(skipping.records, ElementsAre("one"));
  EXPECT_EQ(skipping.skipped, 1);
}

TEST(TFRecordTest, AFlippedLengthByteEndsTheFileWithAnErrorEvenWhenSkipping) {
  ScopedTempDir dir("flip_length");
  const std::string path = WriteRecords(dir.File("f.tfrecord"), {"one", "two", "three"});
  const std::string bytes = ReadTestFile(path);
  const size_t second = 3 + 16;
  for (size_t at = second; at < second + 12; ++at) {  // the length and its CRC
    std::string flipped = bytes;
    flipped[at] ^= static_cast<char>(1 << (at % 8));
    ASSERT_TRUE(WriteTestFile(path, flipped));
    for (bool skip : {false, true}) {
      const ReadResult result = ReadAll(path, skip);
      EXPECT_THAT(result.records, ElementsAre("one")) << "flip at " << at;
      ASSERT_EQ(result.errors.size(), 1u) << "flip at " << at;
      EXPECT_THAT(result.errors[0].message(),
                  HasSubstr(path + ": length CRC mismatch in the record at offset " +
                            std::to_string(second)));
      EXPECT_EQ(result.skipped, 0);
    }
  }
}

TEST(TFRecordTest, AHugeLengthWithAGoodCrcIsACutShortRecordNotAnAllocation) {
  ScopedTempDir dir("huge");
  std::string header(8, '\xff');
  const uint32_t crc = MaskCrc(Crc32c(header.data(), 8));
  for (int i = 0; i < 4; ++i) header.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  const std::string path = dir.File("h.tfrecord");
  ASSERT_TRUE(WriteTestFile(path, FrameRecord("ok") + header + "abc"));
  const ReadResult result = ReadAll(path);
  EXPECT_THAT(result.records, ElementsAre("ok"));
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_THAT(result.errors[0].message(), HasSubstr("truncated record at offset 18"));
}

TEST(TFRecordTest, ArbitraryBytesGiveRecordsOrErrorsAndAlwaysEnd) {
  ScopedTempDir dir("fuzz");
  const std::string path = dir.File("z.tfrecord");
  std::mt19937 random(7);
  const std::string valid = FrameRecord("hello") + FrameRecord(std::string(40, 'x'));
  for (int round = 0; round < 300; ++round) {
    std::string bytes = round % 2 ? valid : std::string(random() % 64, '\0');
    for (char& c : bytes) {
      if (round % 2 == 0 || random() % 16 == 0) c = static_cast<char>(random());
    }
    ASSERT_TRUE(WriteTestFile(path, bytes));
    for (bool skip : {false, true}) {
      const ReadResult result = ReadAll(path, skip);
      EXPECT_LE(result.records.size() + result.errors.size(), 3u) << "round " << round;
    }
  }
}

TEST(TFRecordTest, AMissingFileIsNotFoundNamingIt) {
  const Status status = TFRecordReader::Open("/nonexistent/x.tfrecord").status();
  EXPECT_EQ(status.code(), Code::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("/nonexistent/x.tfrecord"));
  const Status create = TFRecordWriter::Create("/nonexistent/dir/y.tfrecord").status();
  EXPECT_EQ(create.code(), Code::kFailedPrecondition);
  EXPECT_THAT(create.message(), HasSubstr("/nonexistent/dir/y.tfrecord"));
}

TEST(TFRecordWriterTest, FlushMakesRecordsVisibleAndCloseEndsWriting) {
  ScopedTempDir dir("writer");
  const std::string path = dir.File("w.tfrecord");
  ASSERT_OK_AND_ASSIGN(auto writer, TFRecordWriter::Create(path));
  ASSERT_OK(writer->Write("a"));
  ASSERT_OK(writer->Flush());
  EXPECT_EQ(ReadTestFile(path), FrameRecord("a"));
  ASSERT_OK(writer->Write("b"));
  EXPECT_EQ(writer->records(), 2);
  ASSERT_OK(writer->Close());
  EXPECT_OK(writer->Close());
  EXPECT_EQ(writer->Write("c").code(), Code::kFailedPrecondition);
  EXPECT_EQ(ReadTestFile(path), FrameRecord("a") + FrameRecord("b"));
}

TEST(TFRecordWriterTest, AWriteThatFailsIsAnErrorNamingTheFile) {
  auto writer = TFRecordWriter::Create("/dev/full");
  if (!writer.ok()) GTEST_SKIP() << "no /dev/full here";
  TFRecordWriter* raw = writer->get();
  Status status = raw->Write(std::string(1 << 21, 'x'));  // past stdio's buffer
  if (status.ok()) status = raw->Close();
  EXPECT_EQ(status.code(), Code::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("/dev/full"));
}

}  // namespace
}  // namespace actorflow
