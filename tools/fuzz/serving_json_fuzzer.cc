// Fuzz target: TensorFlow Serving request bodies (training/serving/serving_json.h), what
// `actorflow serve` reads from any HTTP client: :predict (ParsePredictBody, both
// formats) and :classify/:regress (ParseExamplesBody), against a few signatures.
//
// Input layout: byte 0 picks the signature and the call (see kSignatures), the rest
// is the body's text, read with ParseJsonText as the server reads it.
//
// Never crashes. Invariants: a body the numeric reader takes
// (training/serving/numeric_predict_body.h) is one the general path reads to the same
// inputs, bit for bit; an error message goes into ErrorJson(...).dump()
// without throwing (the server answers with it); parsed inputs are exactly the
// signature's keys, with its dtypes, shapes it admits, and finite floats; the
// columnar response written from them (PredictResponseJson) parses back as a
// columnar request to equal tensors, and, for the row format, the row response
// parses back as instances to equal tensors.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/tensor_json.h"
#include "training/serving/numeric_predict_body.h"
#include "training/serving/serving_json.h"
#include "tools/fuzz/fuzz_check.h"

namespace {

using actorflow::DType;
using actorflow::Shape;
using actorflow::SignatureDef;
using actorflow::Tensor;
using actorflow::TensorInfo;
using nlohmann::json;

TensorInfo Info(DType dtype, Shape shape) {
  TensorInfo info;
  info.endpoint = "node:0";
  info.dtype = dtype;
  info.shape = std::move(shape);
  return info;
}

SignatureDef Sig(std::vector<std::pair<std::string, TensorInfo>> inputs) {
  SignatureDef sig;
  for (auto& [key, info] : inputs) sig.inputs[key] = info;
  sig.outputs["y"] = Info(DType::kFloat32, Shape{-1});
  return sig;
}

struct Case {
  SignatureDef signature;
  const actorflow::ClassifierInfo* classifier;
};

const std::vector<Case>& Cases() {
  static const actorflow::ClassifierInfo* iris = new actorflow::ClassifierInfo{
      {"sepal_length", "sepal_width", "petal_length", "petal_width"}, {"0", "1", "2"}};
  static const std::vector<Case>* cases = new std::vector<Case>{
      {Sig({{"x", Info(DType::kFloat32, Shape{-1})}}), nullptr},
      {Sig({{"x", Info(DType::kFloat32, Shape{-1, 4})}}), nullptr},
      {Sig({{"a", Info(DType::kFloat32, Shape{-1, 2})}, {"b", Info(DType::kInt64, Shape{-1})}}),
       nullptr},
      {Sig({{"flags", Info(DType::kBool, Shape{-1, 2})}, {"ids", Info(DType::kInt32, Shape{-1})},
            {"w", Info(DType::kFloat64, Shape::UnknownRank())}}),
       nullptr},
      {Sig({{"inputs", Info(DType::kFloat32, Shape{-1, 4})}}), iris},
      {Sig({{"img", Info(DType::kFloat32, Shape{-1, 2, 2, 1})}}), nullptr},
  };
  return *cases;
}

bool Admits(const Shape& allowed, const Shape& actual) {
  if (allowed.unknown_rank()) return true;
  if (allowed.rank() != actual.rank()) return false;
  for (int i = 0; i < allowed.rank(); ++i) {
    if (allowed.dim(i) != -1 && allowed.dim(i) != actual.dim(i)) return false;
  }
  return true;
}

bool AllFinite(const Tensor& t) {
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    if (t.dtype() == DType::kFloat32 && !std::isfinite(t.data<float>()[i])) return false;
    if (t.dtype() == DType::kFloat64 && !std::isfinite(t.data<double>()[i])) return false;
  }
  return true;
}

void CheckInputs(const std::map<std::string, Tensor>& inputs, const SignatureDef& sig) {
  FUZZ_CHECK(inputs.size() == sig.inputs.size(), "input count");
  for (const auto& [key, info] : sig.inputs) {
    auto it = inputs.find(key);
    FUZZ_CHECK(it != inputs.end(), "missing input " + key);
    FUZZ_CHECK(it->second.dtype() == info.dtype, key + ": " + it->second.DebugString());
    FUZZ_CHECK(Admits(info.shape, it->second.shape()), key + ": " + it->second.DebugString());
    FUZZ_CHECK(AllFinite(it->second), key + ": non-finite value");
  }
}

