#include "training/serving/numeric_predict_body.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "graph/tensor_json.h"
#include "training/serving/request_rows.h"
#include "training/serving/serving_json.h"

namespace actorflow {
namespace {

SignatureDef OneInput(DType dtype, Shape shape) {
  SignatureDef sig;
  sig.inputs["x"] = TensorInfo{"x:0", dtype, std::move(shape)};
  sig.outputs["y"] = TensorInfo{"y:0", DType::kFloat32, Shape{-1}};
  return sig;
}

SignatureDef FourFloats() { return OneInput(DType::kFloat32, Shape{-1, 4}); }

// What the general path reads: ParseJsonText, then ParsePredictBody.
StatusOr<PredictBody> General(const std::string& text, const SignatureDef& sig) {
  AF_ASSIGN_OR_RETURN(nlohmann::json body, ParseJsonText(text, "request body"));
  return ParsePredictBody(body, sig);
}

std::optional<PredictBody> Fast(const std::string& text, const SignatureDef& sig) {
  std::optional<NumericPredictBody> scanned = ScanNumericPredictBody(text);
  if (!scanned) return std::nullopt;
  return NumericPredictInputs(*scanned, sig);
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

// The contract: a body the fast path takes reads as the general path reads it.
// Returns whether it was taken.
bool TakenAndSame(const std::string& text, const SignatureDef& sig) {
  std::optional<PredictBody> fast = Fast(text, sig);
  if (!fast) return false;
  StatusOr<PredictBody> general = General(text, sig);
  EXPECT_TRUE(general.ok()) << text << ": the fast path took a body the general path refuses: "
                            << general.status().ToString();
  if (!general.ok()) return true;
  EXPECT_EQ(fast->signature_name, general->signature_name) << text;
  EXPECT_EQ(fast->row_format, general->row_format) << text;
  EXPECT_EQ(fast->inputs.size(), general->inputs.size()) << text;
  for (const auto& [key, tensor] : general->inputs) {
    auto it = fast->inputs.find(key);
    EXPECT_TRUE(it != fast->inputs.end() && SameBits(it->second, tensor))
        << text << ": input '" << key << "' differs";
  }
  return true;
}

TEST(NumericPredictBodyTest, TakesListsOfNumbersAndReadsThemAsTheGeneralPathDoes) {
  const SignatureDef sig = FourFloats();
  for (const std::string text : {
           R"({"instances": [[5.1, 3.5, 1.4, 0.2]]})",
           R"({"instances":[[1,2,3,4],[0.5,-0.25,1e3,-2.5E-2]]})",
           " \n{ \"signature_name\" : \"serving_default\" ,\t\"instances\": [[0, -0, 0.0, -0.0]] }\r\n",
           R"({"inputs": [[1e-45, 3.4028234e38, -1.17549435e-38, 7.0e-46]]})",
           R"({"instances": [[9007199254740992, -9007199254740992, 16777217, 0.1]]})",
           R"({"instances": [[1.00000005960464477539, 0.3, 2.5e+1, 123456789.123]]})",
       }) {
    EXPECT_TRUE(TakenAndSame(text, sig)) << text;
  }
  // Scalars per instance for an input of rank 1, and any rank when the signature
  // leaves it open.
  EXPECT_TRUE(TakenAndSame(R"({"instances": [1.0, 2.0, 5.0]})", OneInput(DType::kFloat32, Shape{-1})));
  EXPECT_TRUE(TakenAndSame(R"({"inputs": [[[1, 2], [3, 4]], [[5, 6], [7, 8]]]})",
                           OneInput(DType::kFloat64, Shape::UnknownRank())));
}

TEST(NumericPredictBodyTest, ReadsRandomNumbersBitForBitLikeTheGeneralPath) {
  std::mt19937_64 rng(20261202);
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  // Within float's range (beyond it both paths refuse: see the next test), down to
  // its subnormals and below.
  std::uniform_int_distribution<int> exponent(-50, 37);
  std::uniform_int_distribution<int> style(0, 3);
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    const SignatureDef sig = OneInput(dtype, Shape{-1, 64});
    for (int body = 0; body < 40; ++body) {
      std::string text = R"({"instances": [)";
      for (int row = 0; row < 3; ++row) {
        text += row ? ",[" : "[";
        for (int i = 0; i < 64; ++i) {
          const double v = mantissa(rng) * std::pow(10.0, exponent(rng));
          char buf[64];
          switch (style(rng)) {
            case 0:  // %g writes an integer token up to 1e17: keep those below 2^53
              std::snprintf(buf, sizeof(buf), std::fabs(v) < 1e15 ? "%.17g" : "%.16e", v);
              break;
            case 1: std::snprintf(buf, sizeof(buf), "%.9e", v); break;
            case 2: std::snprintf(buf, sizeof(buf), "%.4f", v); break;
            default:  // an integer token, within the 2^53 the fast path reads
              std::snprintf(buf, sizeof(buf), "%lld",
                            static_cast<long long>(std::fmod(v, 9007199254740992.0)));
              break;
          }
          text += i ? "," : "";
          text += buf;
        }
        text += "]";
      }
      text += "]}";
      EXPECT_TRUE(TakenAndSame(text, sig)) << text;
    }
  }
}

TEST(NumericPredictBodyTest, LeavesEveryOtherBodyToTheGeneralPath) {
  const SignatureDef sig = FourFloats();
  for (const std::string text : {
           // Not lists of numbers, or not only.
           R"({"instances": [{"x": [1, 2, 3, 4]}]})", R"({"instances": [["1", 2, 3, 4]]})",
           R"({"instances": [["nan", 2, 3, 4]]})", R"({"instances": [[null, 2, 3, 4]]})",
           R"({"inputs": 5})", R"({"instances": []})", R"({"instances": [[]]})",
           // Ragged, or numbers at two depths.
           R"({"instances": [[1, 2, 3, 4], [1, 2, 3]]})", R"({"instances": [[1, 2, 3, 4], 5]})",
           R"({"instances": [5, [1, 2, 3, 4]]})",
           // Outside JSON's number grammar, or beyond what reads exactly.
           R"({"instances": [[01, 2, 3, 4]]})", R"({"instances": [[1., 2, 3, 4]]})",
           R"({"instances": [[.5, 2, 3, 4]]})", R"({"instances": [[+1, 2, 3, 4]]})",
           R"({"instances": [[1e, 2, 3, 4]]})", R"({"instances": [[-, 2, 3, 4]]})",
           R"({"instances": [[Infinity, 2, 3, 4]]})", R"({"instances": [[1e400, 2, 3, 4]]})",
           R"({"instances": [[1e-400, 2, 3, 4]]})", R"({"instances": [[3.5e38, 2, 3, 4]]})",
           R"({"instances": [[9007199254740993, 2, 3, 4]]})",
           R"({"instances": [[99999999999999999999, 2, 3, 4]]})",
           // Keys: unknown, twice, both formats, escaped, neither.
           R"({"instances": [[1, 2, 3, 4]], "extra": 1})",
           R"({"instances": [[1, 2, 3, 4]], "instances": [[1, 2, 3, 4]]})",
           R"({"instances": [[1, 2, 3, 4]], "inputs": [[1, 2, 3, 4]]})",
           R"({"instan\u0063es": [[1, 2, 3, 4]]})", R"({"signature_name": "s\"x", "inputs": [[1, 2, 3, 4]]})",
           R"({"signature_name": 3, "inputs": [[1, 2, 3, 4]]})", R"({"signature_name": "s"})",
           // Malformed JSON.
           R"({"instances": [[1, 2, 3, 4]],})", R"({"instances": [[1, 2, 3, 4],]})",
           R"({"instances": [[1, 2, 3, 4]]} x)", R"({"instances": [[1 2, 3, 4]]})",
           R"({"instances": [[1, 2, 3, 4]])", R"([[1, 2, 3, 4]])", "",
           // A shape the signature refuses.
           R"({"instances": [[1, 2, 3]]})", R"({"inputs": [1, 2, 3, 4]})",
       }) {
    EXPECT_FALSE(Fast(text, sig).has_value()) << text;
  }
  // Signatures it does not read: an integer input, two inputs.
  EXPECT_FALSE(Fast(R"({"instances": [[1, 2, 3, 4]]})", OneInput(DType::kInt32, Shape{-1, 4})));
  SignatureDef two = FourFloats();
  two.inputs["z"] = TensorInfo{"z:0", DType::kFloat32, Shape{-1, 4}};
  EXPECT_FALSE(Fast(R"({"instances": [[1, 2, 3, 4]]})", two));
}

