#include "training/serving/serving_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "graph/status_testing.h"
#include "training/serving/request_rows.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

Json J(const char* text) { return Json::parse(text); }

TensorInfo Info(DType dtype, Shape shape, const std::string& endpoint = "node:0") {
  TensorInfo info;
  info.endpoint = endpoint;
  info.dtype = dtype;
  info.shape = std::move(shape);
  return info;
}

// half_plus_two: x float [-1] -> y float [-1].
SignatureDef HalfPlusTwo() {
  SignatureDef sig;
  sig.inputs["x"] = Info(DType::kFloat32, Shape{-1}, "x:0");
  sig.outputs["y"] = Info(DType::kFloat32, Shape{-1}, "y:0");
  return sig;
}

SignatureDef FourFeatures() {
  SignatureDef sig;
  sig.inputs["x"] = Info(DType::kFloat32, Shape{-1, 4});
  sig.outputs["y"] = Info(DType::kFloat32, Shape{-1, 3});
  return sig;
}

SignatureDef TwoInputs() {
  SignatureDef sig;
  sig.inputs["a"] = Info(DType::kFloat32, Shape{-1, 2});
  sig.inputs["b"] = Info(DType::kInt64, Shape{-1});
  sig.outputs["y"] = Info(DType::kFloat32, Shape{-1});
  return sig;
}

Status ParseError(const char* body, const SignatureDef& sig) {
  return ParsePredictBody(J(body), sig).status();
}

// ---- :predict requests ----

TEST(CountRequestRowsTest, CountsInstancesExamplesAndInputsWithoutParsingTheValues) {
  EXPECT_EQ(CountRequestRows(R"({"instances": [1.0, 2.0, 5.0]})"), 3);
  EXPECT_EQ(CountRequestRows(R"({"signature_name": "s", "instances": [[1, 2], [3, 4]]})"), 2);
  EXPECT_EQ(CountRequestRows(R"({"instances": [{"x": [1, 2, 3]}, {"x": [4, 5, 6]}]})"), 2);
  EXPECT_EQ(CountRequestRows(R"({"inputs": [[1, 2], [3, 4], [5, 6]]})"), 3);
  EXPECT_EQ(CountRequestRows(R"({"inputs": {"x": [[1], [2]], "y": [1, 2, 3, 4]}})"), 4);
  EXPECT_EQ(CountRequestRows(R"({"inputs": {"x": 7}})"), 0);
  EXPECT_EQ(CountRequestRows(R"({"examples": [{"a": 1}, {"a": 2}], "context": {"b": [1, 2, 3]}})"), 2);
  EXPECT_EQ(CountRequestRows(R"({"instances": [1.0, 2.0)"), -1);
  EXPECT_EQ(CountRequestRows("not json"), -1);
  // A nested list inside an instance is one row, however long.
  std::string deep = R"({"instances": [[)";
  for (int i = 0; i < 10000; ++i) deep += (i ? ",1" : "1");
  EXPECT_EQ(CountRequestRows(deep + "]]}"), 1);
}

TEST(ParsePredictBodyTest, HalfPlusTwoInstancesStackIntoOneVector) {
  ASSERT_OK_AND_ASSIGN(PredictBody body,
                       ParsePredictBody(J(R"({"instances": [1.0, 2.0, 5.0]})"), HalfPlusTwo()));
  EXPECT_TRUE(body.row_format);
  EXPECT_EQ(body.signature_name, "");
  ASSERT_EQ(body.inputs.count("x"), 1u);
  EXPECT_TRUE(TensorsEqual(body.inputs.at("x"), Tensor::FromVector<float>({1, 2, 5})));
}

TEST(ParsePredictBodyTest, RowInstancesOfFourFeatures) {
  ASSERT_OK_AND_ASSIGN(
      PredictBody body,
      ParsePredictBody(J(R"({"signature_name": "predict",
                             "instances": [[1, 2, 3, 4], [5, 6, 7, 8.5]]})"),
                       FourFeatures()));
  EXPECT_TRUE(body.row_format);
  EXPECT_EQ(body.signature_name, "predict");
  EXPECT_TRUE(TensorsEqual(body.inputs.at("x"),
                           Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8.5}, Shape{2, 4})));
}

