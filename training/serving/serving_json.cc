#include "training/serving/serving_json.h"

#include <cmath>
#include <cstring>
#include <utility>

#include "graph/tensor_json.h"

namespace actorflow {
namespace {

using Json = nlohmann::json;

constexpr char kInstancesKey[] = "instances";
constexpr char kInputsKey[] = "inputs";
constexpr char kSignatureNameKey[] = "signature_name";
constexpr char kExamplesKey[] = "examples";
constexpr char kContextKey[] = "context";

// "[-1, 4]": the spelling of shapes in signatures (Shape::ToString writes "[?,4]").
std::string ShapeString(const Shape& shape) {
  if (shape.unknown_rank()) return "<unknown rank>";
  std::string out = "[";
  for (int i = 0; i < shape.rank(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape.dim(i));
  }
  return out + "]";
}

std::string KeyList(const std::map<std::string, TensorInfo>& infos) {
  std::string out;
  for (const auto& [key, info] : infos) {
    if (!out.empty()) out += ", ";
    out += "'" + key + "'";
  }
  return out;
}

std::string InputCulprit(const std::string& key) { return "input '" + key + "'"; }

// What an input's NaN or infinity is told: serving refuses them in float inputs
// (TensorFromJsonValue accepts the strings "nan"/"inf" for feeds).
constexpr char kNotFiniteInput[] = " is not a finite number (serving accepts finite numbers only)";

// InvalidArgument "<culprit>[, <noun> i]: <nan|inf|-inf><why>" for the first NaN or
// infinity of a float tensor. `rows` > 0 splits the elements into that many
// examples, named "<noun> i"; otherwise `culprit` names the value.
template <typename T>
Status CheckFiniteTyped(const Tensor& tensor, const std::string& culprit, int64_t rows,
                        const char* noun, const char* why) {
  const T* values = tensor.data<T>();
  const int64_t n = tensor.NumElements();
  for (int64_t i = 0; i < n; ++i) {
    if (std::isfinite(values[i])) continue;
    const char* spelled = std::isnan(values[i]) ? "nan" : (values[i] > 0 ? "inf" : "-inf");
    std::string where = culprit;
    if (rows > 0) where += ", " + std::string(noun) + " " + std::to_string(i / (n / rows));
    return InvalidArgument(where + ": " + spelled + why);
  }
  return Status::OK();
}

Status CheckFinite(const Tensor& tensor, const std::string& culprit, int64_t rows,
                   const char* noun, const char* why = kNotFiniteInput) {
  if (tensor.dtype() == DType::kFloat32) {
    return CheckFiniteTyped<float>(tensor, culprit, rows, noun, why);
  }
  if (tensor.dtype() == DType::kFloat64) {
    return CheckFiniteTyped<double>(tensor, culprit, rows, noun, why);
  }
  return Status::OK();
}

// One input's values, one per example, read and stacked: [N, ...value shape].
StatusOr<Tensor> StackValues(const std::string& key, const TensorInfo& info,
                             const std::vector<const Json*>& values, const char* noun) {
  std::vector<Tensor> parts;
  parts.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string culprit = InputCulprit(key) + ", " + noun + " " + std::to_string(i);
    AF_ASSIGN_OR_RETURN(Tensor part,
                        TensorFromJsonValue(*values[i], info.dtype, Shape::UnknownRank(), culprit));
    if (!parts.empty() && part.shape() != parts[0].shape()) {
      return InvalidArgument(InputCulprit(key) + ": " + noun + " " + std::to_string(i) +
                             " has shape " + ShapeString(part.shape()) + " but " + noun +
                             " 0 has shape " + ShapeString(parts[0].shape()) + "; every " + noun +
                             " must have the same shape");
    }
    AF_RETURN_IF_ERROR(CheckFinite(part, culprit, 0, noun));
    parts.push_back(std::move(part));
  }
  std::vector<int64_t> dims = {static_cast<int64_t>(parts.size())};
  if (!parts.empty()) {
    for (int64_t d : parts[0].shape().dims()) dims.push_back(d);
  }
  Tensor stacked(info.dtype, Shape(dims));
  char* out = static_cast<char*>(stacked.raw_data());
  for (const Tensor& part : parts) {
    const size_t bytes = part.TotalBytes();
    if (bytes > 0) std::memcpy(out, part.raw_data(), bytes);
    out += bytes;
  }
  AF_RETURN_IF_ERROR(CheckInputShape(key, info, stacked));
  return stacked;
}

// Checks that `object`'s keys are exactly the signature's input keys. `where` ("" or
// "instance 3: ") prefixes the message.
Status CheckInputKeys(const Json& object, const SignatureDef& signature, const std::string& where) {
  for (const auto& item : object.items()) {
    if (signature.inputs.count(item.key()) == 0) {
      return InvalidArgument(where + "unknown input key '" + item.key() +
                             "'; the signature's inputs are " + KeyList(signature.inputs));
    }
  }
  for (const auto& [key, info] : signature.inputs) {
    if (object.find(key) == object.end()) {
      return InvalidArgument(where + "missing input '" + key + "'; the signature's inputs are " +
                             KeyList(signature.inputs));
    }
  }
  return Status::OK();
}

// Row format: `instances` (N >= 1 JSON values), each an input's value or an object
// keyed by input key, stacked per input.
StatusOr<std::map<std::string, Tensor>> ParseRows(const std::vector<const Json*>& instances,
                                                 const SignatureDef& signature, const char* noun) {
  if (signature.inputs.empty()) {
    return InvalidArgument("the signature has no inputs to read " + std::string(noun) + "s into");
  }
  std::map<std::string, std::vector<const Json*>> values;
  for (size_t i = 0; i < instances.size(); ++i) {
    const Json& instance = *instances[i];
    const std::string where = std::string(noun) + " " + std::to_string(i) + ": ";
    if (!instance.is_object()) {
      if (signature.inputs.size() != 1) {
        return InvalidArgument(where + "expected an object {KEY: value} naming every input (" +
                               KeyList(signature.inputs) + "), since the signature has " +
                               std::to_string(signature.inputs.size()) + " inputs");
      }
      values[signature.inputs.begin()->first].push_back(&instance);
      continue;
    }
    AF_RETURN_IF_ERROR(CheckInputKeys(instance, signature, where));
    for (const auto& [key, info] : signature.inputs) {
      values[key].push_back(&*instance.find(key));
    }
  }
  std::map<std::string, Tensor> inputs;
  for (const auto& [key, info] : signature.inputs) {
    AF_ASSIGN_OR_RETURN(Tensor tensor, StackValues(key, info, values[key], noun));
    inputs.emplace(key, std::move(tensor));
  }
  return inputs;
}

// Columnar format: the whole tensor per input.
StatusOr<std::map<std::string, Tensor>> ParseColumns(const Json& value,
                                                    const SignatureDef& signature) {
  if (signature.inputs.empty()) {
    return InvalidArgument("the signature has no inputs to read \"inputs\" into");
  }
  std::map<std::string, const Json*> values;
  if (!value.is_object()) {
    if (signature.inputs.size() != 1) {
      return InvalidArgument("\"inputs\" must be an object {KEY: value} naming every input (" +
                             KeyList(signature.inputs) + "), since the signature has " +
                             std::to_string(signature.inputs.size()) + " inputs");
    }
    values[signature.inputs.begin()->first] = &value;
  } else {
    AF_RETURN_IF_ERROR(CheckInputKeys(value, signature, "\"inputs\": "));
    for (const auto& [key, info] : signature.inputs) values[key] = &*value.find(key);
  }
  std::map<std::string, Tensor> inputs;
  for (const auto& [key, info] : signature.inputs) {
    const std::string culprit = InputCulprit(key);
    AF_ASSIGN_OR_RETURN(Tensor tensor, TensorFromJsonValue(*values[key], info.dtype,
                                                           Shape::UnknownRank(), culprit));
    const int64_t rows = tensor.rank() > 0 && tensor.NumElements() > 0 ? tensor.dim(0) : 0;
    AF_RETURN_IF_ERROR(CheckFinite(tensor, culprit, rows, "instance"));
    AF_RETURN_IF_ERROR(CheckInputShape(key, info, tensor));
    inputs.emplace(key, std::move(tensor));
  }
  return inputs;
}

}  // namespace

