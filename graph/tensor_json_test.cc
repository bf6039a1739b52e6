#include "graph/tensor_json.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace actorflow {
namespace {

using nlohmann::json;

// Serializes to text and reads back, as a file or a message would.
Tensor ThroughText(const Tensor& t) {
  auto parsed = ParseJsonText(TensorToJson(t).dump(), "test");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  auto back = TensorFromJson(*parsed);
  EXPECT_TRUE(back.ok()) << back.status();
  return back.ok() ? *back : Tensor();
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

using ::testing::HasSubstr;

TEST(TensorToJson, WritesDtypeShapeAndFlatRowMajorData) {
  Tensor t = Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  EXPECT_EQ(TensorToJson(t).dump(), R"({"data":[1,2,3,4,5,6],"dtype":"int32","shape":[2,3]})");
  EXPECT_EQ(TensorToOrderedJson(t).dump(),
            R"({"dtype":"int32","shape":[2,3],"data":[1,2,3,4,5,6]})");
}

TEST(TensorToJson, WritesIntegralFloatsAsIntegers) {
  EXPECT_EQ(TensorToJson(Tensor::FromVector<float>({3, 7}))["data"].dump(), "[3,7]");
  EXPECT_EQ(TensorToJson(Tensor::FromVector<double>({-2, 1e15}))["data"].dump(),
            "[-2,1000000000000000]");
}

TEST(TensorToJson, WritesTheShortestDecimalThatReadsBackExactly) {
  EXPECT_EQ(TensorToJson(Tensor::FromVector<float>({0.1f, 2.5f}))["data"].dump(), "[0.1,2.5]");
  EXPECT_EQ(TensorToJson(Tensor::FromVector<double>({0.1}))["data"].dump(), "[0.1]");
  // Integral but beyond 2^53: written as a float, still exact.
  EXPECT_EQ(TensorToJson(Tensor::FromVector<double>({1e20}))["data"].dump(), "[1e+20]");
}

TEST(TensorToJson, WritesNonFiniteFloatsAsStringsAndReadsThemBack) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor t = Tensor::FromVector<float>({std::nanf(""), inf, -inf, 1.5f});
  EXPECT_EQ(TensorToJson(t)["data"].dump(), R"(["nan","inf","-inf",1.5])");
  Tensor back = ThroughText(t);
  EXPECT_TRUE(std::isnan(back.data<float>()[0]));
  EXPECT_EQ(back.data<float>()[1], inf);
  EXPECT_EQ(back.data<float>()[2], -inf);
  EXPECT_TRUE(TensorsEqual(t, back));
}

TEST(TensorToJson, KeepsTheSignOfNegativeZero) {
  Tensor t = Tensor::FromVector<float>({-0.0f});
  EXPECT_EQ(TensorToJson(t)["data"].dump(), "[-0.0]");
  EXPECT_TRUE(std::signbit(ThroughText(t).data<float>()[0]));
}

TEST(TensorToJson, Float32ValuesRoundTripBitForBit) {
  std::vector<float> values = {1.0f / 3,  0.1f, -123.456f, 3.4028235e38f, -3.4028235e38f,
                               1.17549435e-38f, 1.4e-45f /* denormal */, 16777217.0f,
                               8388608.5f, 6.02214076e23f};
  for (uint32_t bits = 0x3f800001u; bits < 0x3f800001u + 64; ++bits) {
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    values.push_back(f);
  }
  Tensor t = Tensor::FromVector<float>(values);
  EXPECT_TRUE(SameBits(t, ThroughText(t)));
}

TEST(TensorToJson, Float64ValuesRoundTripBitForBit) {
  Tensor t = Tensor::FromVector<double>({1.0 / 3, 0.1, -1e-300, 4.9e-324,
                                         std::numeric_limits<double>::max(), 9007199254740993.0,
                                         -9007199254740992.0});
  EXPECT_TRUE(SameBits(t, ThroughText(t)));
}

TEST(TensorToJson, IntegersAndBoolsRoundTripExactly) {
  Tensor i64 = Tensor::FromVector<int64_t>(
      {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), 0});
  EXPECT_TRUE(SameBits(i64, ThroughText(i64)));
  Tensor i32 = Tensor::FromVector<int32_t>(
      {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()});
  EXPECT_TRUE(SameBits(i32, ThroughText(i32)));
  Tensor b = Tensor::FromVector<bool>({true, false, true}, Shape{3, 1});
  EXPECT_EQ(TensorToJson(b)["data"].dump(), "[true,false,true]");
  EXPECT_TRUE(SameBits(b, ThroughText(b)));
}