TEST(ParsePredictBodyTest, ColumnarInputsAreTheWholeTensor) {
  ASSERT_OK_AND_ASSIGN(
      PredictBody body,
      ParsePredictBody(J(R"({"inputs": [[1, 2, 3, 4], [5, 6, 7, 8]]})"), FourFeatures()));
  EXPECT_FALSE(body.row_format);
  EXPECT_TRUE(TensorsEqual(body.inputs.at("x"),
                           Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8}, Shape{2, 4})));

  ASSERT_OK_AND_ASSIGN(PredictBody named,
                       ParsePredictBody(J(R"({"inputs": {"x": [[1, 2, 3, 4]]}})"), FourFeatures()));
  EXPECT_TRUE(
      TensorsEqual(named.inputs.at("x"), Tensor::FromVector<float>({1, 2, 3, 4}, Shape{1, 4})));
}

TEST(ParsePredictBodyTest, ObjectInstancesNameTheSingleInput) {
  ASSERT_OK_AND_ASSIGN(
      PredictBody body,
      ParsePredictBody(J(R"({"instances": [{"x": [1, 2, 3, 4]}, {"x": [0, 0, 0, 1]}]})"),
                       FourFeatures()));
  EXPECT_TRUE(TensorsEqual(body.inputs.at("x"),
                           Tensor::FromVector<float>({1, 2, 3, 4, 0, 0, 0, 1}, Shape{2, 4})));
}

TEST(ParsePredictBodyTest, SeveralInputsInBothFormats) {
  ASSERT_OK_AND_ASSIGN(
      PredictBody rows,
      ParsePredictBody(J(R"({"instances": [{"a": [1, 2], "b": 3}, {"b": 4, "a": [5, 6]}]})"),
                       TwoInputs()));
  EXPECT_TRUE(TensorsEqual(rows.inputs.at("a"),
                           Tensor::FromVector<float>({1, 2, 5, 6}, Shape{2, 2})));
  EXPECT_TRUE(TensorsEqual(rows.inputs.at("b"), Tensor::FromVector<int64_t>({3, 4})));

  ASSERT_OK_AND_ASSIGN(
      PredictBody columns,
      ParsePredictBody(J(R"({"inputs": {"a": [[1, 2], [5, 6]], "b": [3, 4]}})"), TwoInputs()));
  EXPECT_FALSE(columns.row_format);
  EXPECT_TRUE(TensorsEqual(columns.inputs.at("a"),
                           Tensor::FromVector<float>({1, 2, 5, 6}, Shape{2, 2})));
  EXPECT_TRUE(TensorsEqual(columns.inputs.at("b"), Tensor::FromVector<int64_t>({3, 4})));
}

TEST(ParsePredictBodyTest, BoolAndIntegerInputsKeepTheirDtypes) {
  SignatureDef sig;
  sig.inputs["flag"] = Info(DType::kBool, Shape{-1});
  sig.inputs["count"] = Info(DType::kInt32, Shape{-1, 2});
  ASSERT_OK_AND_ASSIGN(
      PredictBody body,
      ParsePredictBody(J(R"({"instances": [{"flag": true, "count": [1, 2]},
                                           {"flag": false, "count": [3, 4]}]})"),
                       sig));
  EXPECT_TRUE(TensorsEqual(body.inputs.at("flag"), Tensor::FromVector<bool>({true, false})));
  EXPECT_TRUE(TensorsEqual(body.inputs.at("count"),
                           Tensor::FromVector<int32_t>({1, 2, 3, 4}, Shape{2, 2})));
}

TEST(ParsePredictBodyTest, BothOrNeitherFormatIsRefused) {
  Status both = ParseError(R"({"instances": [1], "inputs": [1]})", HalfPlusTwo());
  EXPECT_EQ(both.code(), Code::kInvalidArgument);
  EXPECT_THAT(both.message(), HasSubstr("both \"instances\" and \"inputs\""));

  Status neither = ParseError(R"({"signature_name": "serving_default"})", HalfPlusTwo());
  EXPECT_EQ(neither.code(), Code::kInvalidArgument);
  EXPECT_THAT(neither.message(), HasSubstr("neither \"instances\""));
}

TEST(ParsePredictBodyTest, UnknownTopLevelKeyIsNamed) {
  Status s = ParseError(R"({"instance": [1]})", HalfPlusTwo());
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("unknown key 'instance'"));
}

