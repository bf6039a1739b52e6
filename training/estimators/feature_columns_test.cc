// Feature columns (normalization statistics, the input layer) and the model
// description that carries them (model.json).
#include "training/estimators/feature_columns.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "graph/ops.h"
#include "kernels/direct_session.h"
#include "training/estimators/model_spec.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

// float32 [3, 2]: column 0 is 1, 2, 3; column 1 is constant 5.
Tensor ThreeRows() { return Tensor::FromVector<float>({1, 5, 2, 5, 3, 5}, Shape{3, 2}); }

TEST(ComputeNormalizationTest, GivesEachColumnsMeanAndPopulationStddev) {
  auto stats = ComputeNormalization(ThreeRows());
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->size(), 2u);
  EXPECT_DOUBLE_EQ((*stats)[0].mean, 2.0);
  EXPECT_DOUBLE_EQ((*stats)[0].stddev, std::sqrt(2.0 / 3.0));  // divisor N, not N-1
  EXPECT_DOUBLE_EQ((*stats)[1].mean, 5.0);
  EXPECT_EQ((*stats)[1].stddev, 0.0);
}

TEST(ComputeNormalizationTest, RejectsBadInput) {
  EXPECT_EQ(ComputeNormalization(Tensor::FromVector<float>({1, 2})).status().code(),
            Code::kInvalidArgument);  // rank 1
  EXPECT_EQ(ComputeNormalization(Tensor(DType::kFloat32, Shape{0, 3})).status().code(),
            Code::kInvalidArgument);  // no rows
  Tensor with_nan = ThreeRows();
  with_nan.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  Status s = ComputeNormalization(with_nan).status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("row 2, column 2")) << s;
}

TEST(NormalizedNumericColumnsTest, NamesEachColumnWithItsStatistics) {
  auto columns = NormalizedNumericColumns({"a", "b"}, ThreeRows());
  ASSERT_TRUE(columns.ok()) << columns.status();
  EXPECT_EQ((*columns)[0].name, "a");
  ASSERT_TRUE((*columns)[1].normalization.has_value());
  EXPECT_DOUBLE_EQ((*columns)[1].normalization->mean, 5.0);
  EXPECT_EQ(NormalizedNumericColumns({"a"}, ThreeRows()).status().code(), Code::kInvalidArgument);
}

TEST(ValidateFeatureColumnsTest, NamesTheBadColumn) {
  EXPECT_EQ(ValidateFeatureColumns({}).code(), Code::kInvalidArgument);
  Status dup = ValidateFeatureColumns(NumericColumns({"a", "b", "a"}));
  EXPECT_EQ(dup.code(), Code::kInvalidArgument);
  EXPECT_THAT(dup.message(), HasSubstr("'a' appears twice")) << dup;
  std::vector<NumericColumn> negative = NumericColumns({"x"});
  negative[0].normalization = Normalization{0.0, -1.0};
  Status neg = ValidateFeatureColumns(negative);
  EXPECT_THAT(neg.message(), HasSubstr("'x'")) << neg;
}

// Runs InputLayer on `features` in a DirectSession.
Tensor RunInputLayer(const std::vector<NumericColumn>& columns, const Tensor& features) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{-1, 2});
  auto layer = InputLayer(root, columns, x);
  EXPECT_TRUE(layer.ok()) << layer.status();
  if (!layer.ok()) return Tensor();
  auto session = NewDirectSession(root.graph()).value();
  std::vector<Tensor> out;
  Status s = session->Run({{"x", features}}, {layer->name()}, {}, &out);
  EXPECT_TRUE(s.ok()) << s;
  return s.ok() ? out[0] : Tensor();
}