TEST(TensorToJson, ScalarsAndEmptyTensorsRoundTrip) {
  Tensor scalar = Tensor::Scalar<int32_t>(2);
  EXPECT_EQ(TensorToJson(scalar).dump(), R"({"data":[2],"dtype":"int32","shape":[]})");
  EXPECT_TRUE(SameBits(scalar, ThroughText(scalar)));
  Tensor empty(DType::kFloat32, Shape{2, 0});
  EXPECT_TRUE(SameBits(empty, ThroughText(empty)));
}

TEST(TensorFromJson, ReadsNumbersAsTheDtypeSays) {
  auto t = TensorFromJson(json::parse(R"({"dtype": "float64", "shape": [3], "data": [1, 2.5, -3]})"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(TensorsEqual(*t, Tensor::FromVector<double>({1, 2.5, -3})));
  auto i = TensorFromJson(json::parse(R"({"dtype": "int64", "shape": [1], "data": [4.0]})"));
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_EQ(i->data<int64_t>()[0], 4);
}

// Success when `text` is refused with InvalidArgument saying `part`; otherwise what
// happened instead.
::testing::AssertionResult TensorRejectedSaying(const std::string& text, const std::string& part) {
  auto t = TensorFromJson(json::parse(text));
  if (t.ok()) return ::testing::AssertionFailure() << text << " was accepted";
  if (t.status().code() != Code::kInvalidArgument) {
    return ::testing::AssertionFailure() << text << ": not InvalidArgument: " << t.status();
  }
  if (t.status().message().find(part) == std::string::npos) {
    return ::testing::AssertionFailure() << text << ": missing '" << part << "': " << t.status();
  }
  return ::testing::AssertionSuccess();
}

TEST(TensorFromJson, NamesWhatIsWrong) {
  EXPECT_TRUE(TensorRejectedSaying(R"({"dtype": "float32", "shape": [2, 3], "data": [1, 2]})",
                                   "\"data\" has 2 values but shape [2,3] needs 6"));
  EXPECT_TRUE(
      TensorRejectedSaying(R"({"dtype": "complex64", "shape": [], "data": [1]})", "complex64"));
  EXPECT_TRUE(TensorRejectedSaying(R"({"shape": [], "data": [1]})", "missing \"dtype\""));
  EXPECT_TRUE(TensorRejectedSaying(R"({"dtype": "int32", "data": [1]})", "missing \"shape\""));
  EXPECT_TRUE(TensorRejectedSaying(R"({"dtype": "int32", "shape": []})", "missing \"data\""));
  EXPECT_TRUE(TensorRejectedSaying(R"({"dtype": "int32", "shape": [], "data": [1], "dims": []})",
                                   "unknown key \"dims\""));
  EXPECT_TRUE(TensorRejectedSaying(R"({"dtype": "int32", "shape": [-1], "data": [1]})",
                                   "shape dimension 0 is -1"));
  std::string deep_shape = "1";
  for (int i = 1; i < 100000; ++i) deep_shape += ",1";
  EXPECT_TRUE(TensorRejectedSaying(
      R"({"dtype": "int32", "shape": [)" + deep_shape + R"(], "data": [1]})",
      "a shape of rank 100000 has more dimensions than a tensor may have (at most 254)"));
  EXPECT_TRUE(TensorRejectedSaying(R"({"dtype": "int32", "shape": [], "data": 1})",
                                   "\"data\" must be a flat list"));
  EXPECT_TRUE(TensorRejectedSaying(R"({"dtype": "int32", "shape": [2], "data": [1, 2.5]})",
                                   "data[1]: non-integer 2.5 cannot be int32"));
  EXPECT_TRUE(TensorRejectedSaying(R"({"dtype": "int32", "shape": [1], "data": [2147483648]})",
                                   "data[0]: 2147483648 is out of range for int32"));
  EXPECT_TRUE(
      TensorRejectedSaying(R"({"dtype": "int64", "shape": [1], "data": [9223372036854775808]})",
                           "out of range for int64"));
  EXPECT_TRUE(TensorRejectedSaying(R"({"dtype": "float32", "shape": [1], "data": [1e300]})",
                                   "out of range for float32"));
  EXPECT_TRUE(TensorRejectedSaying(R"({"dtype": "bool", "shape": [1], "data": [1]})",
                                   "data[0]: expected true or false"));
  EXPECT_TRUE(
      TensorRejectedSaying(R"({"dtype": "float32", "shape": [1], "data": [true]})", "got true"));
  EXPECT_TRUE(TensorRejectedSaying(R"({"dtype": "float32", "shape": [1], "data": ["NaN"]})",
                                   "got \"NaN\""));
  EXPECT_TRUE(
      TensorRejectedSaying(R"({"dtype": "float32", "shape": [4294967296, 4294967296], "data": []})",
                           "more elements than an int64 can count"));
  EXPECT_TRUE(TensorRejectedSaying(R"([1, 2])", "expected an object"));
}

// Feeds ---------------------------------------------------------------------------

StatusOr<Tensor> Feed(const std::string& text, DType dtype, const Shape& allowed) {
  return TensorFromJsonValue(json::parse(text), dtype, allowed, "placeholder 'x'");
}

// Success when feeding `text` fails with InvalidArgument naming the placeholder and
// saying `part`; otherwise what happened instead.
::testing::AssertionResult FeedRejectedSaying(const std::string& text, DType dtype,
                                              const Shape& allowed, const std::string& part) {
  auto t = Feed(text, dtype, allowed);
  if (t.ok()) return ::testing::AssertionFailure() << text << " was accepted";
  const Status& status = t.status();
  if (status.code() != Code::kInvalidArgument) {
    return ::testing::AssertionFailure() << text << ": not InvalidArgument: " << status;
  }
  if (status.message().rfind("placeholder 'x'", 0) != 0) {
    return ::testing::AssertionFailure()
           << text << ": does not start with the placeholder: " << status;
  }
  if (status.message().find(part) == std::string::npos) {
    return ::testing::AssertionFailure() << text << ": missing '" << part << "': " << status;
  }
  return ::testing::AssertionSuccess();
}

TEST(TensorFromJsonValue, IntegerFeedsAFloat32ScalarAsFloat) {
  auto t = Feed("3", DType::kFloat32, Shape{});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(TensorsEqual(*t, Tensor::Scalar<float>(3.0f)));
}

TEST(TensorFromJsonValue, ListFillsAnUnknownDimension) {
  auto t = Feed("[1, 3]", DType::kFloat32, Shape{-1});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(TensorsEqual(*t, Tensor::FromVector<float>({1, 3})));
}

TEST(TensorFromJsonValue, NestedListsGiveTheShapeRowMajor) {
  auto t = Feed("[[1, 2], [3, 4], [5, 6]]", DType::kInt32, Shape{-1, 2});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(TensorsEqual(*t, Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, Shape{3, 2})));
}

TEST(TensorFromJsonValue, UnknownRankAdmitsAnyShape) {
  const Shape any = Shape::UnknownRank();
  auto scalar = Feed("7", DType::kInt64, any);
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_EQ(scalar->shape(), Shape{});
  auto deep = Feed("[[[1.5], [2]]]", DType::kFloat64, any);
  ASSERT_TRUE(deep.ok()) << deep.status();
  EXPECT_TRUE(TensorsEqual(*deep, Tensor::FromVector<double>({1.5, 2}, Shape{1, 2, 1})));
  auto empty = Feed("[]", DType::kFloat32, any);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), Shape{0});
}