TEST(ParsePredictBodyTest, BodyMustBeAnObjectWithAStringSignatureName) {
  EXPECT_THAT(ParseError("[1, 2]", HalfPlusTwo()).message(), HasSubstr("must be a JSON object"));
  EXPECT_THAT(PeekSignatureName(J("3")).status().message(), HasSubstr("must be a JSON object"));
  Status s = PeekSignatureName(J(R"({"signature_name": 7, "instances": [1]})")).status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("\"signature_name\" must be a string"));
  EXPECT_THAT(ParseError(R"({"signature_name": null, "instances": [1]})", HalfPlusTwo()).message(),
              HasSubstr("signature_name"));

  ASSERT_OK_AND_ASSIGN(std::string none, PeekSignatureName(J(R"({"instances": [1]})")));
  EXPECT_EQ(none, "");
  ASSERT_OK_AND_ASSIGN(std::string given,
                       PeekSignatureName(J(R"({"signature_name": "predict"})")));
  EXPECT_EQ(given, "predict");
}

TEST(ParsePredictBodyTest, InstancesMustBeANonEmptyList) {
  EXPECT_THAT(ParseError(R"({"instances": []})", HalfPlusTwo()).message(),
              HasSubstr("\"instances\" must be a non-empty list"));
  EXPECT_THAT(ParseError(R"({"instances": 3})", HalfPlusTwo()).message(),
              HasSubstr("\"instances\" must be a non-empty list"));
}

TEST(ParsePredictBodyTest, MissingInputKeyIsNamedWithTheExpectedKeys) {
  Status row = ParseError(R"({"instances": [{"a": [1, 2], "b": 1}, {"a": [1, 2]}]})", TwoInputs());
  EXPECT_EQ(row.code(), Code::kInvalidArgument);
  EXPECT_THAT(row.message(), HasSubstr("instance 1"));
  EXPECT_THAT(row.message(), HasSubstr("missing input 'b'"));
  EXPECT_THAT(row.message(), HasSubstr("'a', 'b'"));

  Status columnar = ParseError(R"({"inputs": {"b": [1]}})", TwoInputs());
  EXPECT_THAT(columnar.message(), HasSubstr("missing input 'a'"));
  EXPECT_THAT(columnar.message(), HasSubstr("'a', 'b'"));
}

TEST(ParsePredictBodyTest, UnknownInputKeyIsNamed) {
  Status row = ParseError(R"({"instances": [{"a": [1, 2], "b": 1, "c": 2}]})", TwoInputs());
  EXPECT_EQ(row.code(), Code::kInvalidArgument);
  EXPECT_THAT(row.message(), HasSubstr("unknown input key 'c'"));

  Status single = ParseError(R"({"instances": [{"z": 1}]})", HalfPlusTwo());
  EXPECT_THAT(single.message(), HasSubstr("unknown input key 'z'"));

  Status columnar = ParseError(R"({"inputs": {"x": [1], "w": [2]}})", HalfPlusTwo());
  EXPECT_THAT(columnar.message(), HasSubstr("unknown input key 'w'"));
}

TEST(ParsePredictBodyTest, SeveralInputsNeedObjects) {
  Status row = ParseError(R"({"instances": [[1, 2]]})", TwoInputs());
  EXPECT_EQ(row.code(), Code::kInvalidArgument);
  EXPECT_THAT(row.message(), HasSubstr("instance 0"));
  EXPECT_THAT(row.message(), HasSubstr("'a', 'b'"));

  Status columnar = ParseError(R"({"inputs": [[1, 2]]})", TwoInputs());
  EXPECT_THAT(columnar.message(), HasSubstr("\"inputs\" must be an object"));
}

TEST(ParsePredictBodyTest, RaggedInstancesNameTheInstanceAndInput) {
  Status s = ParseError(R"({"instances": [[1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3]]})",
                        FourFeatures());
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("input 'x'"));
  EXPECT_THAT(s.message(), HasSubstr("instance 2 has shape [3]"));

  // Ragged inside one instance: TensorFromJsonValue's message, prefixed by the culprit.
  Status inner = ParseError(R"({"instances": [[[1, 2], [3]]]})", HalfPlusTwo());
  EXPECT_THAT(inner.message(), HasSubstr("input 'x', instance 0"));
}

