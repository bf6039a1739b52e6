// The reader and parser checked against bytes made independently of the project's own
// encoder and framing: a minimal protobuf writer and a bitwise CRC-32C written here,
// producing what other protobuf writers may legally produce (unpacked lists, fields out
// of order, unknown fields, repeated messages that merge), and the bytes protobuf's own
// Python library serializes for tf.train.Example.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "graph/status_testing.h"
#include "graph/test_files.h"
#include "training/data/example.h"
#include "training/data/parse_example.h"
#include "training/data/tfrecord.h"

namespace actorflow {
namespace {

using ::testing::ElementsAre;

// --- A protobuf writer of this test's own ------------------------------------------------

std::string Varint(uint64_t v) {
  std::string out;
  do {
    uint8_t byte = v & 0x7f;
    v >>= 7;
    if (v != 0) byte |= 0x80;
    out.push_back(static_cast<char>(byte));
  } while (v != 0);
  return out;
}

std::string Key(int field, int wire_type) { return Varint((uint64_t(field) << 3) | wire_type); }

std::string Little(uint64_t v, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  return out;
}

std::string Bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return Little(bits, 4);
}

std::string VarintField(int field, uint64_t v) { return Key(field, 0) + Varint(v); }
std::string Fixed32Field(int field, const std::string& four) { return Key(field, 5) + four; }
std::string Fixed64Field(int field, uint64_t v) { return Key(field, 1) + Little(v, 8); }
std::string Message(int field, const std::string& body) {
  return Key(field, 2) + Varint(body.size()) + body;
}

// CRC-32C bit by bit (no table), and TFRecord's framing, written out here.
uint32_t BitwiseCrc32c(const std::string& data) {
  uint32_t crc = ~0u;
  for (unsigned char byte : data) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return ~crc;
}

uint32_t Masked(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

std::string Frame(const std::string& data) {
  const std::string length = Little(data.size(), 8);
  return length + Little(Masked(BitwiseCrc32c(length)), 4) + data +
         Little(Masked(BitwiseCrc32c(data)), 4);
}

// An entry of Features.feature: value (2) before key (1), and an unknown fixed32 field.
std::string Entry(const std::string& key, const std::string& feature) {
  return Message(1, Message(2, feature) + Fixed32Field(3, Little(0xdeadbeef, 4)) + Message(1, key));
}

// An Example as a writer other than ours might lay it out.
std::string UnusualExample() {
  // pixels: FloatList with three unpacked values, then a packed run of two, and an
  // unknown varint field between them.
  const std::string pixels =
      Message(2, Fixed32Field(1, Bits(0.25f)) + Fixed32Field(1, Bits(-1.5f)) + VarintField(2, 99) +
                     Fixed32Field(1, Bits(1e-30f)) + Message(1, Bits(3.0f) + Bits(-0.0f)));
  // label: Int64List unpacked, -5 as a 10-byte two's complement varint.
  const std::string label = Message(3, VarintField(1, static_cast<uint64_t>(int64_t{-5})));
  // ids: packed, then one more unpacked value; an unknown length-delimited field in
  // the Feature itself.
  const std::string ids =
      Message(5, "ignored") +
      Message(3, Message(1, Varint(0) + Varint(300) + Varint(uint64_t(1) << 62)) +
                     VarintField(1, static_cast<uint64_t>(int64_t{-1})));
  // raw: a BytesList with an unknown fixed64 field.
  const std::string raw = Message(
      1, Message(1, std::string("\x00\x01\xfe", 3)) + Fixed64Field(4, 7) + Message(1, "xyz"));
  // score: a float_list given in two pieces, which merge.
  const std::string score =
      Message(2, Fixed32Field(1, Bits(1.0f))) + Message(2, Message(1, Bits(2.0f)));
  // kind: first a bytes_list, then an int64_list: the oneof keeps the last.
  const std::string kind = Message(1, Message(1, "old")) + Message(3, VarintField(1, 42));

  const std::string first_features = Fixed64Field(9, 1) + Entry("pixels", pixels) +
                                     Entry("label", Message(2, "")) + Entry("ids", ids);
  // A second Features message merges with the first; "label" appears again and its
  // last value wins.
  const std::string second_features =
      Entry("raw", raw) + Entry("label", label) + Entry("score", score) + Entry("kind", kind);
  return VarintField(15, 1) + Message(1, first_features) + Fixed32Field(2, Bits(0.0f)) +
         Message(1, second_features);
}

TEST(ExampleWireTest, TheOwnCrcAgreesWithTheProjectsOnKnownAndRandomBytes) {
  EXPECT_EQ(BitwiseCrc32c("123456789"), 0xE3069283u);
  std::mt19937 random(11);
  for (int round = 0; round < 200; ++round) {
    std::string bytes(random() % 300, '\0');
    for (char& c : bytes) c = static_cast<char>(random());
    EXPECT_EQ(Crc32c(bytes.data(), bytes.size()), BitwiseCrc32c(bytes));
    EXPECT_EQ(FrameRecord(bytes), Frame(bytes));
  }
}

TEST(ExampleWireTest, ReadsAndParsesIndependentlyEncodedRecordsExactly) {
  ScopedTempDir dir("wire");
  const std::string path = dir.File("independent.tfrecord");
  {
    std::ofstream out(path, std::ios::binary);
    out << Frame(UnusualExample()) << Frame("") << Frame(UnusualExample());
  }
  ASSERT_OK_AND_ASSIGN(auto reader, TFRecordReader::Open(path));
  std::vector<std::string> records;
  std::string record;
  Status s;
  while ((s = reader->ReadRecord(&record)).ok()) records.push_back(record);
  ASSERT_EQ(s.code(), Code::kOutOfRange) << s;
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0], UnusualExample());
  EXPECT_EQ(records[1], "");

