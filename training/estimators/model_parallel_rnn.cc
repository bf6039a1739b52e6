// The rnn of model_parallel.h: stacked tanh cells unrolled over kRnnTimeSteps steps,
// whole (none) or a layer per device (layer).

#include <cmath>

#include "graph/ops.h"
#include "training/estimators/model_parallel.h"

namespace actorflow {
namespace {

using model_parallel_internal::MakeWeight;
using model_parallel_internal::NoteDevice;
using model_parallel_internal::OnDevice;
using model_parallel_internal::SpreadDevice;

}  // namespace

StatusOr<SplitModel> BuildRnn(const Scope& scope, const Output& x,
                              const ModelParallelParams& params, const ModelPlacement& placement) {
  AF_ASSIGN_OR_RETURN(const int64_t features, model_parallel_internal::FeatureCount(x, "rnn"));
  if (features % kRnnTimeSteps != 0) {
    return InvalidArgument("rnn: " + std::to_string(features) +
                           " features do not split into " + std::to_string(kRnnTimeSteps) +
                           " time steps of equal width");
  }
  if (params.hidden_units.empty()) {
    return InvalidArgument("rnn: no layers given; it needs at least one (units per layer)");
  }
  const int64_t step_width = features / kRnnTimeSteps;
  const std::vector<std::string> devices =
      placement.devices.empty() ? std::vector<std::string>{""} : placement.devices;
  const int layers = static_cast<int>(params.hidden_units.size());
  auto device_of = [&](int layer) {
    return placement.split == ModelSplit::kLayer ? SpreadDevice(devices, layer, layers)
                                                 : devices[0];
  };

  SplitModel model;
  Scope rnn = scope.NewSubScope("rnn");
  // x [N, F] -> kRnnTimeSteps inputs [N, F / kRnnTimeSteps], beside layer 0.
  std::vector<Output> inputs;
  Scope input = OnDevice(rnn, device_of(0)).NewSubScope("input");
  for (int64_t t = 0; t < kRnnTimeSteps; ++t) {
    inputs.push_back(Slice(input.WithOpName("t" + std::to_string(t)), x, {0, t * step_width},
                           {-1, step_width}));
  }
  int64_t in_width = step_width;
  for (int l = 0; l < layers; ++l) {
    const int64_t units = params.hidden_units[static_cast<size_t>(l)];
    const std::string device = device_of(l);
    NoteDevice(&model, device);
    Scope layer = OnDevice(rnn, device).NewSubScope("layer" + std::to_string(l));
    // W: Glorot; U: stddev 1/sqrt(units), which keeps the state's scale over the
    // steps near 1 at the start.
    AF_ASSIGN_OR_RETURN(
        Output w, MakeWeight(layer, "kernel", Shape{in_width, units},
                             std::sqrt(2.0 / static_cast<double>(in_width + units)),
                             ModelLayerSeed(params.seed, 2 * l), &model.variables));
    AF_ASSIGN_OR_RETURN(
        Output u, MakeWeight(layer, "recurrent_kernel", Shape{units, units},
                             1.0 / std::sqrt(static_cast<double>(units)),
                             ModelLayerSeed(params.seed, 2 * l + 1), &model.variables));
    AF_ASSIGN_OR_RETURN(Output b, MakeWeight(layer, "bias", Shape{units}, 0.0, 0,
                                             &model.variables));
    std::vector<Output> states;
    for (int64_t t = 0; t < kRnnTimeSteps; ++t) {
      Scope step = layer.NewSubScope("t" + std::to_string(t));
      Output pre = MatMul(step.WithOpName("input_matmul"), inputs[static_cast<size_t>(t)], w);
      if (t > 0) {
        pre = Add(step.WithOpName("add_state"), pre,
                  MatMul(step.WithOpName("state_matmul"), states.back(), u));
      }
      states.push_back(Tanh(step.WithOpName("h"), BiasAdd(step.WithOpName("bias_add"), pre, b)));
    }
    if (!layer.ok()) return layer.status();
    inputs = std::move(states);
    in_width = units;
  }
  model.head_device = device_of(layers - 1);
  AF_ASSIGN_OR_RETURN(model.logits,
                      Dense(OnDevice(rnn, model.head_device).NewSubScope("logits"),
                            inputs.back(), params.n_classes, Activation::kNone,
                            ModelLayerSeed(params.seed, 2 * layers), &model.variables));
  return model;
}

}  // namespace actorflow
