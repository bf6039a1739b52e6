// The cnn of model_parallel.h: two convolutional towers over a square image and a
// dense head, placed whole (none), by stage (layer) or by tower (towers).

#include <cmath>

#include "graph/ops.h"
#include "training/estimators/model_parallel.h"

namespace actorflow {
namespace {

using model_parallel_internal::MakeWeight;
using model_parallel_internal::NoteDevice;
using model_parallel_internal::OnDevice;
using model_parallel_internal::SpreadDevice;

// The side S of an image of `pixels` = S*S pixels; 0 when it is not a square.
int64_t ImageSide(int64_t pixels) {
  int64_t side = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(pixels))));
  return side * side == pixels ? side : 0;
}

// SAME max pooling 2x2 with stride 2: ceil(n / 2).
int64_t Pooled(int64_t n) { return (n + 1) / 2; }

// conv 3x3 SAME (stride 1) with its own filters -> bias -> relu -> maxpool 2x2:
// x [N, H, W, C] -> [N, ceil(H/2), ceil(W/2), channels]. Filters start from a
// truncated normal with He's stddev sqrt(2 / (9 C)).
StatusOr<Output> ConvStage(const Scope& stage, const Output& x, int64_t in_channels,
                           int64_t channels, int64_t seed, std::vector<Output>* variables) {
  const double stddev = std::sqrt(2.0 / static_cast<double>(9 * in_channels));
  AF_ASSIGN_OR_RETURN(Output filter, MakeWeight(stage, "filter", Shape{3, 3, in_channels, channels},
                                                stddev, seed, variables));
  AF_ASSIGN_OR_RETURN(Output bias, MakeWeight(stage, "bias", Shape{channels}, 0.0, 0, variables));
  Output conv = Conv2D(stage.WithOpName("conv"), x, filter, {1, 1, 1, 1}, "SAME");
  Output relu = Relu(stage.WithOpName("relu"), BiasAdd(stage, conv, bias));
  Output pooled = MaxPool(stage.WithOpName("pool"), relu, {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME");
  if (!stage.ok()) return stage.status();
  return pooled;
}

}  // namespace

StatusOr<SplitModel> BuildCnn(const Scope& scope, const Output& x,
                              const ModelParallelParams& params, const ModelPlacement& placement) {
  AF_ASSIGN_OR_RETURN(const int64_t pixels, model_parallel_internal::FeatureCount(x, "cnn"));
  const int64_t side = ImageSide(pixels);
  if (side == 0) {
    return InvalidArgument("cnn: " + std::to_string(pixels) +
                           " features are not a square image; it needs S*S pixels per row "
                           "(the 8x8 digits have 64)");
  }
  const std::vector<std::string> devices =
      placement.devices.empty() ? std::vector<std::string>{""} : placement.devices;
  // Stages: conv 1, conv 2, head. towers: tower t on devices[t], the head on
  // devices[0]; layer: stage s on the s-th of up to 3 consecutive devices.
  auto device_of = [&](int tower, int stage) -> std::string {
    switch (placement.split) {
      case ModelSplit::kTowers:
        return stage == 2 ? devices[0] : devices[static_cast<size_t>(tower)];
      case ModelSplit::kLayer:
        return SpreadDevice(devices, stage, 3);
      default:
        return devices[0];
    }
  };

  SplitModel model;
  Scope cnn = scope.NewSubScope("cnn");
  std::vector<Output> flat_towers;
  int64_t out_side = side;
  for (int t = 0; t < kCnnTowers; ++t) {
    Scope tower = cnn.NewSubScope("tower_" + std::to_string(t));
    // Each tower reads the rows itself: [N, S*S] -> NHWC [N, S, S, 1].
    Scope first = OnDevice(tower, device_of(t, 0));
    Output image = Reshape(first.WithOpName("image"), x,
                           Const(first.WithOpName("image_shape"), Tensor::FromVector<int64_t>(
                                                                      {-1, side, side, 1})));
    Output h = image;
    int64_t in_channels = 1;
    out_side = side;
    for (int s = 0; s < 2; ++s) {
      const std::string device = device_of(t, s);
      NoteDevice(&model, device);
      AF_ASSIGN_OR_RETURN(h, ConvStage(OnDevice(tower, device).NewSubScope("conv" +
                                                                          std::to_string(s + 1)),
                                       h, in_channels, kCnnChannels[s],
                                       ModelLayerSeed(params.seed, t * 2 + s), &model.variables));
      in_channels = kCnnChannels[s];
      out_side = Pooled(out_side);
    }
    Scope last = OnDevice(tower, device_of(t, 1));
    flat_towers.push_back(Reshape(
        last.WithOpName("flatten"), h,
        Const(last.WithOpName("flat_shape"),
              Tensor::FromVector<int64_t>({-1, out_side * out_side * in_channels}))));
  }

  model.head_device = device_of(0, 2);
  NoteDevice(&model, model.head_device);
  Scope head = OnDevice(cnn, model.head_device).NewSubScope("head");
  Output h = ConcatV2(head.WithOpName("towers"), {flat_towers.begin(), flat_towers.end()}, 1);
  if (!head.ok()) return head.status();
  const int first_dense = kCnnTowers * 2;
  for (size_t i = 0; i < params.hidden_units.size(); ++i) {
    AF_ASSIGN_OR_RETURN(h, Dense(head.NewSubScope("hidden_" + std::to_string(i)), h,
                                 params.hidden_units[i], Activation::kRelu,
                                 ModelLayerSeed(params.seed, first_dense + static_cast<int>(i)),
                                 &model.variables));
  }
  AF_ASSIGN_OR_RETURN(
      model.logits,
      Dense(head.NewSubScope("logits"), h, params.n_classes, Activation::kNone,
            ModelLayerSeed(params.seed,
                           first_dense + static_cast<int>(params.hidden_units.size())),
            &model.variables));
  return model;
}

}  // namespace actorflow
