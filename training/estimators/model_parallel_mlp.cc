// The mlp of model_parallel.h: the DNN's dense layers, whole (none, layer) or with
// their units cut across devices (vertical).

#include <cmath>

#include "graph/ops.h"
#include "training/estimators/model_parallel.h"

namespace actorflow {
namespace {

using model_parallel_internal::MakeWeight;
using model_parallel_internal::NoteDevice;
using model_parallel_internal::OnDevice;
using model_parallel_internal::SpreadDevice;

// One dense layer cut into parts: part p has units/parts units (the first units %
// parts parts one more) on devices[p], computing from the whole input `inputs[p]`
// (the input as assembled on devices[p]). Kernels start with the whole layer's
// Glorot stddev, so a cut layer starts like an uncut one would.
StatusOr<std::vector<Output>> VerticalLayer(const Scope& layer, const std::vector<Output>& inputs,
                                            const std::vector<std::string>& devices,
                                            int64_t fan_in, int64_t units, Activation activation,
                                            int64_t seed, SplitModel* model) {
  const int64_t parts = static_cast<int64_t>(inputs.size());
  const double stddev = std::sqrt(2.0 / static_cast<double>(fan_in + units));
  std::vector<Output> outputs;
  for (int64_t p = 0; p < parts; ++p) {
    const int64_t part_units = units / parts + (p < units % parts ? 1 : 0);
    Scope part = OnDevice(layer, devices[static_cast<size_t>(p)])
                     .NewSubScope("part_" + std::to_string(p));
    AF_ASSIGN_OR_RETURN(Output w, MakeWeight(part, "kernel", Shape{fan_in, part_units}, stddev,
                                             ModelLayerSeed(static_cast<uint64_t>(seed),
                                                            static_cast<int>(p)),
                                             &model->variables));
    AF_ASSIGN_OR_RETURN(Output b, MakeWeight(part, "bias", Shape{part_units}, 0.0, 0,
                                             &model->variables));
    outputs.push_back(Activate(part, activation, BiasAdd(part, MatMul(part, inputs[p], w), b)));
    NoteDevice(model, devices[static_cast<size_t>(p)]);
  }
  if (!layer.ok()) return layer.status();
  return outputs;
}

StatusOr<SplitModel> BuildVerticalMlp(const Scope& dnn, const Output& x, int64_t num_features,
                                      const ModelParallelParams& params,
                                      const std::vector<std::string>& devices) {
  SplitModel model;
  // Every layer is cut into as many parts as there are devices, but never into more
  // parts than its units.
  auto parts_of = [&devices](int64_t units) {
    return static_cast<int64_t>(std::min<size_t>(devices.size(), static_cast<size_t>(units)));
  };
  // The previous activation as each device sees it; at first x itself everywhere.
  std::vector<Output> whole(devices.size(), x);
  int64_t fan_in = num_features;
  const size_t hidden = params.hidden_units.size();
  for (size_t i = 0; i <= hidden; ++i) {
    const bool logits = i == hidden;
    const int64_t units = logits ? params.n_classes : params.hidden_units[i];
    const int64_t parts = parts_of(units);
    Scope layer = dnn.NewSubScope(logits ? "logits" : "hiddenlayer_" + std::to_string(i));
    std::vector<Output> inputs(whole.begin(), whole.begin() + parts);
    std::vector<std::string> part_devices(devices.begin(), devices.begin() + parts);
    AF_ASSIGN_OR_RETURN(
        std::vector<Output> outputs,
        VerticalLayer(layer, inputs, part_devices, fan_in, units,
                      logits ? Activation::kNone : params.activation,
                      ModelLayerSeed(params.seed, static_cast<int>(i)), &model));
    fan_in = units;
    if (logits) {
      model.head_device = devices[0];
      model.logits = parts == 1 ? outputs[0]
                                : ConcatV2(OnDevice(layer, devices[0]).WithOpName("logits"),
                                           {outputs.begin(), outputs.end()}, 1);
      break;
    }
    // Each device that computes a part of the next layer assembles the whole
    // activation itself: every part travels once to every other device.
    const int64_t next_parts =
        parts_of(i + 1 == hidden ? params.n_classes : params.hidden_units[i + 1]);
    for (int64_t d = 0; d < next_parts; ++d) {
      const std::string& device = devices[static_cast<size_t>(d)];
      whole[static_cast<size_t>(d)] =
          parts == 1 ? outputs[0]
                     : ConcatV2(OnDevice(layer, device).WithOpName("concat_" + std::to_string(d)),
                                {outputs.begin(), outputs.end()}, 1);
    }
  }
  if (!dnn.ok()) return dnn.status();
  return model;
}

}  // namespace

StatusOr<SplitModel> BuildMlp(const Scope& scope, const Output& x,
                              const ModelParallelParams& params, const ModelPlacement& placement) {
  AF_ASSIGN_OR_RETURN(const int64_t num_features,
                      model_parallel_internal::FeatureCount(x, "mlp"));
  if (params.hidden_units.empty()) {
    return InvalidArgument("mlp: no hidden units given; it needs at least one hidden layer");
  }
  Scope dnn = scope.NewSubScope("dnn");
  const std::vector<std::string> devices =
      placement.devices.empty() ? std::vector<std::string>{""} : placement.devices;
  if (placement.split == ModelSplit::kVertical) {
    return BuildVerticalMlp(dnn, x, num_features, params, devices);
  }
  // none and layer: the DNN's own layers (dnn_model.h), names and seeds included.
  SplitModel model;
  const int layers = static_cast<int>(params.hidden_units.size()) + 1;
  auto device_of = [&](int layer) {
    return placement.split == ModelSplit::kNone ? devices[0] : SpreadDevice(devices, layer, layers);
  };
  Output h = x;
  for (int i = 0; i + 1 < layers; ++i) {
    const std::string device = device_of(i);
    NoteDevice(&model, device);
    AF_ASSIGN_OR_RETURN(h, Dense(OnDevice(dnn, device).NewSubScope("hiddenlayer_" +
                                                                   std::to_string(i)),
                                 h, params.hidden_units[static_cast<size_t>(i)],
                                 params.activation, ModelLayerSeed(params.seed, i),
                                 &model.variables));
  }
  model.head_device = device_of(layers - 1);
  NoteDevice(&model, model.head_device);
  AF_ASSIGN_OR_RETURN(model.logits,
                      Dense(OnDevice(dnn, model.head_device).NewSubScope("logits"), h,
                            params.n_classes, Activation::kNone,
                            ModelLayerSeed(params.seed, layers - 1), &model.variables));
  return model;
}

}  // namespace actorflow
