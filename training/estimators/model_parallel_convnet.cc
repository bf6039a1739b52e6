// The convnets of model_parallel.h: the TensorFlow Layers tutorial's CNN (the
// network of Fashion-MNIST's own benchmark/convnet.py) and the same with batch
// normalization, built with the layer classes so that one graph holds the training
// path (dropout on, batch statistics) and the inference path over the same
// variables.

#include <cmath>

#include "graph/ops.h"
#include "training/estimators/layer_classes.h"
#include "training/estimators/model_parallel.h"

namespace actorflow {
namespace {

using model_parallel_internal::NoteDevice;
using model_parallel_internal::OnDevice;
using model_parallel_internal::SpreadDevice;

// The side S of an image of `pixels` = S*S pixels; 0 when it is not a square.
int64_t SquareSide(int64_t pixels) {
  const int64_t side = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(pixels))));
  return side * side == pixels ? side : 0;
}

// The network's layers, made once and applied on both paths.
struct ConvnetLayers {
  std::vector<layers::Conv2D> convs;
  std::vector<layers::BatchNormalization> norms;  // empty without batch norm
  std::vector<layers::Dense> hidden;
  layers::Dense logits;
  layers::Dropout dropout;
};

// One pass through the network: `training` picks dropout and batch statistics.
// `device_of(stage)` places stage 0 (conv 1), 1 (conv 2) and 2 (the head).
template <typename DeviceOf>
StatusOr<Output> Apply(const Scope& scope, ConvnetLayers* net, const Output& image,
                       bool training, const DeviceOf& device_of) {
  Output h = image;
  for (size_t s = 0; s < net->convs.size(); ++s) {
    const Scope stage = OnDevice(scope, device_of(static_cast<int>(s)));
    AF_ASSIGN_OR_RETURN(h, net->convs[s](stage, h, training));
    if (!net->norms.empty()) {
      AF_ASSIGN_OR_RETURN(h, net->norms[s](stage, h, training));
    }
    h = Relu(stage, h);
    AF_ASSIGN_OR_RETURN(h, layers::MaxPooling2D(stage, h, 2, 2, "SAME"));
  }
  const Scope head = OnDevice(scope, device_of(2));
  h = Flatten(head, h);
  for (layers::Dense& dense : net->hidden) {
    AF_ASSIGN_OR_RETURN(h, dense(head, h, training));
  }
  AF_ASSIGN_OR_RETURN(h, net->dropout(head, h, training));
  return net->logits(head, h, training);
}

}  // namespace

StatusOr<SplitModel> BuildConvnet(const Scope& scope, const Output& x,
                                  const ModelParallelParams& params,
                                  const ModelPlacement& placement, bool batch_norm) {
  const char* name = batch_norm ? "convnet-bn" : "convnet";
  AF_ASSIGN_OR_RETURN(const int64_t pixels, model_parallel_internal::FeatureCount(x, name));
  const int64_t side = SquareSide(pixels);
  if (side == 0) {
    return InvalidArgument(std::string(name) + ": " + std::to_string(pixels) +
                           " features are not a square image; it needs S*S pixels per row "
                           "(Fashion-MNIST has 784)");
  }
  const std::vector<std::string> devices =
      placement.devices.empty() ? std::vector<std::string>{""} : placement.devices;
  auto device_of = [&](int stage) {
    return placement.split == ModelSplit::kLayer ? SpreadDevice(devices, stage, 3) : devices[0];
  };

  ConvnetLayers net{{},
                    {},
                    {},
                    layers::Dense("logits", {params.n_classes, Activation::kNone,
                                             ModelLayerSeed(params.seed, 2 + static_cast<int>(
                                                                             params.hidden_units
                                                                                 .size()))}),
                    layers::Dropout(kConvnetDropoutRate,
                                    ModelLayerSeed(params.seed, 100 + 1000 * params.replica))};
  for (int s = 0; s < 2; ++s) {
    layers::Conv2DOptions conv;
    conv.filters = kConvnetFilters[s];
    conv.kernel_size = 5;
    conv.seed = ModelLayerSeed(params.seed, s);
    net.convs.emplace_back("conv" + std::to_string(s + 1), conv);
    if (batch_norm) net.norms.emplace_back("batch_norm" + std::to_string(s + 1));
  }
  for (size_t i = 0; i < params.hidden_units.size(); ++i) {
    net.hidden.emplace_back("dense" + std::to_string(i + 1),
                            layers::DenseOptions{params.hidden_units[i], Activation::kRelu,
                                                 ModelLayerSeed(params.seed, 2 + static_cast<int>(i))});
  }

  const Scope model_scope = scope.NewSubScope("convnet");
  const Scope first = OnDevice(model_scope, device_of(0));
  Output image = Reshape(first.WithOpName("image"), x,
                         Const(first.WithOpName("image_shape"),
                               Tensor::FromVector<int64_t>({-1, side, side, 1})));
  if (!model_scope.ok()) return model_scope.status();
  SplitModel model;
  AF_ASSIGN_OR_RETURN(model.train_logits,
                      Apply(model_scope, &net, image, /*training=*/true, device_of));
  AF_ASSIGN_OR_RETURN(model.logits,
                      Apply(model_scope, &net, image, /*training=*/false, device_of));
  // Trainable variables only, input side first (moving averages are not trained).
  auto add_trainable = [&](const std::vector<Output>& vars, size_t count) {
    model.variables.insert(model.variables.end(), vars.begin(), vars.begin() + count);
  };
  for (size_t s = 0; s < net.convs.size(); ++s) {
    add_trainable(net.convs[s].variables(), net.convs[s].variables().size());
    if (batch_norm) add_trainable(net.norms[s].variables(), 2);  // gamma, beta
  }
  for (const layers::Dense& dense : net.hidden) {
    add_trainable(dense.variables(), dense.variables().size());
  }
  add_trainable(net.logits.variables(), net.logits.variables().size());
  for (int stage = 0; stage < 3; ++stage) NoteDevice(&model, device_of(stage));
  model.head_device = device_of(2);
  return model;
}

}  // namespace actorflow