TEST(ParsePredictBodyTest, ShapeMismatchNamesTheInputAndExpectedShape) {
  Status row = ParseError(R"({"instances": [[1, 2, 3], [4, 5, 6]]})", FourFeatures());
  EXPECT_EQ(row.code(), Code::kInvalidArgument);
  EXPECT_EQ(row.message(), "input 'x': expected shape [-1, 4] (float32), got [2, 3]");

  Status columnar = ParseError(R"({"inputs": [1, 2, 3]})", FourFeatures());
  EXPECT_EQ(columnar.message(), "input 'x': expected shape [-1, 4] (float32), got [3]");

  Status rank = ParseError(R"({"instances": [[1], [2]]})", HalfPlusTwo());
  EXPECT_EQ(rank.message(), "input 'x': expected shape [-1] (float32), got [2, 1]");

  SignatureDef fixed;
  fixed.inputs["img"] = Info(DType::kInt64, Shape{2, 2});
  Status batch = ParseError(R"({"inputs": [[1, 2]]})", fixed);
  EXPECT_EQ(batch.message(), "input 'img': expected shape [2, 2] (int64), got [1, 2]");
}

TEST(ParsePredictBodyTest, WrongTypesNameTheInputAndInstance) {
  Status text = ParseError(R"({"instances": [1.0, "abc"]})", HalfPlusTwo());
  EXPECT_EQ(text.code(), Code::kInvalidArgument);
  EXPECT_THAT(text.message(), HasSubstr("input 'x', instance 1"));

  Status inner = ParseError(R"({"instances": [[1, 2, 3, 4], [1, 2, null, 4]]})", FourFeatures());
  EXPECT_THAT(inner.message(), HasSubstr("input 'x', instance 1"));

  Status fraction = ParseError(R"({"instances": [{"a": [1, 2], "b": 2.5}]})", TwoInputs());
  EXPECT_THAT(fraction.message(), HasSubstr("input 'b', instance 0"));

  Status columnar = ParseError(R"({"inputs": {"a": [[1, "x"]], "b": [1]}})", TwoInputs());
  EXPECT_THAT(columnar.message(), HasSubstr("input 'a'"));
}

TEST(ParsePredictBodyTest, NonFiniteFloatsAreRefused) {
  Status nan = ParseError(R"({"instances": [1.0, "nan", 3.0]})", HalfPlusTwo());
  EXPECT_EQ(nan.code(), Code::kInvalidArgument);
  EXPECT_THAT(nan.message(), HasSubstr("input 'x', instance 1"));
  EXPECT_THAT(nan.message(), HasSubstr("is not a finite number"));

  Status inf = ParseError(R"({"instances": [[1, 2, 3, 4], [1, 2, 3, "-inf"]]})", FourFeatures());
  EXPECT_THAT(inf.message(), HasSubstr("input 'x', instance 1"));
  EXPECT_THAT(inf.message(), HasSubstr("-inf is not a finite number"));

  Status columnar = ParseError(R"({"inputs": [[1, 2, 3, 4], [1, "inf", 3, 4]]})", FourFeatures());
  EXPECT_THAT(columnar.message(), HasSubstr("input 'x', instance 1"));
  EXPECT_THAT(columnar.message(), HasSubstr("is not a finite number"));

  SignatureDef doubles;
  doubles.inputs["d"] = Info(DType::kFloat64, Shape{-1});
  EXPECT_THAT(ParseError(R"({"instances": ["nan"]})", doubles).message(),
              HasSubstr("input 'd', instance 0"));
}

TEST(ParsePredictBodyTest, NeverThrowsOnOddJson) {
  const char* bodies[] = {
      "null", "true", "1", "\"s\"", "[]", "{}", R"({"instances": null})",
      R"({"instances": [null]})", R"({"instances": [{}]})", R"({"instances": [[]]})",
      R"({"instances": [{"x": {"y": 1}}]})", R"({"instances": [[[[[[1]]]]]]})",
      R"({"inputs": null})", R"({"inputs": {}})", R"({"inputs": {"x": {}}})",
      R"({"inputs": "nan"})", R"({"inputs": [[], []]})", R"({"instances": [1e400]})",
      R"({"instances": [-1e39]})", R"({"examples": [1]})", R"({"examples": {}})",
      R"({"examples": [{"a": null}], "context": []})", R"({"examples": [{}], "context": {"a": {}}})",
  };
  ClassifierInfo classifier;
  classifier.feature_names = {"a", "b"};
  SignatureDef classify;
  classify.inputs["inputs"] = Info(DType::kFloat32, Shape{-1, 2});
  for (const char* text : bodies) {
    Json body = Json::parse(text, nullptr, false);
    for (const SignatureDef& sig : {HalfPlusTwo(), FourFeatures(), TwoInputs(), SignatureDef()}) {
      EXPECT_NO_THROW((void)ParsePredictBody(body, sig)) << text;
      EXPECT_NO_THROW((void)ParseExamplesBody(body, sig, nullptr)) << text;
    }
    EXPECT_NO_THROW((void)ParseExamplesBody(body, classify, &classifier)) << text;
    EXPECT_NO_THROW((void)PeekSignatureName(body)) << text;
  }
  // An instance of float32 [-1] that overflows a float is refused, not wrapped.
  EXPECT_FALSE(ParsePredictBody(J(R"({"instances": [-1e39]})"), HalfPlusTwo()).ok());
}