Status CheckInputShape(const std::string& key, const TensorInfo& info, const Tensor& tensor) {
  const Shape& want = info.shape;
  if (want.unknown_rank()) return Status::OK();
  bool fits = want.rank() == tensor.rank();
  for (int i = 0; fits && i < want.rank(); ++i) {
    fits = want.dim(i) == Shape::kUnknownDim || want.dim(i) == tensor.dim(i);
  }
  if (fits) return Status::OK();
  return InvalidArgument(InputCulprit(key) + ": expected shape " + ShapeString(want) + " (" +
                         DTypeName(info.dtype) + "), got " + ShapeString(tensor.shape()));
}

StatusOr<std::string> PeekSignatureName(const Json& body) {
  if (!body.is_object()) {
    return InvalidArgument("the request body must be a JSON object");
  }
  auto it = body.find(kSignatureNameKey);
  if (it == body.end()) return std::string();
  if (!it->is_string()) {
    return InvalidArgument("\"signature_name\" must be a string");
  }
  return it->get<std::string>();
}

StatusOr<PredictBody> ParsePredictBody(const Json& body, const SignatureDef& signature) {
  PredictBody parsed;
  AF_ASSIGN_OR_RETURN(parsed.signature_name, PeekSignatureName(body));
  for (const auto& item : body.items()) {
    if (item.key() != kSignatureNameKey && item.key() != kInstancesKey &&
        item.key() != kInputsKey) {
      return InvalidArgument("unknown key '" + item.key() +
                             "' in the request body; expected \"instances\" or \"inputs\" and "
                             "optionally \"signature_name\"");
    }
  }
  auto instances = body.find(kInstancesKey);
  auto inputs = body.find(kInputsKey);
  const bool has_instances = instances != body.end();
  const bool has_inputs = inputs != body.end();
  if (has_instances == has_inputs) {
    return InvalidArgument(has_instances
                               ? "the request body has both \"instances\" and \"inputs\"; "
                                 "give exactly one of them"
                               : "the request body has neither \"instances\" (row format) nor "
                                 "\"inputs\" (columnar format); give exactly one of them");
  }
  if (has_instances) {
    if (!instances->is_array() || instances->empty()) {
      return InvalidArgument("\"instances\" must be a non-empty list");
    }
    std::vector<const Json*> rows;
    rows.reserve(instances->size());
    for (const Json& instance : *instances) rows.push_back(&instance);
    parsed.row_format = true;
    AF_ASSIGN_OR_RETURN(parsed.inputs, ParseRows(rows, signature, "instance"));
  } else {
    parsed.row_format = false;
    AF_ASSIGN_OR_RETURN(parsed.inputs, ParseColumns(*inputs, signature));
  }
  return parsed;
}

