// Parsing a tf.train.Example (training/data/example.h) into tensors with a spec of
// fixed-length features, as tf.io.parse_single_example with FixedLenFeature does, and
// the image records of TensorFlow's MNIST convert_to_records.py.
//
//   FeatureSpec spec = {{"pixels", FeatureType::kFloat32, Shape{784}},
//                       {"label", FeatureType::kInt64, Shape{}, Feature::Int64s({0})}};
//   AF_ASSIGN_OR_RETURN(std::vector<Tensor> parsed, ParseExample(record, spec));
//   // parsed[0] float32 [784], parsed[1] int64 []
//
// Bytes features: graph/ has no string dtype, so a bytes feature of shape S comes out
// as a kByteDType (int32) tensor of shape S + [L], one byte per element, and all its
// values must have the same length L (an image_raw [] of 784 bytes is int32 [784]).
// See training/data/decode_raw.h.
//
// Errors are InvalidArgument with a message that names the feature ("ParseExample:
// feature 'label': ...").
//
// Thread safety: pure functions.
#ifndef ACTORFLOW_TRAINING_DATA_PARSE_EXAMPLE_H_
#define ACTORFLOW_TRAINING_DATA_PARSE_EXAMPLE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/shape.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "training/data/example.h"

namespace actorflow {

// The type a spec asks of a feature, and the dtype it comes out as: float_list ->
// float32, int64_list -> int64, bytes_list -> kByteDType bytes (see the top).
enum class FeatureType { kFloat32, kInt64, kBytes };

// "float32", "int64", "bytes".
const char* FeatureTypeName(FeatureType type);

// One fixed-length feature (tf.io.FixedLenFeature).
struct FixedLenFeature {
  std::string name;
  FeatureType type = FeatureType::kFloat32;
  // Fully defined: [] for one value, [784] for 784; the example must hold exactly
  // shape.num_elements() values.
  Shape shape;
  // Used when the example lacks the feature: values of the kind `type` asks for, as
  // many as `shape` holds. Without it a missing feature is an error.
  std::optional<Feature> default_value;
};

using FeatureSpec = std::vector<FixedLenFeature>;

// One tensor per spec entry, in spec order: float32 / int64 of the entry's shape, bytes
// as described at the top. InvalidArgument naming the feature when it is missing
// without a default, holds another kind of list than `type` asks for, or holds a number
// of values (or, for bytes, values of different lengths) the shape does not allow;
// naming the entry for a bad spec (an empty or repeated name, a shape not fully
// defined, a default of the wrong kind or count); and DecodeExample's errors.
StatusOr<std::vector<Tensor>> ParseExample(std::string_view serialized, const FeatureSpec& spec);
StatusOr<std::vector<Tensor>> ParseExample(const Features& features, const FeatureSpec& spec);

// The image size every record must have.
struct ImageExampleOptions {
  int64_t height = 28;
  int64_t width = 28;
  int64_t depth = 1;
};

// (image float32 [height, width, depth], each pixel / 255 in [0, 1]; label int32 []) of
// an EncodeImageExample record. height, width and depth may be absent (readers of
// convert_to_records.py's files need only image_raw and label); when present they must
// equal `options`. InvalidArgument naming the feature otherwise, when image_raw does not
// hold height * width * depth bytes, or when label does not fit in int32; naming the
// options when a size is < 1.
StatusOr<std::vector<Tensor>> ParseImageExample(std::string_view serialized,
                                                const ImageExampleOptions& options);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DATA_PARSE_EXAMPLE_H_