// ---- :predict responses ----

TEST(PredictResponseJsonTest, OneOutputRowFormatIsAListOfValues) {
  std::map<std::string, Tensor> outputs;
  outputs["y"] = Tensor::FromVector<float>({2.5f, 3.0f, 4.5f});
  EXPECT_EQ(PredictResponseJson(outputs, true).dump(), R"({"predictions":[2.5,3.0,4.5]})");

  outputs["y"] = Tensor::FromVector<float>({0.01f, 0.99f, 0.1f, 0.9f}, Shape{2, 2});
  EXPECT_EQ(PredictResponseJson(outputs, true).dump(),
            R"({"predictions":[[0.01,0.99],[0.1,0.9]]})");
}

TEST(PredictResponseJsonTest, FloatsPrintShortAndReadBackExactly) {
  const std::vector<float> values = {0.01f, 1.0f / 3.0f, 1e-8f, 3.4e38f, -0.0f};
  std::map<std::string, Tensor> outputs;
  outputs["y"] = Tensor::FromVector<float>(values);
  const std::string text = PredictResponseJson(outputs, true).dump();
  EXPECT_THAT(text, HasSubstr("[0.01,0.33333334,1e-08,3.4e+38,-0.0]"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("0.0099999")));
  const Json back = Json::parse(text);
  ASSERT_EQ(back["predictions"].size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(static_cast<float>(back["predictions"][i].get<double>()), values[i])
        << "not exact at " << i << " in " << text;
  }
}

TEST(PredictResponseJsonTest, SeveralOutputsRowFormatIsAnObjectPerExample) {
  std::map<std::string, Tensor> outputs;
  outputs["class_ids"] = Tensor::FromVector<int64_t>({1, 0});
  outputs["probabilities"] = Tensor::FromVector<float>({0.01f, 0.99f, 0.75f, 0.25f}, Shape{2, 2});
  EXPECT_EQ(PredictResponseJson(outputs, true).dump(),
            R"({"predictions":[{"class_ids":1,"probabilities":[0.01,0.99]},)"
            R"({"class_ids":0,"probabilities":[0.75,0.25]}]})");
}

TEST(CheckFiniteOutputsTest, NamesTheOutputAndTheInstanceOfTheFirstNonFiniteValue) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::map<std::string, Tensor> outputs;
  outputs["class_ids"] = Tensor::FromVector<int64_t>({1, 0});
  outputs["probabilities"] = Tensor::FromVector<float>({0.01f, 0.99f, 0.75f, 0.25f}, Shape{2, 2});
  EXPECT_OK(CheckFiniteOutputs(outputs));
  outputs["probabilities"] = Tensor::FromVector<float>({0.01f, 0.99f, nan, nan}, Shape{2, 2});
  Status s = CheckFiniteOutputs(outputs);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("output 'probabilities', instance 1: nan: the model's "
                                     "arithmetic overflowed float"));
  outputs.erase("probabilities");
  outputs["total"] = Tensor::Scalar<double>(-std::numeric_limits<double>::infinity());
  EXPECT_THAT(CheckFiniteOutputs(outputs).message(), HasSubstr("output 'total': -inf: "));
}

TEST(PredictResponseJsonTest, ColumnarFormatWritesWholeTensors) {
  std::map<std::string, Tensor> outputs;
  outputs["probabilities"] = Tensor::FromVector<float>({0.01f, 0.99f, 0.75f, 0.25f}, Shape{2, 2});
  EXPECT_EQ(PredictResponseJson(outputs, false).dump(),
            R"({"outputs":[[0.01,0.99],[0.75,0.25]]})");

  outputs["class_ids"] = Tensor::FromVector<int64_t>({1, 0});
  EXPECT_EQ(PredictResponseJson(outputs, false).dump(),
            R"({"outputs":{"class_ids":[1,0],"probabilities":[[0.01,0.99],[0.75,0.25]]}})");

  std::map<std::string, Tensor> scalar;
  scalar["total"] = Tensor::Scalar<int32_t>(7);
  EXPECT_EQ(PredictResponseJson(scalar, false).dump(), R"({"outputs":7})");
}

