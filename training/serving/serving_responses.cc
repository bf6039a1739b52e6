// The writing half of serving_json.h: :predict, :classify and :regress responses,
// model status and metadata, and error bodies, from tensors and manifests.
#include "training/serving/serving_json.h"

#include <charconv>
#include <cmath>
#include <utility>

namespace actorflow {
namespace {

using Json = nlohmann::json;

// Non-finite values as tensor_json.h spells them; JSON numbers cannot hold them.
template <typename T>
Json NonFiniteJson(T v) {
  if (std::isnan(v)) return Json("nan");
  return Json(v > 0 ? "inf" : "-inf");
}

// The double nearest to the shortest decimal that reads back as `f`: nlohmann then
// writes 0.01f as 0.01 (not 0.009999999776482582) and 3.0f as 3.0.
Json FloatJson(float f) {
  if (!std::isfinite(f)) return NonFiniteJson(f);
  char buf[64];
  auto written = std::to_chars(buf, buf + sizeof(buf), f);
  if (written.ec == std::errc()) {
    double d = 0;
    auto read = std::from_chars(buf, written.ptr, d);
    if (read.ec == std::errc() && static_cast<float>(d) == f) return Json(d);
  }
  return Json(static_cast<double>(f));
}

// nlohmann writes doubles with the shortest round-tripping decimal already.
Json DoubleJson(double d) {
  if (!std::isfinite(d)) return NonFiniteJson(d);
  return Json(d);
}

Json ElementJson(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32: return FloatJson(t.data<float>()[i]);
    case DType::kFloat64: return DoubleJson(t.data<double>()[i]);
    case DType::kInt32: return Json(static_cast<int64_t>(t.data<int32_t>()[i]));
    case DType::kInt64: return Json(t.data<int64_t>()[i]);
    case DType::kBool: return Json(t.data<bool>()[i]);
  }
  return Json(nullptr);
}

bool Readable(const Tensor& t) { return t.IsInitialized() && !t.IsOnDevice(); }

// Elements from *next on, nested by dims[depth:] (a bare number when depth is the
// last level).
Json NestedJson(const Tensor& t, DimSpan dims, size_t depth, int64_t* next) {
  if (depth == dims.size()) return ElementJson(t, (*next)++);
  Json out = Json::array();
  for (int64_t i = 0; i < dims[depth]; ++i) out.push_back(NestedJson(t, dims, depth + 1, next));
  return out;
}

Json WholeJson(const Tensor& t) {
  if (!Readable(t)) return Json(nullptr);
  int64_t next = 0;
  return NestedJson(t, t.shape().dims(), 0, &next);
}

// Example `row` of t [N, ...]: its [...] part.
Json RowJson(const Tensor& t, int64_t row) {
  if (!Readable(t)) return Json(nullptr);
  const DimSpan dims = t.shape().dims();
  int64_t next = t.dim(0) == 0 ? 0 : row * (t.NumElements() / t.dim(0));
  return NestedJson(t, dims, 1, &next);
}

}  // namespace

Json PredictResponseJson(const std::map<std::string, Tensor>& outputs, bool row_format) {
  Json response = Json::object();
  if (!row_format) {
    if (outputs.size() == 1) {
      response["outputs"] = WholeJson(outputs.begin()->second);
    } else {
      Json by_key = Json::object();
      for (const auto& [key, tensor] : outputs) by_key[key] = WholeJson(tensor);
      response["outputs"] = std::move(by_key);
    }
    return response;
  }
  // The row format needs one batch dimension shared by every output.
  int64_t rows = -1;
  std::string first_key;
  for (const auto& [key, tensor] : outputs) {
    if (tensor.rank() == 0) {
      return ErrorJson("output '" + key + "' is a scalar (" + tensor.DebugString() +
                       "), which has no rows; ask for the columnar format (\"inputs\")");
    }
    if (rows >= 0 && tensor.dim(0) != rows) {
      return ErrorJson("outputs '" + first_key + "' and '" + key +
                       "' have different batch sizes (" + std::to_string(rows) + " and " +
                       std::to_string(tensor.dim(0)) +
                       "); ask for the columnar format (\"inputs\")");
    }
    if (rows < 0) {
      rows = tensor.dim(0);
      first_key = key;
    }
  }
  Json predictions = Json::array();
  for (int64_t i = 0; i < rows; ++i) {
    if (outputs.size() == 1) {
      predictions.push_back(RowJson(outputs.begin()->second, i));
    } else {
      Json example = Json::object();
      for (const auto& [key, tensor] : outputs) example[key] = RowJson(tensor, i);
      predictions.push_back(std::move(example));
    }
  }
  response["predictions"] = std::move(predictions);
  return response;
}