  ASSERT_OK_AND_ASSIGN(Features features, DecodeExample(records[0]));
  EXPECT_EQ(features.size(), 6u);
  const FeatureSpec spec = {
      {"pixels", FeatureType::kFloat32, Shape{5}, {}}, {"label", FeatureType::kInt64, Shape{}, {}},
      {"ids", FeatureType::kInt64, Shape{2, 2}, {}},   {"raw", FeatureType::kBytes, Shape{2}, {}},
      {"score", FeatureType::kFloat32, Shape{2}, {}},  {"kind", FeatureType::kInt64, Shape{1}, {}},
  };
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> parsed, ParseExample(records[0], spec));
  const float* pixels = parsed[0].data<float>();
  EXPECT_THAT(std::vector<float>(pixels, pixels + 5),
              ElementsAre(0.25f, -1.5f, 1e-30f, 3.0f, -0.0f));
  EXPECT_TRUE(std::signbit(pixels[4]));
  EXPECT_EQ(*parsed[1].scalar<int64_t>(), -5);
  const int64_t* ids = parsed[2].data<int64_t>();
  EXPECT_THAT(std::vector<int64_t>(ids, ids + 4), ElementsAre(0, 300, int64_t{1} << 62, -1));
  EXPECT_EQ(parsed[3].DebugString(), "int32[2,3]");
  const int32_t* raw = parsed[3].data<int32_t>();
  EXPECT_THAT(std::vector<int32_t>(raw, raw + 6), ElementsAre(0, 1, 254, 'x', 'y', 'z'));
  EXPECT_THAT(std::vector<float>(parsed[4].data<float>(), parsed[4].data<float>() + 2),
              ElementsAre(1.0f, 2.0f));
  EXPECT_EQ(parsed[5].data<int64_t>()[0], 42);

  // The empty record is an Example with no features.
  ASSERT_OK_AND_ASSIGN(Features none, DecodeExample(records[1]));
  EXPECT_TRUE(none.empty());
}

// tf.train.Example{height 28, width 28, depth 1, label 9, image_raw [0 1 127 128 254 255],
// scores [0.5 -2 0.001], ids [-1 0 300 2^62], empty: float_list {}} as protobuf's
// Python library serializes it with deterministic=True (map keys sorted).
const char kProtobufExample[] =
    "\x0a\xa6\x01\x0a\x0e\x0a\x05\x64\x65\x70\x74\x68\x12\x05\x1a\x03\x0a\x01\x01\x0a"
    "\x0b\x0a\x05\x65\x6d\x70\x74\x79\x12\x02\x12\x00\x0a\x0f\x0a\x06\x68\x65\x69\x67"
    "\x68\x74\x12\x05\x1a\x03\x0a\x01\x1c\x0a\x21\x0a\x03\x69\x64\x73\x12\x1a\x1a\x18"
    "\x0a\x16\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00\xac\x02\x80\x80\x80\x80\x80"
    "\x80\x80\x80\x40\x0a\x17\x0a\x09\x69\x6d\x61\x67\x65\x5f\x72\x61\x77\x12\x0a\x0a"
    "\x08\x0a\x06\x00\x01\x7f\x80\xfe\xff\x0a\x0e\x0a\x05\x6c\x61\x62\x65\x6c\x12\x05"
    "\x1a\x03\x0a\x01\x09\x0a\x1a\x0a\x06\x73\x63\x6f\x72\x65\x73\x12\x10\x12\x0e\x0a"
    "\x0c\x00\x00\x00\x3f\x00\x00\x00\xc0\x6f\x12\x83\x3a\x0a\x0e\x0a\x05\x77\x69\x64"
    "\x74\x68\x12\x05\x1a\x03\x0a\x01\x1c";

TEST(ExampleWireTest, MatchesProtobufsOwnSerializationBothWays) {
  const std::string golden(kProtobufExample, sizeof(kProtobufExample) - 1);
  ASSERT_EQ(golden.size(), 169u);
  ASSERT_OK_AND_ASSIGN(Features features, DecodeExample(golden));
  EXPECT_THAT(features["height"].int64_list, ElementsAre(28));
  EXPECT_THAT(features["label"].int64_list, ElementsAre(9));
  EXPECT_THAT(features["image_raw"].bytes_list,
              ElementsAre(std::string("\x00\x01\x7f\x80\xfe\xff", 6)));
  EXPECT_THAT(features["scores"].float_list, ElementsAre(0.5f, -2.0f, 1e-3f));
  EXPECT_THAT(features["ids"].int64_list, ElementsAre(-1, 0, 300, int64_t{1} << 62));
  EXPECT_EQ(features["empty"].kind, Feature::Kind::kFloat);
  EXPECT_EQ(features["empty"].size(), 0u);
  // The project's encoder writes the same bytes: packed lists, keys in order.
  EXPECT_EQ(EncodeExample(features), golden);

  Features image = features;
  image.erase("scores");
  image.erase("ids");
  image.erase("empty");
  ASSERT_OK_AND_ASSIGN(
      Features from_helper,
      DecodeExample(EncodeImageExample(28, 28, 1, 9, std::string("\x00\x01\x7f\x80\xfe\xff", 6))));
  EXPECT_EQ(EncodeExample(from_helper), EncodeExample(image));
}

}  // namespace
}  // namespace actorflow
