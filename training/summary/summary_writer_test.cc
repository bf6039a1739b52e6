#include "training/summary/summary_writer.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/status_testing.h"
#include "training/summary/event_file.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

uint64_t ReadLittleEndian(const std::string& bytes, size_t at, int size) {
  uint64_t value = 0;
  for (int i = size - 1; i >= 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[at + i]);
  }
  return value;
}

// Splits TFRecord bytes into their payloads, checking both masked CRCs of each.
std::vector<std::string> ParseRecords(const std::string& bytes) {
  std::vector<std::string> records;
  size_t at = 0;
  while (at < bytes.size()) {
    EXPECT_LE(at + 12, bytes.size());
    if (at + 12 > bytes.size()) break;
    const uint64_t length = ReadLittleEndian(bytes, at, 8);
    EXPECT_EQ(ReadLittleEndian(bytes, at + 8, 4), MaskCrc(Crc32c(bytes.data() + at, 8)));
    EXPECT_LE(at + 16 + length, bytes.size());
    if (at + 16 + length > bytes.size()) break;
    const std::string data = bytes.substr(at + 12, length);
    EXPECT_EQ(ReadLittleEndian(bytes, at + 12 + length, 4),
              MaskCrc(Crc32c(data.data(), data.size())));
    records.push_back(data);
    at += 16 + length;
  }
  return records;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string TempDir(const std::string& name) {
  const char* root = std::getenv("TEST_TMPDIR");
  const std::filesystem::path dir =
      std::filesystem::path(root != nullptr ? root : "/tmp") / ("summary_writer_test_" + name);
  std::filesystem::remove_all(dir);
  return dir.string();
}

TEST(Crc32cTest, MatchesKnownVectors) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  const std::string zeros(32, '\0');
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  const std::string ones(32, '\xff');
  EXPECT_EQ(Crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  EXPECT_EQ(Crc32c("", 0), 0u);
}

TEST(Crc32cTest, MaskRotatesAndAddsTheConstant) {
  EXPECT_EQ(MaskCrc(0), 0xa282ead8u);
  EXPECT_EQ(MaskCrc(0x00008000u), 0xa282ead9u);  // bit 15 rotates to bit 0
  EXPECT_EQ(MaskCrc(1), 0xa282ead8u + (1u << 17));
}

TEST(EventFileTest, FramesARecord) {
  const std::string record = FrameRecord("abc");
  ASSERT_EQ(record.size(), 3u + 16u);
  EXPECT_EQ(ReadLittleEndian(record, 0, 8), 3u);
  EXPECT_EQ(record.substr(12, 3), "abc");
  EXPECT_EQ(ReadLittleEndian(record, 15, 4), MaskCrc(Crc32c("abc", 3)));
}

TEST(EventFileTest, EncodesTheFileVersionEvent) {
  const std::string event = EncodeFileVersionEvent(1.5);
  // field 1 fixed64 (tag 0x09) 1.5 = 0x3FF8000000000000, field 3 bytes (tag 0x1a).
  const std::string expected = std::string("\x09\0\0\0\0\0\0\xf8\x3f", 9) + "\x1a\x0d" +
                               "brain.Event:2";
  EXPECT_EQ(event, expected);
}

TEST(EventFileTest, EncodesAScalarEvent) {
  const std::string event = EncodeScalarsEvent(0.0, 300, {{"loss", 1.0f}});
  const std::string value = std::string("\x0a\x04loss\x15\0\0\x80\x3f", 11);
  const std::string summary = "\x0a" + std::string(1, static_cast<char>(value.size())) + value;
  const std::string expected = std::string("\x09\0\0\0\0\0\0\0\0", 9) +
                               "\x10\xac\x02" +  // step 300 as a varint
                               "\x2a" + std::string(1, static_cast<char>(summary.size())) +
                               summary;
  EXPECT_EQ(event, expected);
}

TEST(SummaryWriterTest, WritesANamedFileOfFramedEvents) {
  const std::string dir = TempDir("named") + "/run/a";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SummaryWriter> writer, SummaryWriter::Create(dir));
  const std::string name = std::filesystem::path(writer->path()).filename().string();
  EXPECT_THAT(name, StartsWith("events.out.tfevents."));
  EXPECT_EQ(std::filesystem::path(writer->path()).parent_path(), std::filesystem::path(dir));
  ASSERT_OK(writer->AddScalar("loss", 0.5f, 1));
  ASSERT_OK(writer->AddScalars({{"accuracy", 0.9f}, {"loss", 0.25f}}, 2));
  ASSERT_OK(writer->Flush());

  const std::vector<std::string> records = ParseRecords(ReadFile(writer->path()));
  ASSERT_EQ(records.size(), 3u);
  EXPECT_THAT(records[0], HasSubstr("brain.Event:2"));
  EXPECT_THAT(records[1], HasSubstr("loss"));
  EXPECT_THAT(records[2], HasSubstr("accuracy"));
}

TEST(SummaryWriterTest, DestructionFlushes) {
  const std::string dir = TempDir("destruction");
  std::string path;
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<SummaryWriter> writer, SummaryWriter::Create(dir));
    path = writer->path();
    ASSERT_OK(writer->AddScalar("loss", 1.0f, 7));
  }
  EXPECT_EQ(ParseRecords(ReadFile(path)).size(), 2u);
}

TEST(SummaryWriterTest, TwoWritersInOneDirectoryGetTwoFiles) {
  const std::string dir = TempDir("two");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SummaryWriter> a, SummaryWriter::Create(dir));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SummaryWriter> b, SummaryWriter::Create(dir));
  EXPECT_NE(a->path(), b->path());
  EXPECT_THAT(std::filesystem::path(b->path()).filename().string(),
              StartsWith("events.out.tfevents."));
}

TEST(SummaryWriterTest, ConcurrentWritersProduceWholeRecords) {
  const std::string dir = TempDir("threads");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SummaryWriter> writer, SummaryWriter::Create(dir));
  constexpr int kThreads = 4;
  constexpr int kPerThread = 100;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&writer, t]() {
      for (int i = 0; i < kPerThread; ++i) {
        EXPECT_OK(writer->AddScalar("worker_" + std::to_string(t), 1.0f * i, i));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_OK(writer->Flush());
  EXPECT_EQ(ParseRecords(ReadFile(writer->path())).size(), 1u + kThreads * kPerThread);
}

TEST(SummaryWriterTest, AnUncreatableLogdirIsAnErrorNamingIt) {
  const std::string dir = TempDir("blocked");
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/not_a_dir";
  std::ofstream(file) << "x";
  const std::string logdir = file + "/run";
  StatusOr<std::unique_ptr<SummaryWriter>> writer = SummaryWriter::Create(logdir);
  ASSERT_FALSE(writer.ok());
  EXPECT_THAT(writer.status().ToString(), HasSubstr(logdir));
}

}  // namespace
}  // namespace actorflow