TEST(PredictResponseJsonTest, OtherDtypesAndNonFiniteValues) {
  std::map<std::string, Tensor> outputs;
  outputs["b"] = Tensor::FromVector<bool>({true, false});
  outputs["d"] = Tensor::FromVector<double>({0.1, std::numeric_limits<double>::infinity()});
  outputs["f"] = Tensor::FromVector<float>({std::numeric_limits<float>::quiet_NaN(), -2.0f});
  outputs["i"] = Tensor::FromVector<int32_t>({-3, 2147483647});
  EXPECT_EQ(PredictResponseJson(outputs, true).dump(),
            R"({"predictions":[{"b":true,"d":0.1,"f":"nan","i":-3},)"
            R"({"b":false,"d":"inf","f":-2.0,"i":2147483647}]})");
}

TEST(PredictResponseJsonTest, RowFormatWithoutRowsIsAnError) {
  std::map<std::string, Tensor> scalar;
  scalar["total"] = Tensor::Scalar<float>(1.0f);
  Json s = PredictResponseJson(scalar, true);
  ASSERT_TRUE(s.contains("error"));
  EXPECT_THAT(s["error"].get<std::string>(), HasSubstr("output 'total' is a scalar"));

  std::map<std::string, Tensor> uneven;
  uneven["a"] = Tensor::FromVector<float>({1, 2});
  uneven["b"] = Tensor::FromVector<float>({1, 2, 3});
  Json u = PredictResponseJson(uneven, true);
  ASSERT_TRUE(u.contains("error"));
  EXPECT_THAT(u["error"].get<std::string>(), HasSubstr("different batch sizes (2 and 3)"));
}

// ---- :classify / :regress ----

ClassifierInfo Iris() {
  ClassifierInfo info;
  info.feature_names = {"sepal_length", "sepal_width", "petal_length"};
  info.labels = {"0", "1"};
  return info;
}

SignatureDef ClassifySignature() {
  SignatureDef sig;
  sig.method_name = kClassifyMethodName;
  sig.inputs["inputs"] = Info(DType::kFloat32, Shape{-1, 3});
  sig.outputs["scores"] = Info(DType::kFloat32, Shape{-1, 2});
  return sig;
}

TEST(ParseExamplesBodyTest, ClassifierFeaturesByNameWithContext) {
  const ClassifierInfo iris = Iris();
  ASSERT_OK_AND_ASSIGN(
      auto inputs,
      ParseExamplesBody(J(R"({"signature_name": "classification",
                              "context": {"petal_length": 9},
                              "examples": [{"sepal_width": 2, "sepal_length": 1},
                                           {"sepal_length": 3, "sepal_width": [4],
                                            "petal_length": 5, "unused": "x"}]})"),
                        ClassifySignature(), &iris));
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_TRUE(TensorsEqual(inputs.at("inputs"),
                           Tensor::FromVector<float>({1, 2, 9, 3, 4, 5}, Shape{2, 3})));
}

TEST(ParseExamplesBodyTest, ClassifierErrorsNameTheExampleAndFeature) {
  const ClassifierInfo iris = Iris();
  const SignatureDef sig = ClassifySignature();
  Status missing =
      ParseExamplesBody(J(R"({"examples": [{"sepal_length": 1, "sepal_width": 2,
                                            "petal_length": 3}, {"sepal_length": 1}]})"),
                        sig, &iris)
          .status();
  EXPECT_EQ(missing.code(), Code::kInvalidArgument);
  EXPECT_THAT(missing.message(), HasSubstr("example 1, feature 'sepal_width'"));

  Status text = ParseExamplesBody(J(R"({"examples": [{"sepal_length": "long", "sepal_width": 2,
                                                       "petal_length": 3}]})"),
                                  sig, &iris)
                    .status();
  EXPECT_THAT(text.message(), HasSubstr("example 0, feature 'sepal_length'"));

  Status nan = ParseExamplesBody(J(R"({"examples": [{"sepal_length": 1, "sepal_width": "nan",
                                                      "petal_length": 3}]})"),
                                 sig, &iris)
                   .status();
  EXPECT_THAT(nan.message(), HasSubstr("feature 'sepal_width'"));
  EXPECT_THAT(nan.message(), HasSubstr("is not a finite number"));

  SignatureDef narrow = sig;
  narrow.inputs["inputs"].shape = Shape{-1, 4};
  Status shape = ParseExamplesBody(J(R"({"examples": [{"sepal_length": 1, "sepal_width": 2,
                                                        "petal_length": 3}]})"),
                                   narrow, &iris)
                     .status();
  EXPECT_EQ(shape.message(), "input 'inputs': expected shape [-1, 4] (float32), got [1, 3]");
}

