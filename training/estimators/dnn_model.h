// The DNN classifier's model graph, built in one place so that every driver that
// trains or evaluates the model builds the same nodes with the same names and the
// same seeded initializers: DNNClassifier (one process, the optimizer in the graph)
// and the data-parallel workers of training/distributed/data_parallel.h (the variables on
// parameter servers, gradients computed locally).
//
// The model: features [batch, F] -> input layer (feature_columns.h) -> one dense
// layer per hidden unit count, activation(x W + b) -> logits [batch, C] = x W + b.
// Nodes (under the scope's name scope):
//   "features"      Placeholder float32 [?, F]
//   "labels"        Placeholder int32 [?]
//   "probabilities" float32 [?, C], the softmax of the logits
//   "class_ids"     int64 [?], the argmax of the logits
//   "example_loss"  float32 [?], sparse softmax cross-entropy per example
//   "loss"          float32 [], the mean of example_loss: what training minimizes
//                   (for a model whose training differs from its inference, the
//                   convnets of model_parallel.h, the mean of "train_example_loss",
//                   computed from the training path's logits; probabilities,
//                   class_ids and example_loss read the inference path)
//   "dnn/hiddenlayer_<i>/kernel", ".../bias", "dnn/logits/kernel", ".../bias": the
//   trainable Variables. A kernel starts from a truncated normal with Glorot's
//   stddev sqrt(2 / (fan_in + fan_out)) seeded by DNNLayerSeed(seed, layer); a bias
//   starts at 0.
//
// spec.model and spec.split other than "mlp" and "none" build the networks of
// training/estimators/model_parallel.h instead of the dense layers (their node names are
// documented there), split over the `devices` given to BuildDNNModel: "features",
// "labels" and the input layer on the first device, the heads (probabilities,
// class_ids, the losses) beside the logits.
//
// Thread safety: as Scope (one building thread per graph).
#ifndef ACTORFLOW_TRAINING_ESTIMATORS_DNN_MODEL_H_
#define ACTORFLOW_TRAINING_ESTIMATORS_DNN_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "graph/status.h"
#include "training/estimators/model_spec.h"

namespace actorflow {

// Names of the nodes BuildDNNModel adds (see the top of this file).
inline constexpr char kDNNFeatures[] = "features";
inline constexpr char kDNNLabels[] = "labels";
inline constexpr char kDNNProbabilities[] = "probabilities";
inline constexpr char kDNNClassIds[] = "class_ids";
inline constexpr char kDNNExampleLoss[] = "example_loss";
inline constexpr char kDNNLoss[] = "loss";

struct DNNModel {
  Output features;      // float32 [?, F]
  Output labels;        // int32 [?]
  Output inputs;        // float32 [?, F], the input layer's output: what the network reads
  Output logits;        // float32 [?, C]
  Output probabilities; // float32 [?, C]
  Output class_ids;     // int64 [?]
  Output example_loss;  // float32 [?]
  Output loss;          // float32 [], training's (see "loss" above)
  // The trainable Variables, input side first, each layer's kernel then its bias.
  std::vector<Output> variables;
  // The distinct devices the model's parts were put on, in order of first use
  // (one "" when nothing was placed).
  std::vector<std::string> devices;
};

// A well-mixed 63-bit seed for layer `layer` (0-based; the logits layer is the last)
// of a model seeded with `seed`.
int64_t DNNLayerSeed(uint64_t seed, int layer);

// Adds the model of `spec` to the scope's graph, its kernels seeded from `seed`, its
// parts on `devices` (model_parallel.h's ModelPlacement::devices; empty: spec.parts
// unplaced parts, the structure a checkpoint of the split model needs).
// `available_devices`, when not empty, are the devices that exist. `replica`: the
// data-parallel replica the graph trains as (ModelParallelParams::replica). Errors:
// ValidateModelSpec's, CheckModelPlacement's, InputLayer's and builder errors naming
// the node.
StatusOr<DNNModel> BuildDNNModel(const Scope& scope, const DNNModelSpec& spec, uint64_t seed,
                                 const std::vector<std::string>& devices = {},
                                 const std::vector<std::string>& available_devices = {},
                                 int replica = 0);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_ESTIMATORS_DNN_MODEL_H_