Json ClassifyResponseJson(const Tensor& scores, const std::vector<std::string>& labels) {
  if (scores.rank() != 2) {
    return ErrorJson("classification scores must be [N, C], got " + scores.DebugString());
  }
  if (!Readable(scores)) {
    return ErrorJson("classification scores " + scores.DebugString() + " are not readable");
  }
  const int64_t n = scores.dim(0);
  const int64_t c = scores.dim(1);
  Json result = Json::array();
  for (int64_t i = 0; i < n; ++i) {
    Json classes = Json::array();
    for (int64_t j = 0; j < c; ++j) {
      const std::string label =
          j < static_cast<int64_t>(labels.size()) ? labels[static_cast<size_t>(j)]
                                                  : std::to_string(j);
      classes.push_back(Json::array({label, ElementJson(scores, i * c + j)}));
    }
    result.push_back(std::move(classes));
  }
  Json response = Json::object();
  response["result"] = std::move(result);
  return response;
}

StatusOr<Json> RegressResponseJson(const Tensor& values) {
  const bool fits = (values.rank() == 1) || (values.rank() == 2 && values.dim(1) == 1);
  if (!fits) {
    return InvalidArgument("regression outputs must be [N] or [N, 1], got " +
                           values.DebugString());
  }
  if (!Readable(values)) {
    return InvalidArgument("regression outputs " + values.DebugString() + " are not readable");
  }
  Json result = Json::array();
  for (int64_t i = 0; i < values.dim(0); ++i) result.push_back(ElementJson(values, i));
  Json response = Json::object();
  response["result"] = std::move(result);
  return response;
}

Json ModelStatusJson(const std::vector<VersionState>& versions) {
  Json list = Json::array();
  for (const VersionState& v : versions) {
    Json status = Json::object();
    status["error_code"] = v.error_code;
    status["error_message"] = v.error_message;
    Json entry = Json::object();
    // Protobuf's JSON mapping writes int64 as a string.
    entry["version"] = std::to_string(v.version);
    entry["state"] = v.state;
    entry["status"] = std::move(status);
    list.push_back(std::move(entry));
  }
  Json response = Json::object();
  response["model_version_status"] = std::move(list);
  return response;
}

namespace {

// TensorFlow names a tensor "node:k"; an endpoint may omit ":0".
std::string TensorName(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  if (colon != std::string::npos && colon + 1 < endpoint.size() &&
      endpoint.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
    return endpoint;
  }
  return endpoint + ":0";
}

Json TensorInfoResponseJson(const TensorInfo& info) {
  Json shape = Json::object();
  Json dims = Json::array();
  if (!info.shape.unknown_rank()) {
    for (int64_t d : info.shape.dims()) {
      Json dim = Json::object();
      dim["size"] = std::to_string(d);
      dim["name"] = "";
      dims.push_back(std::move(dim));
    }
  }
  shape["dim"] = std::move(dims);
  shape["unknown_rank"] = info.shape.unknown_rank();
  Json out = Json::object();
  out["dtype"] = TfDTypeName(info.dtype);
  out["tensor_shape"] = std::move(shape);
  out["name"] = TensorName(info.endpoint);
  return out;
}

Json TensorInfoMapJson(const std::map<std::string, TensorInfo>& infos) {
  Json out = Json::object();
  for (const auto& [key, info] : infos) out[key] = TensorInfoResponseJson(info);
  return out;
}

}  // namespace

Json ModelMetadataJson(const std::string& model_name, int64_t version,
                       const ServableManifest& manifest) {
  Json signatures = Json::object();
  for (const auto& [name, signature] : manifest.signatures) {
    Json def = Json::object();
    def["inputs"] = TensorInfoMapJson(signature.inputs);
    def["outputs"] = TensorInfoMapJson(signature.outputs);
    def["method_name"] = signature.method_name;
    signatures[name] = std::move(def);
  }
  Json inner = Json::object();
  inner["signature_def"] = std::move(signatures);
  Json metadata = Json::object();
  metadata["signature_def"] = std::move(inner);
  Json spec = Json::object();
  spec["name"] = model_name;
  spec["signature_name"] = "";
  spec["version"] = std::to_string(version);
  Json response = Json::object();
  response["model_spec"] = std::move(spec);
  response["metadata"] = std::move(metadata);
  return response;
}

Json ErrorJson(const std::string& message) {
  // Dumping with `replace` swaps invalid UTF-8 for U+FFFD; reading that back gives a
  // string that dumps without throwing.
  const std::string text =
      Json(message).dump(-1, ' ', false, Json::error_handler_t::replace);
  Json clean = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  Json response = Json::object();
  response["error"] = clean.is_string() ? std::move(clean) : Json("(unprintable message)");
  return response;
}

}  // namespace actorflow