TEST(TensorFromJsonValue, BoolsFeedBoolAndSpecialStringsFeedFloats) {
  auto b = Feed("[true, false]", DType::kBool, Shape{2});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(TensorsEqual(*b, Tensor::FromVector<bool>({true, false})));
  auto f = Feed(R"(["nan", "-inf"])", DType::kFloat32, Shape{2});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(std::isnan(f->data<float>()[0]));
  EXPECT_EQ(f->data<float>()[1], -std::numeric_limits<float>::infinity());
}

TEST(TensorFromJsonValue, NonIntegerIntoIntFailsNamingThePlaceholder) {
  EXPECT_TRUE(FeedRejectedSaying("2.5", DType::kInt32, Shape{}, "non-integer 2.5 cannot be int32"));
  EXPECT_TRUE(
      FeedRejectedSaying("[1, 2.5]", DType::kInt64, Shape{-1}, "element [1]: non-integer 2.5"));
}

TEST(TensorFromJsonValue, RaggedListFails) {
  EXPECT_TRUE(FeedRejectedSaying("[[1], [2, 3]]", DType::kFloat32, Shape::UnknownRank(),
                                 "ragged nested list: element [1] has 2 entries"));
  EXPECT_TRUE(FeedRejectedSaying("[[1], 2]", DType::kFloat32, Shape::UnknownRank(),
                                 "element [1] is not a list"));
  EXPECT_TRUE(FeedRejectedSaying("[1, [2]]", DType::kFloat32, Shape::UnknownRank(),
                                 "element [1] is a list where a scalar was expected"));
}

TEST(TensorFromJsonValue, ShapeTheDeclaredShapeDoesNotAdmitFails) {
  EXPECT_TRUE(FeedRejectedSaying("[1, 2, 3]", DType::kFloat32, Shape{2},
                                 "a value of shape [3] does not fit shape [2]"));
  EXPECT_TRUE(FeedRejectedSaying("[[1, 2]]", DType::kFloat32, Shape{-1},
                                 "a value of shape [1,2] does not fit shape [?]"));
  EXPECT_TRUE(FeedRejectedSaying("1", DType::kFloat32, Shape{1}, "does not fit"));
}