TEST(NumericPredictBodyTest, StopsPastMaxRowsAndOtherwiseHasTheRowsTheCounterCounts) {
  const std::string three = R"({"instances": [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]})";
  std::optional<NumericPredictBody> scanned = ScanNumericPredictBody(three, 3);
  ASSERT_TRUE(scanned.has_value());
  EXPECT_EQ(scanned->shape, Shape({3, 4}));
  EXPECT_EQ(scanned->shape.dim(0), CountRequestRows(three));
  EXPECT_FALSE(ScanNumericPredictBody(three, 2).has_value());
  const std::string columns = R"({"inputs": [[1, 2], [3, 4]]})";
  EXPECT_EQ(ScanNumericPredictBody(columns, 2)->shape.dim(0), CountRequestRows(columns));
  EXPECT_FALSE(ScanNumericPredictBody(columns, 1).has_value());
}

TEST(NumericPredictBodyTest, RefusesListsDeeperThanEightLevels) {
  const SignatureDef sig = OneInput(DType::kFloat32, Shape::UnknownRank());
  std::string eight = std::string(8, '[') + "1" + std::string(8, ']');
  EXPECT_TRUE(TakenAndSame("{\"inputs\": " + eight + "}", sig));
  std::string nine = std::string(9, '[') + "1" + std::string(9, ']');
  EXPECT_FALSE(Fast("{\"inputs\": " + nine + "}", sig));
  EXPECT_TRUE(General("{\"inputs\": " + nine + "}", sig).ok());
}

}  // namespace
}  // namespace actorflow