TEST(InputLayerTest, ZScoresNormalizedColumnsAndOnlyCentresAConstantOne) {
  auto columns = NormalizedNumericColumns({"a", "b"}, ThreeRows());
  ASSERT_TRUE(columns.ok()) << columns.status();
  Tensor out = RunInputLayer(*columns, ThreeRows());
  ASSERT_EQ(out.shape(), (Shape{3, 2}));
  const float sd = static_cast<float>(std::sqrt(2.0 / 3.0));
  EXPECT_FLOAT_EQ(out.data<float>()[0], -1.0f / sd);
  EXPECT_FLOAT_EQ(out.data<float>()[2], 0.0f);
  EXPECT_FLOAT_EQ(out.data<float>()[4], 1.0f / sd);
  // Column b has stddev 0: centred (5 - 5 = 0), not divided by 0.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out.data<float>()[2 * i + 1], 0.0f);
  // A value the training data never had is centred and scaled by 1.
  Tensor other = RunInputLayer(*columns, Tensor::FromVector<float>({2, 7}, Shape{1, 2}));
  EXPECT_FLOAT_EQ(other.data<float>()[1], 2.0f);
}

TEST(InputLayerTest, PassesRawColumnsThroughAndChecksTheWidth) {
  Tensor out = RunInputLayer(NumericColumns({"a", "b"}), ThreeRows());
  EXPECT_TRUE(TensorsEqual(out, ThreeRows()));
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{-1, 3});
  Status s = InputLayer(root, NumericColumns({"a", "b"}), x).status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("[?,3]")) << s;
}

DNNModelSpec IrisLikeSpec() {
  DNNModelSpec spec;
  spec.feature_columns = NumericColumns({"a", "b"});
  spec.feature_columns[0].normalization = Normalization{0.1 + 0.2, 1.0 / 3.0};
  spec.feature_columns[1].normalization = Normalization{5.0, 0.0};
  spec.hidden_units = {10, 10};
  spec.n_classes = 3;
  spec.activation = "tanh";
  spec.label_column = "species";
  return spec;
}

TEST(ModelSpecTest, RoundTripsThroughJsonBitForBit) {
  const DNNModelSpec spec = IrisLikeSpec();
  auto parsed = ParseModelSpec(ModelSpecToJson(spec), "model.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, spec);
}

TEST(ModelSpecTest, RejectsInvalidModelsNamingTheCulprit) {
  DNNModelSpec spec = IrisLikeSpec();
  spec.hidden_units = {};
  EXPECT_THAT(ValidateModelSpec(spec).message(), HasSubstr("at least one hidden layer"));
  spec.hidden_units = {10, 0};
  EXPECT_THAT(ValidateModelSpec(spec).message(), HasSubstr("layer 2 has 0 units"));
  spec = IrisLikeSpec();
  spec.n_classes = 1;
  EXPECT_EQ(ValidateModelSpec(spec).code(), Code::kInvalidArgument);
  spec = IrisLikeSpec();
  spec.activation = "softsign";
  EXPECT_THAT(ValidateModelSpec(spec).message(), HasSubstr("softsign"));
  Status bad =
      ParseModelSpec("{\"format\": \"actorflow.dnn_classifier/1\"}", "d/model.json").status();
  EXPECT_EQ(bad.code(), Code::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("d/model.json")) << bad;
  EXPECT_THAT(bad.message(), HasSubstr("feature_columns")) << bad;
  EXPECT_EQ(ParseModelSpec("{", "m.json").status().code(), Code::kInvalidArgument);
}

// Found by fuzzing with deep inputs (tools/fuzz/): feature columns nested 200000
// lists deep overflowed the stack while the error message quoted them.
TEST(ModelSpecTest, DeeplyNestedValuesAreRefusedNotQuoted) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  Status s = ParseModelSpec(
                 "{\"format\": \"actorflow.dnn_classifier/1\", \"feature_columns\": " + deep + "}",
                 "d/model.json")
                 .status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("d/model.json: JSON nested deeper than 256 levels"));
  Status malformed = ParseModelSpec("{\n\"format\": }", "d/model.json").status();
  EXPECT_THAT(malformed.message(), HasSubstr("d/model.json: malformed JSON at line 2, column"));
}

TEST(ModelSpecTest, ReadingADirectoryWithoutOneIsNotFound) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  Status s = ReadModelSpec(std::string(tmp ? tmp : "/tmp") + "/no_such_model_dir").status();
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("model.json")) << s;
}

}  // namespace
}  // namespace actorflow