void CheckSame(const std::map<std::string, Tensor>& a, const std::map<std::string, Tensor>& b,
               const std::string& written) {
  FUZZ_CHECK(a.size() == b.size(), "written: " + written);
  for (const auto& [key, t] : a) {
    auto it = b.find(key);
    FUZZ_CHECK(it != b.end() && actorflow::TensorsEqual(t, it->second),
               key + " differs; written: " + written);
  }
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

// The numeric reader's answer for `text`, when it takes the body.
std::optional<actorflow::PredictBody> NumericInputs(std::string_view text,
                                                    const SignatureDef& signature) {
  std::optional<actorflow::NumericPredictBody> scanned = actorflow::ScanNumericPredictBody(text);
  if (!scanned) return std::nullopt;
  return actorflow::NumericPredictInputs(*scanned, signature);
}

void CheckError(const actorflow::Status& status) {
  FUZZ_CHECK(!status.ok(), "error without a message");
  try {
    (void)actorflow::ErrorJson(status.message()).dump();
  } catch (const std::exception& e) {
    FUZZ_CHECK(false, std::string("ErrorJson does not dump: ") + e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::vector<Case>& cases = Cases();
  const Case& c = cases[data[0] % cases.size()];
  const bool examples = (data[0] / cases.size()) % 2 == 1;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);

  const std::optional<actorflow::PredictBody> numeric =
      examples ? std::nullopt : NumericInputs(text, c.signature);
  auto body = actorflow::ParseJsonText(text, "request body");
  FUZZ_CHECK(!numeric || body.ok(), "the numeric reader took a body the general path refuses: " +
                                        body.status().ToString());
  if (!body.ok()) {
    CheckError(body.status());
    return 0;
  }
  auto name = actorflow::PeekSignatureName(*body);
  FUZZ_CHECK(!numeric || name.ok(), "the numeric reader took a body without a valid name");
  if (!name.ok()) {
    CheckError(name.status());
    return 0;
  }

  if (examples) {
    auto inputs = actorflow::ParseExamplesBody(*body, c.signature, c.classifier);
    if (!inputs.ok()) {
      CheckError(inputs.status());
      return 0;
    }
    CheckInputs(*inputs, c.signature);
    return 0;
  }

  auto parsed = actorflow::ParsePredictBody(*body, c.signature);
  FUZZ_CHECK(!numeric || parsed.ok(), "the numeric reader took a body the general path refuses: " +
                                          parsed.status().ToString());
  if (!parsed.ok()) {
    CheckError(parsed.status());
    return 0;
  }
  FUZZ_CHECK(parsed->signature_name == *name, *name);
  if (numeric) {
    FUZZ_CHECK(numeric->signature_name == parsed->signature_name &&
                   numeric->row_format == parsed->row_format &&
                   numeric->inputs.size() == parsed->inputs.size(),
               "the numeric reader read the body's keys differently");
    for (const auto& [key, tensor] : parsed->inputs) {
      auto it = numeric->inputs.find(key);
      FUZZ_CHECK(it != numeric->inputs.end() && SameBits(it->second, tensor),
                 key + ": the numeric reader read " +
                     (it == numeric->inputs.end() ? std::string("nothing")
                                                  : it->second.DebugString()) +
                     ", the general path " + tensor.DebugString());
    }
  }
  CheckInputs(parsed->inputs, c.signature);

  // The inputs written as a columnar response read back as a columnar request.
  const json columns = actorflow::PredictResponseJson(parsed->inputs, /*row_format=*/false);
  FUZZ_CHECK(columns.contains("outputs"), columns.dump());
  const json request{{"inputs", columns["outputs"]}};
  auto back = actorflow::ParsePredictBody(json::parse(request.dump()), c.signature);
  FUZZ_CHECK(back.ok(), back.status().ToString() + "\nwritten: " + request.dump());
  CheckSame(parsed->inputs, back->inputs, request.dump());

  if (parsed->row_format) {
    const json rows = actorflow::PredictResponseJson(parsed->inputs, /*row_format=*/true);
    FUZZ_CHECK(rows.contains("predictions"), rows.dump());
    const json instances{{"instances", rows["predictions"]}};
    auto again = actorflow::ParsePredictBody(json::parse(instances.dump()), c.signature);
    FUZZ_CHECK(again.ok(), again.status().ToString() + "\nwritten: " + instances.dump());
    CheckSame(parsed->inputs, again->inputs, instances.dump());
  }
  return 0;
}
