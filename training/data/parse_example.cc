#include "training/data/parse_example.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include "training/data/decode_raw.h"

namespace actorflow {
namespace {

Feature::Kind KindOf(FeatureType type) {
  switch (type) {
    case FeatureType::kFloat32: return Feature::Kind::kFloat;
    case FeatureType::kInt64: return Feature::Kind::kInt64;
    case FeatureType::kBytes: return Feature::Kind::kBytes;
  }
  return Feature::Kind::kBytes;
}

std::string Named(const std::string& name) { return "ParseExample: feature '" + name + "'"; }

// OK when `feature` can fill `entry` (its kind, its count); `what` says whose values
// they are in the message ("holds", "has a default that holds").
Status CheckValues(const FixedLenFeature& entry, const Feature& feature, int64_t count,
                   const std::string& what) {
  if (feature.kind != KindOf(entry.type)) {
    return InvalidArgument(Named(entry.name) + " " + what + " a " + FeatureKindName(feature.kind) +
                           ", but the spec wants " + FeatureTypeName(entry.type) + " (a " +
                           FeatureKindName(KindOf(entry.type)) + ")");
  }
  if (static_cast<uint64_t>(feature.size()) != static_cast<uint64_t>(count)) {
    return InvalidArgument(Named(entry.name) + " " + what + " " + std::to_string(feature.size()) +
                           " values, but its shape " + entry.shape.ToString() + " needs " +
                           std::to_string(count));
  }
  return Status::OK();
}

// The tensor of `feature`, already checked against `entry` (kind and count).
StatusOr<Tensor> ToTensor(const FixedLenFeature& entry, const Feature& feature) {
  switch (entry.type) {
    case FeatureType::kFloat32: {
      Tensor t(DType::kFloat32, entry.shape);
      std::copy(feature.float_list.begin(), feature.float_list.end(), t.data<float>());
      return t;
    }
    case FeatureType::kInt64: {
      Tensor t(DType::kInt64, entry.shape);
      std::copy(feature.int64_list.begin(), feature.int64_list.end(), t.data<int64_t>());
      return t;
    }
    case FeatureType::kBytes: break;
  }
  const std::vector<std::string>& values = feature.bytes_list;
  const size_t length = values.empty() ? 0 : values[0].size();
  for (size_t i = 1; i < values.size(); ++i) {
    if (values[i].size() != length) {
      return InvalidArgument(Named(entry.name) + ": value " + std::to_string(i) + " has " +
                             std::to_string(values[i].size()) + " bytes but value 0 has " +
                             std::to_string(length) +
                             ": the values of one bytes tensor need one length");
    }
  }
  std::vector<int64_t> dims = entry.shape.dims();
  dims.push_back(static_cast<int64_t>(length));
  Tensor t(kByteDType, Shape(dims));
  int32_t* out = t.data<int32_t>();
  for (const std::string& value : values) {
    for (char byte : value) *out++ = static_cast<unsigned char>(byte);
  }
  return t;
}

// The number of values each entry needs; InvalidArgument naming a bad entry.
StatusOr<std::vector<int64_t>> CheckSpec(const FeatureSpec& spec) {
  std::vector<int64_t> counts;
  std::set<std::string> names;
  for (size_t i = 0; i < spec.size(); ++i) {
    const FixedLenFeature& entry = spec[i];
    const std::string which =
        "ParseExample: spec entry " + std::to_string(i) + " ('" + entry.name + "')";
    if (entry.name.empty()) return InvalidArgument(which + " has no name");
    if (!names.insert(entry.name).second) return InvalidArgument(which + " repeats the name");
    StatusOr<int64_t> count = entry.shape.CheckedNumElements();
    if (!count.ok()) return count.status().WithContext(which + ": shape");
    if (entry.default_value) {
      AF_RETURN_IF_ERROR(
          CheckValues(entry, *entry.default_value, *count, "has a default that holds"));
    }
    counts.push_back(*count);
  }
  return counts;
}

}  // namespace

const char* FeatureTypeName(FeatureType type) {
  switch (type) {
    case FeatureType::kFloat32: return "float32";
    case FeatureType::kInt64: return "int64";
    case FeatureType::kBytes: return "bytes";
  }
  return "unknown";
}

StatusOr<std::vector<Tensor>> ParseExample(const Features& features, const FeatureSpec& spec) {
  AF_ASSIGN_OR_RETURN(std::vector<int64_t> counts, CheckSpec(spec));
  std::vector<Tensor> parsed;
  parsed.reserve(spec.size());
  for (size_t i = 0; i < spec.size(); ++i) {
    const FixedLenFeature& entry = spec[i];
    const auto found = features.find(entry.name);
    const Feature* feature = nullptr;
    if (found != features.end()) {
      feature = &found->second;
      AF_RETURN_IF_ERROR(CheckValues(entry, *feature, counts[i], "holds"));
    } else if (entry.default_value) {
      feature = &*entry.default_value;
    } else {
      return InvalidArgument(Named(entry.name) +
                             " is missing and has no default (the example has " +
                             std::to_string(features.size()) + " features)");
    }
    AF_ASSIGN_OR_RETURN(Tensor tensor, ToTensor(entry, *feature));
    parsed.push_back(std::move(tensor));
  }
  return parsed;
}

StatusOr<std::vector<Tensor>> ParseExample(std::string_view serialized, const FeatureSpec& spec) {
  StatusOr<Features> features = DecodeExample(serialized);
  if (!features.ok()) return features.status().WithContext("ParseExample");
  return ParseExample(*features, spec);
}

StatusOr<std::vector<Tensor>> ParseImageExample(std::string_view serialized,
                                                const ImageExampleOptions& options) {
  const Shape image_shape{options.height, options.width, options.depth};
  StatusOr<int64_t> pixels = image_shape.CheckedNumElements();
  if (!pixels.ok() || options.height < 1 || options.width < 1 || options.depth < 1) {
    return InvalidArgument("ParseImageExample: the image size " + image_shape.ToString() +
                           " needs height, width and depth >= 1");
  }
  AF_ASSIGN_OR_RETURN(Features features, DecodeExample(serialized));
  // The sizes are checked through the spec; image_raw is read directly, so the pixels
  // go from bytes to float32 without an int32 tensor in between.
  const FeatureSpec spec = {
      {"label", FeatureType::kInt64, Shape{}, std::nullopt},
      {"height", FeatureType::kInt64, Shape{}, Feature::Int64s({options.height})},
      {"width", FeatureType::kInt64, Shape{}, Feature::Int64s({options.width})},
      {"depth", FeatureType::kInt64, Shape{}, Feature::Int64s({options.depth})},
  };
  AF_ASSIGN_OR_RETURN(std::vector<Tensor> parsed, ParseExample(features, spec));
  for (size_t i = 1; i < spec.size(); ++i) {
    const int64_t value = parsed[i].data<int64_t>()[0];
    const int64_t wanted = spec[i].default_value->int64_list[0];
    if (value != wanted) {
      return InvalidArgument(Named(spec[i].name) + " is " + std::to_string(value) +
                             ", but the images should be " + image_shape.ToString() +
                             " (height, width, depth)");
    }
  }
  const int64_t label = parsed[0].data<int64_t>()[0];
  if (label < std::numeric_limits<int32_t>::min() || label > std::numeric_limits<int32_t>::max()) {
    return InvalidArgument(Named("label") + " is " + std::to_string(label) +
                           ", which does not fit in int32");
  }
  const FixedLenFeature raw_entry{"image_raw", FeatureType::kBytes, Shape{}, std::nullopt};
  const auto raw = features.find(raw_entry.name);
  if (raw == features.end()) {
    return InvalidArgument(Named(raw_entry.name) + " is missing and has no default");
  }
  AF_RETURN_IF_ERROR(CheckValues(raw_entry, raw->second, 1, "holds"));
  const std::string& bytes = raw->second.bytes_list[0];
  if (static_cast<uint64_t>(bytes.size()) != static_cast<uint64_t>(*pixels)) {
    return InvalidArgument(Named(raw_entry.name) + " holds " + std::to_string(bytes.size()) +
                           " bytes, but an image " + image_shape.ToString() + " has " +
                           std::to_string(*pixels) + " pixels");
  }
  Tensor image(DType::kFloat32, image_shape);
  float* out = image.data<float>();
  for (size_t i = 0; i < bytes.size(); ++i) {
    out[i] = static_cast<float>(static_cast<unsigned char>(bytes[i])) / 255.0f;
  }
  return std::vector<Tensor>{std::move(image),
                             Tensor::Scalar<int32_t>(static_cast<int32_t>(label))};
}

}  // namespace actorflow
