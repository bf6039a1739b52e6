// Model parallelism: one classifier network cut into parts that run on different
// devices, each part built under scope.WithDevice(...) so that the placer puts it
// there and the partitioner joins the parts with Send/Recv. Three networks, each
// from features x [batch, F] (already through the input layer) to logits
// [batch, n_classes]:
//
//   mlp  the DNN of dnn_model.h: dense layers "dnn/hiddenlayer_<i>", "dnn/logits".
//   cnn  for square images (F = S*S pixels, row-major; the 8x8 digits: F = 64):
//        x -> NHWC [-1, S, S, 1], then TWO towers "cnn/tower_<t>", each with its own
//        filters: conv 3x3 SAME (8 channels) -> relu -> maxpool 2x2 -> conv 3x3 SAME
//        (16 channels) -> relu -> maxpool 2x2 -> flatten; the dense head "cnn/head"
//        takes the concat of the flattened towers through hidden_units (relu) to
//        the logits.
//   rnn  a stacked tanh RNN over kRnnTimeSteps steps of F / kRnnTimeSteps features
//        (the digits read row by row): layer l at step t is
//        h_t = tanh(x_t W + h_{t-1} U + b) (h_{-1} = 0), statically unrolled, nodes
//        "rnn/layer<l>/t<t>/..." (0-based), one layer per hidden_units entry; the
//        logits "rnn/logits" are dense on the last layer's last state.
//   convnet     the TensorFlow Layers tutorial's CNN (Fashion-MNIST's own
//        benchmark/convnet.py), for square images: x -> NHWC [-1, S, S, 1] -> conv
//        5x5x32 SAME relu "convnet/conv1" -> maxpool 2 SAME -> conv 5x5x64 SAME relu
//        "convnet/conv2" -> maxpool 2 SAME -> flatten -> dense relu per hidden_units
//        entry (the tutorial: 1024) "convnet/dense<i>" -> dropout 0.4 -> dense
//        "convnet/logits". Training and inference differ (dropout): SplitModel's
//        train_logits are the training path, logits the inference path, over the
//        same variables (layer_classes.h).
//   convnet-bn  the same with batch normalization "convnet/batch_norm<s>" after each
//        convolution, before its relu; its moving averages are updated by the ops
//        of kUpdateOpsCollection (layer_classes.h), which a train op must run.
//
// Splits (ModelSplit), over the `devices` of ModelPlacement in order:
//   none      everything on devices[0].
//   layer     consecutive layers on consecutive devices, spread evenly when there
//             are more layers than devices (mlp: hidden layers and the logits;
//             cnn: conv stage 1, conv stage 2, the head; rnn: the layers, the
//             logits with the last one).
//   vertical  mlp only: every dense layer's units cut into one part per device
//             ("dnn/hiddenlayer_<i>/part_<p>"), each part computing from the FULL
//             previous activation, which each device assembles itself (a concat of
//             the parts); the logits' parts are joined on devices[0].
//   towers    cnn only: tower t on devices[t], joined at the head on devices[0].
// (convnet and convnet-bn: layer puts conv 1, conv 2 and the head on consecutive
// devices.)
// A split other than none needs at least 2 devices (towers: one per tower); more
// than a split can use are left idle. An empty device name leaves a part unplaced
// (the session's default device), and a name may repeat: predict rebuilds a split
// model's structure on one device that way.
//
// Thread safety: as Scope (one building thread per graph); the parsers are pure.
#ifndef ACTORFLOW_TRAINING_ESTIMATORS_MODEL_PARALLEL_H_
#define ACTORFLOW_TRAINING_ESTIMATORS_MODEL_PARALLEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "graph/status.h"
#include "training/estimators/layers.h"

