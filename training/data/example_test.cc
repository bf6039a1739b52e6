#include "training/data/example.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "graph/status_testing.h"
#include "training/data/decode_raw.h"
#include "training/data/parse_example.h"

namespace actorflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

template <typename T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.NumElements());
}

Features Sample() {
  Features features;
  features["pixels"] = Feature::Floats({0.5f, -1.25f, 3e9f});
  features["label"] = Feature::Int64s({7});
  features["ids"] = Feature::Int64s({-1, 0, int64_t{1} << 40});
  features["name"] = Feature::Bytes({"shirt", std::string("\0\xff", 2)});
  features["empty"] = Feature::Floats({});
  return features;
}

TEST(ExampleTest, DecodeReadsBackWhatEncodeWrote) {
  ASSERT_OK_AND_ASSIGN(Features decoded, DecodeExample(EncodeExample(Sample())));
  ASSERT_EQ(decoded.size(), 5u);
  EXPECT_THAT(decoded["pixels"].float_list, ElementsAre(0.5f, -1.25f, 3e9f));
  EXPECT_THAT(decoded["label"].int64_list, ElementsAre(7));
  EXPECT_THAT(decoded["ids"].int64_list, ElementsAre(-1, 0, int64_t{1} << 40));
  EXPECT_EQ(decoded["name"].kind, Feature::Kind::kBytes);
  EXPECT_THAT(decoded["name"].bytes_list, ElementsAre("shirt", std::string("\0\xff", 2)));
  EXPECT_EQ(decoded["empty"].kind, Feature::Kind::kFloat);  // present, with no values
  EXPECT_EQ(decoded["empty"].size(), 0u);
}

TEST(ExampleTest, EncodingIsDeterministicAndPacked) {
  Features features;
  features["x"] = Feature::Int64s({1, 2});
  // Example{features: Features{entry{key "x", value Feature{int64_list: [1, 2] packed}}}}
  const std::string expected("\x0a\x0d\x0a\x0b\x0a\x01x\x12\x06\x1a\x04\x0a\x02\x01\x02", 15);
  EXPECT_EQ(EncodeExample(features), expected);
}

TEST(ExampleTest, ParsesFixedLengthFeaturesInSpecOrder) {
  const FeatureSpec spec = {
      {"label", FeatureType::kInt64, Shape{}, std::nullopt},
      {"pixels", FeatureType::kFloat32, Shape{3}, std::nullopt},
      {"ids", FeatureType::kInt64, Shape{3, 1}, std::nullopt},
      {"weight", FeatureType::kFloat32, Shape{}, Feature::Floats({2.5f})},
  };
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> parsed, ParseExample(EncodeExample(Sample()), spec));
  ASSERT_EQ(parsed.size(), 4u);
  EXPECT_EQ(parsed[0].DebugString(), "int64[]");
  EXPECT_EQ(*parsed[0].scalar<int64_t>(), 7);
  EXPECT_EQ(parsed[1].DebugString(), "float32[3]");
  EXPECT_THAT(Values<float>(parsed[1]), ElementsAre(0.5f, -1.25f, 3e9f));
  EXPECT_EQ(parsed[2].DebugString(), "int64[3,1]");
  EXPECT_THAT(Values<int64_t>(parsed[2]), ElementsAre(-1, 0, int64_t{1} << 40));
  EXPECT_EQ(*parsed[3].scalar<float>(), 2.5f);  // the default
}

TEST(ExampleTest, BytesFeaturesComeOutAsOneInt32PerByte) {
  Features features;
  features["raw"] = Feature::Bytes({std::string("\x00\x80\xff", 3)});
  features["pair"] = Feature::Bytes({"ab", "cd"});
  features["ragged"] = Feature::Bytes({"ab", "c"});
  const std::string serialized = EncodeExample(features);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> parsed,
                       ParseExample(serialized, {{"raw", FeatureType::kBytes, Shape{}, {}},
                                                 {"pair", FeatureType::kBytes, Shape{2}, {}}}));
  EXPECT_EQ(parsed[0].DebugString(), "int32[3]");
  EXPECT_THAT(Values<int32_t>(parsed[0]), ElementsAre(0, 128, 255));
  EXPECT_EQ(parsed[1].DebugString(), "int32[2,2]");
  EXPECT_THAT(Values<int32_t>(parsed[1]), ElementsAre('a', 'b', 'c', 'd'));

  const Status ragged =
      ParseExample(serialized, {{"ragged", FeatureType::kBytes, Shape{2}, {}}}).status();
  EXPECT_EQ(ragged.code(), Code::kInvalidArgument);
  EXPECT_THAT(ragged.message(), HasSubstr("feature 'ragged'"));
  EXPECT_THAT(ragged.message(), HasSubstr("one length"));
}

TEST(ExampleTest, AMissingFeatureWithoutADefaultIsAnErrorNamingIt) {
  const Status status =
      ParseExample(EncodeExample(Sample()), {{"height", FeatureType::kInt64, Shape{}, {}}})
          .status();
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("feature 'height' is missing and has no default"));
}