Status CheckFiniteOutputs(const std::map<std::string, Tensor>& outputs) {
  for (const auto& [key, tensor] : outputs) {
    if (!tensor.IsInitialized() || tensor.IsOnDevice() || tensor.NumElements() == 0) continue;
    const int64_t rows = tensor.shape().rank() >= 1 ? tensor.dim(0) : 0;
    AF_RETURN_IF_ERROR(CheckFinite(tensor, "output '" + key + "'", rows, "instance",
                                   ": the model's arithmetic overflowed float on these inputs "
                                   "(values far outside what it was trained on?); no "
                                   "prediction is given for them"));
  }
  return Status::OK();
}

StatusOr<std::map<std::string, Tensor>> ParseExamplesBody(const Json& body,
                                                         const SignatureDef& signature,
                                                         const ClassifierInfo* classifier) {
  AF_RETURN_IF_ERROR(PeekSignatureName(body).status());
  for (const auto& item : body.items()) {
    if (item.key() != kSignatureNameKey && item.key() != kContextKey &&
        item.key() != kExamplesKey) {
      return InvalidArgument("unknown key '" + item.key() +
                             "' in the request body; expected \"examples\" and optionally "
                             "\"context\" and \"signature_name\"");
    }
  }
  auto examples = body.find(kExamplesKey);
  if (examples == body.end() || !examples->is_array() || examples->empty()) {
    return InvalidArgument("\"examples\" must be a non-empty list of objects {feature: value}");
  }
  const Json empty_context = Json::object();
  const Json* context = &empty_context;
  auto context_it = body.find(kContextKey);
  if (context_it != body.end()) {
    if (!context_it->is_object()) {
      return InvalidArgument("\"context\" must be an object {feature: value}");
    }
    context = &*context_it;
  }
  for (size_t i = 0; i < examples->size(); ++i) {
    if (!(*examples)[i].is_object()) {
      return InvalidArgument("example " + std::to_string(i) +
                             ": expected an object {feature: value}");
    }
  }

  if (classifier == nullptr) {
    // Each example, the context filling what it lacks, read as a row-format instance.
    std::vector<Json> merged;
    merged.reserve(examples->size());
    for (const Json& example : *examples) {
      Json m = example;
      for (const auto& item : context->items()) {
        if (m.find(item.key()) == m.end()) m[item.key()] = item.value();
      }
      merged.push_back(std::move(m));
    }
    std::vector<const Json*> rows;
    rows.reserve(merged.size());
    for (const Json& m : merged) rows.push_back(&m);
    return ParseRows(rows, signature, "example");
  }

  if (signature.inputs.size() != 1) {
    return InvalidArgument("a classifier's signature must have one input [N, F]; this one has " +
                           std::to_string(signature.inputs.size()) + " (" +
                           KeyList(signature.inputs) + ")");
  }
  const std::string& key = signature.inputs.begin()->first;
  const TensorInfo& info = signature.inputs.begin()->second;
  const int64_t n = static_cast<int64_t>(examples->size());
  const int64_t f = static_cast<int64_t>(classifier->feature_names.size());
  Tensor features(info.dtype, Shape{n, f});
  char* out = static_cast<char*>(features.raw_data());
  const size_t element_bytes = DTypeSize(info.dtype);
  for (int64_t i = 0; i < n; ++i) {
    const Json& example = (*examples)[static_cast<size_t>(i)];
    for (int64_t j = 0; j < f; ++j) {
      const std::string& name = classifier->feature_names[static_cast<size_t>(j)];
      const std::string culprit = "example " + std::to_string(i) + ", feature '" + name + "'";
      auto it = example.find(name);
      if (it == example.end()) {
        it = context->find(name);
        if (it == context->end()) {
          return InvalidArgument(culprit + ": missing (neither in the example nor in "
                                 "\"context\")");
        }
      }
      // A feature is a number, or the one-number list of a tf.Example feature.
      const Json* value = &*it;
      if (value->is_array() && value->size() == 1) value = &(*value)[0];
      AF_ASSIGN_OR_RETURN(Tensor v, TensorFromJsonValue(*value, info.dtype, Shape{}, culprit));
      AF_RETURN_IF_ERROR(CheckFinite(v, culprit, 0, "example"));
      std::memcpy(out + static_cast<size_t>(i * f + j) * element_bytes, v.raw_data(),
                  element_bytes);
    }
  }
  AF_RETURN_IF_ERROR(CheckInputShape(key, info, features));
  std::map<std::string, Tensor> inputs;
  inputs.emplace(key, std::move(features));
  return inputs;
}

}  // namespace actorflow