namespace actorflow {

enum class ModelKind { kMlp, kCnn, kRnn, kConvnet, kConvnetBn };
enum class ModelSplit { kNone, kLayer, kVertical, kTowers };

inline constexpr int kCnnTowers = 2;
inline constexpr int64_t kCnnChannels[2] = {8, 16};  // per tower, conv stage 1 and 2
inline constexpr int64_t kRnnTimeSteps = 8;
inline constexpr int64_t kConvnetFilters[2] = {32, 64};  // conv 1 and conv 2
inline constexpr double kConvnetDropoutRate = 0.4;

// "mlp", "cnn", "rnn", "convnet", "convnet-bn"; InvalidArgument quoting `name` and
// listing them.
StatusOr<ModelKind> ParseModelKind(const std::string& name);
const char* ModelKindName(ModelKind kind);
// "none", "layer", "vertical", "towers"; InvalidArgument quoting `name` and listing them.
StatusOr<ModelSplit> ParseModelSplit(const std::string& name);
const char* ModelSplitName(ModelSplit split);
// The splits a model has, none first: mlp none/layer/vertical, cnn none/layer/towers,
// rnn, convnet and convnet-bn none/layer.
std::vector<ModelSplit> SupportedSplits(ModelKind kind);

// A well-mixed 63-bit seed for layer `layer` of a model seeded with `seed` (the DNN's
// DNNLayerSeed).
int64_t ModelLayerSeed(uint64_t seed, int layer);

struct ModelParallelParams {
  // mlp: the hidden layers; cnn: the head's hidden layers (may be empty); rnn: the
  // units of each recurrent layer (at least one).
  std::vector<int64_t> hidden_units;
  int64_t n_classes = 2;
  // Of the mlp's hidden layers (the cnn's are relu, the rnn's tanh).
  Activation activation = Activation::kRelu;
  uint64_t seed = 0;
  // The data-parallel replica this graph trains as (0: the only one, or the chief).
  // Weights start from `seed` alone, alike on every replica; stochastic training ops
  // (dropout) draw a stream of their own per replica, so that replicas averaging
  // their gradients do not all drop the same units of the same rows.
  int replica = 0;
};

struct ModelPlacement {
  ModelSplit split = ModelSplit::kNone;
  // Where the parts go, in order (see the top of this file). Empty: one unplaced part.
  std::vector<std::string> devices;
  // When not empty, the devices that exist (full names, e.g. a session's
  // DeviceNames()): each entry of `devices` must name one of them.
  std::vector<std::string> available_devices;
};

struct SplitModel {
  Output logits;  // float32 [?, n_classes]: inference (what evaluation and serving read)
  // The logits of training (dropout on, batch statistics): what the loss that trains
  // the model is computed from. The same node as `logits` for the mlp, cnn and rnn.
  Output train_logits;
  // Trainable variables, input side first.
  std::vector<Output> variables;
  // The distinct devices the parts were put on, in order of first use.
  std::vector<std::string> devices_used;
  // The device of the logits: where the loss belongs.
  std::string head_device;
};

// Errors of a placement, before anything is built: InvalidArgument for a split the
// model does not have ("the rnn has splits none, layer"), or for a split that needs
// more devices than `devices` lists, or a device that is not among
// available_devices; both name the devices available and say how to get more.
Status CheckModelPlacement(ModelKind kind, const ModelPlacement& placement);

// Builds `kind` on x (float32 [?, F], F known) under `scope` as the top of this file
// says. Errors: CheckModelPlacement's; InvalidArgument for parameters the network
// cannot take (a cnn on F that is not a square, an rnn on F not divisible by
// kRnnTimeSteps or without layers, a layer of < 1 unit, n_classes < 2); builder
// errors naming the node.
StatusOr<SplitModel> BuildSplitModel(const Scope& scope, ModelKind kind, const Output& x,
                                     const ModelParallelParams& params,
                                     const ModelPlacement& placement);

// The builders behind BuildSplitModel (placement already checked).
StatusOr<SplitModel> BuildMlp(const Scope& scope, const Output& x,
                              const ModelParallelParams& params, const ModelPlacement& placement);
StatusOr<SplitModel> BuildCnn(const Scope& scope, const Output& x,
                              const ModelParallelParams& params, const ModelPlacement& placement);
StatusOr<SplitModel> BuildRnn(const Scope& scope, const Output& x,
                              const ModelParallelParams& params, const ModelPlacement& placement);
StatusOr<SplitModel> BuildConvnet(const Scope& scope, const Output& x,
                                  const ModelParallelParams& params,
                                  const ModelPlacement& placement, bool batch_norm);

namespace model_parallel_internal {

// Device of part `index` of `count` consecutive parts spread evenly over the first
// min(count, devices.size()) devices ("" when devices is empty).
std::string SpreadDevice(const std::vector<std::string>& devices, int index, int count);
// `scope` on `device` ("" keeps the scope's own device).
Scope OnDevice(const Scope& scope, const std::string& device);
// Records `device` in model->devices_used unless it is there.
void NoteDevice(SplitModel* model, const std::string& device);
// A trainable variable "<scope>/<name>" of `shape` starting from a truncated normal
// with `stddev` (seeded), or zeros when stddev is 0.
StatusOr<Output> MakeWeight(const Scope& scope, const std::string& name, const Shape& shape,
                            double stddev, int64_t seed, std::vector<Output>* variables);
// InvalidArgument unless x is float32 [?, F] with F known; returns F.
StatusOr<int64_t> FeatureCount(const Output& x, const char* model);

}  // namespace model_parallel_internal

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_ESTIMATORS_MODEL_PARALLEL_H_