TEST(ParseExamplesBodyTest, MalformedBodiesAreRefused) {
  const ClassifierInfo iris = Iris();
  const SignatureDef sig = ClassifySignature();
  auto error = [&](const char* body) {
    return ParseExamplesBody(J(body), sig, &iris).status().message();
  };
  EXPECT_THAT(error(R"({})"), HasSubstr("\"examples\" must be a non-empty list"));
  EXPECT_THAT(error(R"({"examples": []})"), HasSubstr("\"examples\" must be a non-empty list"));
  EXPECT_THAT(error(R"({"examples": [1]})"), HasSubstr("example 0: expected an object"));
  EXPECT_THAT(error(R"({"examples": [{}], "context": [1]})"),
              HasSubstr("\"context\" must be an object"));
  EXPECT_THAT(error(R"({"examples": [{}], "instances": [1]})"),
              HasSubstr("unknown key 'instances'"));
  EXPECT_THAT(error(R"({"examples": [{}], "signature_name": 1})"), HasSubstr("signature_name"));
  EXPECT_THAT(error("[]"), HasSubstr("must be a JSON object"));
}

TEST(ParseExamplesBodyTest, WithoutClassifierExamplesAreInstancesByInputKey) {
  SignatureDef sig;
  sig.method_name = kRegressMethodName;
  sig.inputs["x"] = Info(DType::kFloat32, Shape{-1, 2});
  sig.inputs["y"] = Info(DType::kFloat32, Shape{-1});
  ASSERT_OK_AND_ASSIGN(auto inputs,
                       ParseExamplesBody(J(R"({"context": {"y": 3},
                                               "examples": [{"x": [1, 2]}, {"x": [3, 4], "y": 5}]})"),
                                         sig, nullptr));
  EXPECT_TRUE(TensorsEqual(inputs.at("x"), Tensor::FromVector<float>({1, 2, 3, 4}, Shape{2, 2})));
  EXPECT_TRUE(TensorsEqual(inputs.at("y"), Tensor::FromVector<float>({3, 5})));

  Status unknown =
      ParseExamplesBody(J(R"({"examples": [{"x": [1, 2], "y": 1, "z": 0}]})"), sig, nullptr)
          .status();
  EXPECT_THAT(unknown.message(), HasSubstr("example 0: unknown input key 'z'"));
  Status missing = ParseExamplesBody(J(R"({"examples": [{"x": [1, 2]}]})"), sig, nullptr).status();
  EXPECT_THAT(missing.message(), HasSubstr("missing input 'y'"));
  Status ragged = ParseExamplesBody(J(R"({"examples": [{"x": [1, 2], "y": 1},
                                                       {"x": [1], "y": 1}]})"),
                                    sig, nullptr)
                      .status();
  EXPECT_THAT(ragged.message(), HasSubstr("input 'x': example 1 has shape [1]"));
}

TEST(ClassifyResponseJsonTest, EveryLabelWithItsScorePerExample) {
  Tensor scores = Tensor::FromVector<float>({0.01f, 0.99f, 0.75f, 0.25f}, Shape{2, 2});
  EXPECT_EQ(ClassifyResponseJson(scores, {"0", "1"}).dump(),
            R"({"result":[[["0",0.01],["1",0.99]],[["0",0.75],["1",0.25]]]})");
  // A class without a label is named by its index.
  EXPECT_EQ(ClassifyResponseJson(scores, {"setosa"}).dump(),
            R"({"result":[[["setosa",0.01],["1",0.99]],[["setosa",0.75],["1",0.25]]]})");
  Json bad = ClassifyResponseJson(Tensor::FromVector<float>({1, 2}), {"0"});
  ASSERT_TRUE(bad.contains("error"));
  EXPECT_THAT(bad["error"].get<std::string>(), HasSubstr("[N, C]"));
}