TEST(ExampleTest, AFeatureOfTheWrongKindIsAnErrorNamingBoth) {
  const Status status =
      ParseExample(EncodeExample(Sample()), {{"label", FeatureType::kFloat32, Shape{}, {}}})
          .status();
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("feature 'label' holds a int64_list"));
  EXPECT_THAT(status.message(), HasSubstr("wants float32 (a float_list)"));
}

TEST(ExampleTest, TheWrongNumberOfValuesIsAnErrorNamingTheShape) {
  const Status status =
      ParseExample(EncodeExample(Sample()), {{"pixels", FeatureType::kFloat32, Shape{2}, {}}})
          .status();
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("feature 'pixels' holds 3 values, but its shape [2] needs 2"));
  // An empty list is present: it does not fall back to the default.
  const Status empty =
      ParseExample(EncodeExample(Sample()),
                   {{"empty", FeatureType::kFloat32, Shape{}, Feature::Floats({1})}})
          .status();
  EXPECT_THAT(empty.message(), HasSubstr("feature 'empty' holds 0 values"));
}

TEST(ExampleTest, ABadSpecIsAnErrorNamingTheEntry) {
  const std::string serialized = EncodeExample(Sample());
  EXPECT_THAT(ParseExample(serialized, {{"", FeatureType::kInt64, Shape{}, {}}}).status().message(),
              HasSubstr("has no name"));
  EXPECT_THAT(ParseExample(serialized, {{"label", FeatureType::kInt64, Shape{}, {}},
                                        {"label", FeatureType::kInt64, Shape{}, {}}})
                  .status()
                  .message(),
              HasSubstr("repeats the name"));
  EXPECT_THAT(
      ParseExample(serialized, {{"ids", FeatureType::kInt64, Shape{-1}, {}}}).status().message(),
      HasSubstr("spec entry 0 ('ids'): shape"));
  EXPECT_THAT(ParseExample(serialized, {{"w", FeatureType::kInt64, Shape{2}, Feature::Int64s({1})}})
                  .status()
                  .message(),
              HasSubstr("feature 'w' has a default that holds 1 values"));
}

TEST(ExampleTest, FeaturesFromTensorsEncodeNumbersByKind) {
  std::map<std::string, Tensor> tensors;
  tensors["f"] = Tensor::FromVector<double>({1.5, 2.0});
  tensors["i"] = Tensor::FromVector<int32_t>({-3, 4}, Shape{1, 2});
  tensors["b"] = Tensor::Scalar<bool>(true);
  ASSERT_OK_AND_ASSIGN(Features features, FeaturesFromTensors(tensors));
  EXPECT_THAT(features["f"].float_list, ElementsAre(1.5f, 2.0f));
  EXPECT_THAT(features["i"].int64_list, ElementsAre(-3, 4));
  EXPECT_THAT(features["b"].int64_list, ElementsAre(1));
  tensors["bad"] = Tensor();
  EXPECT_THAT(FeaturesFromTensors(tensors).status().message(), HasSubstr("feature 'bad'"));
}

TEST(ImageExampleTest, ParsesWhatEncodeImageExampleWrote) {
  std::string pixels(2 * 3, '\0');
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<char>(i * 51);  // 0..255
  const std::string record = EncodeImageExample(2, 3, 1, 9, pixels);
  ASSERT_OK_AND_ASSIGN(Features features, DecodeExample(record));
  EXPECT_THAT(features["height"].int64_list, ElementsAre(2));
  EXPECT_THAT(features["width"].int64_list, ElementsAre(3));
  EXPECT_THAT(features["depth"].int64_list, ElementsAre(1));
  EXPECT_THAT(features["label"].int64_list, ElementsAre(9));
  EXPECT_THAT(features["image_raw"].bytes_list, ElementsAre(pixels));

  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> parsed, ParseImageExample(record, {2, 3, 1}));
  EXPECT_EQ(parsed[0].DebugString(), "float32[2,3,1]");
  EXPECT_THAT(Values<float>(parsed[0]), ElementsAre(0.0f, 0.2f, 0.4f, 0.6f, 0.8f, 1.0f));
  EXPECT_EQ(parsed[1].DebugString(), "int32[]");
  EXPECT_EQ(*parsed[1].scalar<int32_t>(), 9);
}

