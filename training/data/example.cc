#include "training/data/example.h"

#include <cstring>
#include <utility>

#include "training/data/proto_wire.h"

namespace actorflow {
namespace {

using proto_wire::AppendBytesField;
using proto_wire::AppendLittleEndian;
using proto_wire::AppendVarint;
using proto_wire::FieldKey;
using proto_wire::kFixed32;
using proto_wire::kLengthDelimited;
using proto_wire::kVarint;
using proto_wire::WireReader;

// Feature's oneof field numbers.
constexpr uint32_t kBytesListField = 1;
constexpr uint32_t kFloatListField = 2;
constexpr uint32_t kInt64ListField = 3;

Status DecodeBytesList(std::string_view bytes, std::vector<std::string>* out) {
  WireReader reader(bytes);
  while (!reader.done()) {
    AF_ASSIGN_OR_RETURN(FieldKey key, reader.Key());
    if (key.field != 1) {
      AF_RETURN_IF_ERROR(reader.Skip(key.wire_type));
      continue;
    }
    AF_RETURN_IF_ERROR(reader.ExpectWireType(key, kLengthDelimited));
    AF_ASSIGN_OR_RETURN(std::string_view value, reader.LengthDelimited());
    out->emplace_back(value);
  }
  return Status::OK();
}

float FloatFromBits(uint64_t bits) {
  const auto bits32 = static_cast<uint32_t>(bits);
  float value = 0;
  std::memcpy(&value, &bits32, sizeof(value));
  return value;
}

// Packed (one length-delimited run of fixed32s) or not (one fixed32 per field).
Status DecodeFloatList(std::string_view bytes, std::vector<float>* out) {
  WireReader reader(bytes);
  while (!reader.done()) {
    AF_ASSIGN_OR_RETURN(FieldKey key, reader.Key());
    if (key.field != 1) {
      AF_RETURN_IF_ERROR(reader.Skip(key.wire_type));
    } else if (key.wire_type == kFixed32) {
      AF_ASSIGN_OR_RETURN(uint64_t bits, reader.Fixed(4));
      out->push_back(FloatFromBits(bits));
    } else if (key.wire_type == kLengthDelimited) {
      AF_ASSIGN_OR_RETURN(std::string_view packed, reader.LengthDelimited());
      if (packed.size() % 4 != 0) {
        return reader.Malformed("packed floats of " + std::to_string(packed.size()) +
                                " bytes, not a multiple of 4");
      }
      out->reserve(out->size() + packed.size() / 4);
      for (size_t at = 0; at < packed.size(); at += 4) {
        out->push_back(FloatFromBits(proto_wire::ReadLittleEndian(packed.data() + at, 4)));
      }
    } else {
      return reader.Malformed("field 1 has wire type " + std::to_string(key.wire_type) +
                              ", expected 5 or 2 (packed)");
    }
  }
  return Status::OK();
}

// Packed (one length-delimited run of varints) or not (one varint per field).
Status DecodeInt64List(std::string_view bytes, std::vector<int64_t>* out) {
  WireReader reader(bytes);
  while (!reader.done()) {
    AF_ASSIGN_OR_RETURN(FieldKey key, reader.Key());
    if (key.field != 1) {
      AF_RETURN_IF_ERROR(reader.Skip(key.wire_type));
    } else if (key.wire_type == kVarint) {
      AF_ASSIGN_OR_RETURN(uint64_t value, reader.Varint());
      out->push_back(static_cast<int64_t>(value));  // int64: two's complement varint
    } else if (key.wire_type == kLengthDelimited) {
      AF_ASSIGN_OR_RETURN(std::string_view packed, reader.LengthDelimited());
      WireReader values(packed);
      while (!values.done()) {
        StatusOr<uint64_t> value = values.Varint();
        if (!value.ok()) return value.status().WithContext("packed int64 values");
        out->push_back(static_cast<int64_t>(*value));
      }
    } else {
      return reader.Malformed("field 1 has wire type " + std::to_string(key.wire_type) +
                              ", expected 0 or 2 (packed)");
    }
  }
  return Status::OK();
}

// Merges one serialized Feature into *feature; *has_kind says whether a list was set
// (by this or an earlier piece of the same Feature).
Status DecodeFeature(std::string_view bytes, Feature* feature, bool* has_kind) {
  WireReader reader(bytes);
  while (!reader.done()) {
    AF_ASSIGN_OR_RETURN(FieldKey key, reader.Key());
    if (key.field < kBytesListField || key.field > kInt64ListField) {
      AF_RETURN_IF_ERROR(reader.Skip(key.wire_type));
      continue;
    }
    AF_RETURN_IF_ERROR(reader.ExpectWireType(key, kLengthDelimited));
    AF_ASSIGN_OR_RETURN(std::string_view list, reader.LengthDelimited());
    const Feature::Kind kind = key.field == kBytesListField   ? Feature::Kind::kBytes
                               : key.field == kFloatListField ? Feature::Kind::kFloat
                                                              : Feature::Kind::kInt64;
    if (!*has_kind || feature->kind != kind) *feature = Feature{};  // oneof: the last wins
    feature->kind = kind;
    *has_kind = true;
    Status s;
    switch (kind) {
      case Feature::Kind::kBytes: s = DecodeBytesList(list, &feature->bytes_list); break;
      case Feature::Kind::kFloat: s = DecodeFloatList(list, &feature->float_list); break;
      case Feature::Kind::kInt64: s = DecodeInt64List(list, &feature->int64_list); break;
    }
    AF_RETURN_IF_ERROR(s.WithContext(FeatureKindName(kind)));
  }
  return Status::OK();
}

// One map entry (key = 1, value = 2) into *features.
Status DecodeEntry(std::string_view bytes, Features* features) {
  WireReader reader(bytes);
  std::string name;
  Feature feature;
  bool has_kind = false;
  std::vector<std::string_view> values;  // decoded once the key is known, for messages
  while (!reader.done()) {
    AF_ASSIGN_OR_RETURN(FieldKey key, reader.Key());
    if (key.field == 1) {
      AF_RETURN_IF_ERROR(reader.ExpectWireType(key, kLengthDelimited));
      AF_ASSIGN_OR_RETURN(std::string_view view, reader.LengthDelimited());
      name.assign(view.data(), view.size());
    } else if (key.field == 2) {
      AF_RETURN_IF_ERROR(reader.ExpectWireType(key, kLengthDelimited));
      AF_ASSIGN_OR_RETURN(std::string_view value, reader.LengthDelimited());
      values.push_back(value);
    } else {
      AF_RETURN_IF_ERROR(reader.Skip(key.wire_type));
    }
  }
  for (std::string_view value : values) {
    AF_RETURN_IF_ERROR(
        DecodeFeature(value, &feature, &has_kind).WithContext("feature['" + name + "']"));
  }
  if (has_kind) {
    (*features)[name] = std::move(feature);
  } else {
    features->erase(name);  // no list set: absent, as TensorFlow's parser has it
  }
  return Status::OK();
}

Status DecodeFeatures(std::string_view bytes, Features* features) {
  WireReader reader(bytes);
  while (!reader.done()) {
    AF_ASSIGN_OR_RETURN(FieldKey key, reader.Key());
    if (key.field != 1) {
      AF_RETURN_IF_ERROR(reader.Skip(key.wire_type));
      continue;
    }
    AF_RETURN_IF_ERROR(reader.ExpectWireType(key, kLengthDelimited));
    AF_ASSIGN_OR_RETURN(std::string_view entry, reader.LengthDelimited());
    AF_RETURN_IF_ERROR(DecodeEntry(entry, features));
  }
  return Status::OK();
}

std::string EncodeFeature(const Feature& feature) {
  std::string list;
  uint32_t field = kBytesListField;
  switch (feature.kind) {
    case Feature::Kind::kBytes:
      for (const std::string& value : feature.bytes_list) AppendBytesField(1, value, &list);
      break;
    case Feature::Kind::kFloat: {
      field = kFloatListField;
      std::string packed;
      for (float value : feature.float_list) {
        uint32_t bits = 0;
        std::memcpy(&bits, &value, sizeof(bits));
        AppendLittleEndian(bits, 4, &packed);
      }
      if (!packed.empty()) AppendBytesField(1, packed, &list);
      break;
    }
    case Feature::Kind::kInt64: {
      field = kInt64ListField;
      std::string packed;
      for (int64_t value : feature.int64_list) AppendVarint(static_cast<uint64_t>(value), &packed);
      if (!packed.empty()) AppendBytesField(1, packed, &list);
      break;
    }
  }
  std::string encoded;
  AppendBytesField(field, list, &encoded);
  return encoded;
}

}  // namespace

Feature Feature::Bytes(std::vector<std::string> values) {
  Feature f;
  f.kind = Kind::kBytes;
  f.bytes_list = std::move(values);
  return f;
}

Feature Feature::Floats(std::vector<float> values) {
  Feature f;
  f.kind = Kind::kFloat;
  f.float_list = std::move(values);
  return f;
}

Feature Feature::Int64s(std::vector<int64_t> values) {
  Feature f;
  f.kind = Kind::kInt64;
  f.int64_list = std::move(values);
  return f;
}

size_t Feature::size() const {
  switch (kind) {
    case Kind::kBytes: return bytes_list.size();
    case Kind::kFloat: return float_list.size();
    case Kind::kInt64: return int64_list.size();
  }
  return 0;
}

const char* FeatureKindName(Feature::Kind kind) {
  switch (kind) {
    case Feature::Kind::kBytes: return "bytes_list";
    case Feature::Kind::kFloat: return "float_list";
    case Feature::Kind::kInt64: return "int64_list";
  }
  return "unknown";
}

std::string EncodeExample(const Features& features) {
  std::string encoded_features;
  for (const auto& [name, feature] : features) {
    std::string entry;
    AppendBytesField(1, name, &entry);
    AppendBytesField(2, EncodeFeature(feature), &entry);
    AppendBytesField(1, entry, &encoded_features);
  }
  std::string example;
  AppendBytesField(1, encoded_features, &example);
  return example;
}

StatusOr<Features> DecodeExample(std::string_view serialized) {
  Features features;
  WireReader reader(serialized);
  while (!reader.done()) {
    AF_ASSIGN_OR_RETURN(FieldKey key, reader.Key());
    if (key.field != 1) {
      AF_RETURN_IF_ERROR(reader.Skip(key.wire_type));
      continue;
    }
    AF_RETURN_IF_ERROR(reader.ExpectWireType(key, kLengthDelimited));
    AF_ASSIGN_OR_RETURN(std::string_view encoded, reader.LengthDelimited());
    // A message field that appears twice is merged: the maps join.
    AF_RETURN_IF_ERROR(DecodeFeatures(encoded, &features).WithContext("Example.features"));
  }
  return features;
}

StatusOr<Feature> FeatureFromTensor(const Tensor& tensor) {
  if (!tensor.IsInitialized() || tensor.IsOnDevice()) {
    return InvalidArgument("cannot make a feature of " + tensor.DebugString() +
                           ": it needs a host tensor with values");
  }
  const int64_t n = tensor.NumElements();
  if (IsFloating(tensor.dtype())) {
    std::vector<float> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(tensor.ElementAsDouble(i));
    return Feature::Floats(std::move(values));
  }
  std::vector<int64_t> values(static_cast<size_t>(n));
  switch (tensor.dtype()) {
    case DType::kInt32:
      for (int64_t i = 0; i < n; ++i) values[i] = tensor.data<int32_t>()[i];
      break;
    case DType::kInt64:
      for (int64_t i = 0; i < n; ++i) values[i] = tensor.data<int64_t>()[i];
      break;
    case DType::kBool:
      for (int64_t i = 0; i < n; ++i) values[i] = tensor.data<bool>()[i] ? 1 : 0;
      break;
    default: return InvalidArgument("cannot make a feature of " + tensor.DebugString());
  }
  return Feature::Int64s(std::move(values));
}

StatusOr<Features> FeaturesFromTensors(const std::map<std::string, Tensor>& tensors) {
  Features features;
  for (const auto& [name, tensor] : tensors) {
    StatusOr<Feature> feature = FeatureFromTensor(tensor);
    if (!feature.ok()) return feature.status().WithContext("feature '" + name + "'");
    features.emplace(name, std::move(*feature));
  }
  return features;
}

std::string EncodeImageExample(int64_t height, int64_t width, int64_t depth, int64_t label,
                               std::string_view image_raw) {
  Features features;
  features.emplace("height", Feature::Int64s({height}));
  features.emplace("width", Feature::Int64s({width}));
  features.emplace("depth", Feature::Int64s({depth}));
  features.emplace("label", Feature::Int64s({label}));
  features.emplace("image_raw", Feature::Bytes({std::string(image_raw)}));
  return EncodeExample(features);
}

}  // namespace actorflow