TEST(RegressResponseJsonTest, OneNumberPerExample) {
  ASSERT_OK_AND_ASSIGN(Json flat, RegressResponseJson(Tensor::FromVector<float>({0.01f, 2.0f})));
  EXPECT_EQ(flat.dump(), R"({"result":[0.01,2.0]})");
  ASSERT_OK_AND_ASSIGN(Json column,
                       RegressResponseJson(Tensor::FromVector<double>({1.5, -2.25}, Shape{2, 1})));
  EXPECT_EQ(column.dump(), R"({"result":[1.5,-2.25]})");
  Status wide = RegressResponseJson(Tensor::FromVector<float>({1, 2, 3, 4}, Shape{2, 2})).status();
  EXPECT_EQ(wide.code(), Code::kInvalidArgument);
  EXPECT_THAT(wide.message(), HasSubstr("float32[2,2]"));
  EXPECT_FALSE(RegressResponseJson(Tensor::Scalar<float>(1)).ok());
}

// ---- model status and metadata ----

TEST(ModelStatusJsonTest, TfServingShape) {
  VersionState failed;
  failed.version = 2;
  failed.state = "END";
  failed.error_code = "NOT_FOUND";
  failed.error_message = "gone";
  VersionState available;
  available.version = 1;
  available.state = "AVAILABLE";
  EXPECT_EQ(ModelStatusJson({failed, available}).dump(),
            R"({"model_version_status":[)"
            R"({"state":"END","status":{"error_code":"NOT_FOUND","error_message":"gone"},"version":"2"},)"
            R"({"state":"AVAILABLE","status":{"error_code":"OK","error_message":""},"version":"1"}]})");
  EXPECT_EQ(ModelStatusJson({}).dump(), R"({"model_version_status":[]})");
}

TEST(ModelMetadataJsonTest, TfServingShape) {
  ServableManifest manifest;
  SignatureDef predict;
  predict.inputs["x"] = Info(DType::kFloat32, Shape{-1, 4}, "features");
  predict.outputs["class_ids"] = Info(DType::kInt64, Shape{-1}, "class_ids:1");
  manifest.signatures["serving_default"] = predict;
  SignatureDef any;
  any.method_name = kRegressMethodName;
  any.inputs["d"] = Info(DType::kFloat64, Shape::UnknownRank(), "d:0");
  any.outputs["b"] = Info(DType::kBool, Shape{}, "b:0");
  manifest.signatures["other"] = any;
  manifest.classifier = Iris();

  const Json expected = J(R"({
    "model_spec": {"name": "iris", "signature_name": "", "version": "3"},
    "metadata": {"signature_def": {"signature_def": {
      "serving_default": {
        "inputs": {"x": {"dtype": "DT_FLOAT", "name": "features:0",
                         "tensor_shape": {"dim": [{"size": "-1", "name": ""},
                                                  {"size": "4", "name": ""}],
                                          "unknown_rank": false}}},
        "outputs": {"class_ids": {"dtype": "DT_INT64", "name": "class_ids:1",
                                  "tensor_shape": {"dim": [{"size": "-1", "name": ""}],
                                                   "unknown_rank": false}}},
        "method_name": "tensorflow/serving/predict"},
      "other": {
        "inputs": {"d": {"dtype": "DT_DOUBLE", "name": "d:0",
                         "tensor_shape": {"dim": [], "unknown_rank": true}}},
        "outputs": {"b": {"dtype": "DT_BOOL", "name": "b:0",
                          "tensor_shape": {"dim": [], "unknown_rank": false}}},
        "method_name": "tensorflow/serving/regress"}}}}})");
  const Json actual = ModelMetadataJson("iris", 3, manifest);
  EXPECT_EQ(actual, expected) << actual.dump(2);
}

TEST(ErrorJsonTest, WrapsTheMessageAndAlwaysDumps) {
  EXPECT_EQ(ErrorJson("input 'x': bad").dump(), R"({"error":"input 'x': bad"})");
  const Json invalid_utf8 = ErrorJson(std::string("key '\xff\xfe'"));
  std::string text;
  EXPECT_NO_THROW(text = invalid_utf8.dump());
  EXPECT_THAT(text, HasSubstr("key '"));
}

}  // namespace
}  // namespace actorflow
