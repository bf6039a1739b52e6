// tf.train.Example, the record TensorFlow's input pipelines read from TFRecord files,
// encoded and decoded by hand (training/data/proto_wire.h; no protobuf library).
// training/data/parse_example.h turns one into tensors.
//
// Wire contract (tensorflow/core/example/{example,feature}.proto):
//   Example  { Features features = 1; }
//   Features { map<string, Feature> feature = 1; }   // entry { key = 1; value = 2; }
//   Feature  { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
//                           Int64List int64_list = 3; } }
//   BytesList { repeated bytes value = 1; }
//   FloatList { repeated float value = 1 [packed = true]; }
//   Int64List { repeated int64 value = 1 [packed = true]; }
// Decoding follows protobuf's rules: repeated numbers may be packed or not (or both, in
// pieces); fields may come in any order; unknown fields of wire types 0, 1, 2 and 5 are
// skipped; a message field that appears twice is merged (so two lists of one kind
// concatenate, and a later list of another kind replaces the earlier); a map key that
// appears twice keeps its last value. A Feature with no list set counts as absent, as
// TensorFlow's parser treats it. Anything else malformed is InvalidArgument, never a
// read past the input.
// The encoder writes packed lists and the map in key order (deterministic bytes).
//
// Thread safety: pure functions.
#ifndef ACTORFLOW_TRAINING_DATA_EXAMPLE_H_
#define ACTORFLOW_TRAINING_DATA_EXAMPLE_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"

namespace actorflow {

// One tf.train.Feature: a list of values of one kind.
struct Feature {
  enum class Kind { kBytes, kFloat, kInt64 };

  static Feature Bytes(std::vector<std::string> values);
  static Feature Floats(std::vector<float> values);
  static Feature Int64s(std::vector<int64_t> values);

  // The number of values (of the list `kind` names).
  size_t size() const;

  Kind kind = Kind::kInt64;
  // Only the list `kind` names is used.
  std::vector<std::string> bytes_list;
  std::vector<float> float_list;
  std::vector<int64_t> int64_list;
};

// "bytes_list", "float_list", "int64_list".
const char* FeatureKindName(Feature::Kind kind);

// An Example's features by name. A std::map, so encoding is deterministic.
using Features = std::map<std::string, Feature>;

// The serialized tf.train.Example holding `features`.
std::string EncodeExample(const Features& features);

// The features of a serialized tf.train.Example. InvalidArgument for bytes that are no
// Example; the message says where ("Example.features: feature['x']: float_list: ...").
StatusOr<Features> DecodeExample(std::string_view serialized);

// A tensor's values as a feature: float32/float64 -> float_list, int32/int64/bool ->
// int64_list, row-major. A byte string is Feature::Bytes (a kByteDType tensor would
// become an int64_list). InvalidArgument for an uninitialized or device tensor.
StatusOr<Feature> FeatureFromTensor(const Tensor& tensor);
// FeatureFromTensor of each; the error names the feature.
StatusOr<Features> FeaturesFromTensors(const std::map<std::string, Tensor>& tensors);

// --- Images in TensorFlow's MNIST layout (convert_to_records.py) ------------------------

// The Example of one image: int64 features height, width, depth and label, and bytes
// feature image_raw (the pixels, row-major [height, width, depth], one byte each).
std::string EncodeImageExample(int64_t height, int64_t width, int64_t depth, int64_t label,
                               std::string_view image_raw);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DATA_EXAMPLE_H_