TEST(TensorFromJsonValue, BoolNumberMismatchFails) {
  EXPECT_TRUE(
      FeedRejectedSaying("[1, 0]", DType::kBool, Shape{2}, "element [0]: expected true or false"));
  EXPECT_TRUE(FeedRejectedSaying("true", DType::kFloat32, Shape{}, "got true"));
}

TEST(TensorFromJsonValue, IntegersOutOfRangeFail) {
  EXPECT_TRUE(FeedRejectedSaying("3000000000", DType::kInt32, Shape{}, "out of range for int32"));
  EXPECT_TRUE(
      FeedRejectedSaying("[-2147483649]", DType::kInt32, Shape{1}, "out of range for int32"));
  auto big = Feed("3000000000", DType::kInt64, Shape{});
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(big->data<int64_t>()[0], 3000000000);
}

TEST(TensorFromJsonValue, OtherValuesFail) {
  EXPECT_TRUE(FeedRejectedSaying(R"("abc")", DType::kFloat32, Shape{}, "got \"abc\""));
  EXPECT_TRUE(FeedRejectedSaying("null", DType::kInt32, Shape{}, "got null"));
  EXPECT_TRUE(FeedRejectedSaying(R"([{"a": 1}])", DType::kInt32, Shape{1}, "got an object"));
}

TEST(TensorFromJsonValue, RejectsAbsurdNestingWithoutRecursingIntoIt) {
  std::string text = std::string(10000, '[') + "1" + std::string(10000, ']');
  EXPECT_TRUE(
      FeedRejectedSaying(text, DType::kFloat32, Shape::UnknownRank(), "nested lists deeper than"));
}

// ParseJsonText -------------------------------------------------------------------

TEST(ParseJsonText, ReturnsTheValue) {
  auto j = ParseJsonText(R"({"a": [1, 2]})", "feeds");
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ((*j)["a"][1], 2);
}

TEST(ParseJsonText, MalformedTextNamesLineAndColumn) {
  auto j = ParseJsonText("{\n  \"a\": 1,\n  \"b\" 2\n}", "feeds.json");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(j.status().message().rfind("feeds.json: malformed JSON at line 3, column 7: ", 0), 0u)
      << j.status();
  EXPECT_THAT(j.status().message(), HasSubstr("expected ':'")) << j.status();
}

// Found by fuzzing with deep inputs (tools/fuzz/): 200000 nested lists parsed, and
// the error message that quoted the value (nlohmann's dump, which recurses once per
// level) overflowed the stack. Nesting is now refused at kMaxJsonDepth.
TEST(ParseJsonText, RefusesNestingDeeperThanTheLimit) {
  auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_TRUE(ParseJsonText(nested(kMaxJsonDepth), "x").ok());
  EXPECT_TRUE(ParseJsonText("{\"a\": " + nested(kMaxJsonDepth - 1) + "}", "x").ok());

  auto deep = ParseJsonText(nested(kMaxJsonDepth + 1), "body");
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(deep.status().message(),
            "body: JSON nested deeper than 256 levels at line 1, column 257");

  // Brackets inside strings do not count; the position is the first bracket too deep.
  auto located = ParseJsonText("{\"s\": \"[[[{\\\"\",\n \"a\": " + nested(200000) + "}", "f.json");
  ASSERT_FALSE(located.ok());
  EXPECT_THAT(located.status().message(), HasSubstr("f.json: JSON nested deeper than 256 levels "
                                                    "at line 2, column 262"))
      << located.status().message().substr(0, 200);
}

TEST(ParseJsonText, ReportsPositionsOfEveryKindOfError) {
  auto truncated = ParseJsonText("[1,\n", "x");
  ASSERT_FALSE(truncated.ok());
  EXPECT_THAT(truncated.status().message(), HasSubstr("x: malformed JSON at line 2, column 1"))
      << truncated.status();
  auto empty = ParseJsonText("", "x");
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.status().message(), HasSubstr("line 1, column 1")) << empty.status();
  auto overflow = ParseJsonText("[1,\n 1e999]", "x");
  ASSERT_FALSE(overflow.ok());
  EXPECT_THAT(overflow.status().message(), HasSubstr("at line 2, column "))
      << overflow.status();
  EXPECT_THAT(overflow.status().message(), HasSubstr("number overflow")) << overflow.status();
  auto trailing = ParseJsonText("{} x", "x");
  ASSERT_FALSE(trailing.ok());
  EXPECT_THAT(trailing.status().message(), HasSubstr("line 1, column 4")) << trailing.status();
}

}  // namespace
}  // namespace actorflow