TEST(ImageExampleTest, SizesThatDoNotMatchAreErrorsNamingTheFeature) {
  const std::string pixels(6, '\x10');
  EXPECT_THAT(
      ParseImageExample(EncodeImageExample(2, 3, 1, 0, pixels), {3, 2, 1}).status().message(),
      HasSubstr("feature 'height' is 2"));
  EXPECT_THAT(
      ParseImageExample(EncodeImageExample(2, 3, 1, 0, "abc"), {2, 3, 1}).status().message(),
      HasSubstr("feature 'image_raw' holds 3 bytes"));
  EXPECT_THAT(ParseImageExample(EncodeImageExample(2, 3, 1, int64_t{1} << 33, pixels), {2, 3, 1})
                  .status()
                  .message(),
              HasSubstr("feature 'label' is 8589934592"));
  EXPECT_THAT(
      ParseImageExample(EncodeImageExample(2, 3, 1, 0, pixels), {0, 3, 1}).status().message(),
      HasSubstr(">= 1"));
  // height, width and depth may be absent; label may not.
  Features only_raw;
  only_raw["image_raw"] = Feature::Bytes({pixels});
  only_raw["label"] = Feature::Int64s({4});
  EXPECT_OK(ParseImageExample(EncodeExample(only_raw), {2, 3, 1}).status());
  only_raw.erase("label");
  EXPECT_THAT(ParseImageExample(EncodeExample(only_raw), {2, 3, 1}).status().message(),
              HasSubstr("feature 'label' is missing"));
}

TEST(ExampleTest, ArbitraryBytesNeverCrashTheDecoder) {
  const std::string valid = EncodeExample(Sample());
  for (size_t cut = 0; cut < valid.size(); ++cut) {
    static_cast<void>(DecodeExample(valid.substr(0, cut)));
  }
  std::mt19937 random(3);
  for (int round = 0; round < 3000; ++round) {
    std::string bytes = valid;
    for (int flips = 1 + random() % 4; flips > 0; --flips) {
      bytes[random() % bytes.size()] = static_cast<char>(random());
    }
    const StatusOr<Features> decoded = DecodeExample(bytes);
    if (!decoded.ok()) {
      EXPECT_EQ(decoded.status().code(), Code::kInvalidArgument);
    }
    std::string noise(random() % 48, '\0');
    for (char& c : noise) c = static_cast<char>(random());
    static_cast<void>(ParseExample(noise, {{"x", FeatureType::kBytes, Shape{}, {}}}));
  }
}

TEST(DecodeRawTest, ReadsLittleAndBigEndianElements) {
  ASSERT_OK_AND_ASSIGN(Tensor u8, DecodeRaw(std::string("\x00\x7f\xff", 3), RawType::kUInt8));
  EXPECT_EQ(u8.DebugString(), "int32[3]");
  EXPECT_THAT(Values<int32_t>(u8), ElementsAre(0, 127, 255));
  ASSERT_OK_AND_ASSIGN(Tensor i8, DecodeRaw(std::string("\x00\x7f\xff", 3), RawType::kInt8));
  EXPECT_THAT(Values<int32_t>(i8), ElementsAre(0, 127, -1));
  ASSERT_OK_AND_ASSIGN(Tensor i16, DecodeRaw(std::string("\x01\x80\xfe\xff", 4), RawType::kInt16));
  EXPECT_THAT(Values<int32_t>(i16), ElementsAre(-32767, -2));
  ASSERT_OK_AND_ASSIGN(Tensor u16, DecodeRaw(std::string("\x01\x80", 2), RawType::kUInt16,
                                             /*little_endian=*/false));
  EXPECT_THAT(Values<int32_t>(u16), ElementsAre(0x0180));
  ASSERT_OK_AND_ASSIGN(Tensor f32,
                       DecodeRaw(std::string("\0\0\x80\x3f\0\0\0\xc0", 8), RawType::kFloat32));
  EXPECT_THAT(Values<float>(f32), ElementsAre(1.0f, -2.0f));
  ASSERT_OK_AND_ASSIGN(Tensor i64, DecodeRaw(std::string(8, '\xff'), RawType::kInt64));
  EXPECT_THAT(Values<int64_t>(i64), ElementsAre(-1));
  ASSERT_OK_AND_ASSIGN(Tensor f64, DecodeRaw(std::string("\x3f\xf8\0\0\0\0\0\0", 8),
                                             RawType::kFloat64, /*little_endian=*/false));
  EXPECT_THAT(Values<double>(f64), ElementsAre(1.5));
  const Status odd = DecodeRaw("abc", RawType::kInt16).status();
  EXPECT_EQ(odd.code(), Code::kInvalidArgument);
  EXPECT_THAT(odd.message(), HasSubstr("3 bytes are not a whole number of int16"));
}

TEST(DecodeRawTest, BytesRoundTripThroughTensors) {
  const std::string bytes("\x00\x01\xfe\xff", 4);
  const Tensor t = BytesToTensor(bytes);
  EXPECT_EQ(t.dtype(), kByteDType);
  ASSERT_OK_AND_ASSIGN(std::string back, TensorToBytes(t));
  EXPECT_EQ(back, bytes);
  EXPECT_THAT(TensorToBytes(Tensor::FromVector<int32_t>({1, 256})).status().message(),
              HasSubstr("element 1"));
  EXPECT_EQ(TensorToBytes(Tensor::Scalar<float>(1)).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace actorflow
