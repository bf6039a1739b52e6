#include "training/estimators/model_parallel.h"

#include <algorithm>

#include "graph/ops.h"
#include "placement/device_name.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

std::string JoinDevices(const std::vector<std::string>& devices) {
  if (devices.empty()) return "(none)";
  std::string s;
  for (const std::string& d : devices) s += (s.empty() ? "" : ", ") + (d.empty() ? "\"\"" : d);
  return s;
}

// How many devices `split` needs at least.
int DevicesNeeded(ModelSplit split) {
  switch (split) {
    case ModelSplit::kNone:
      return 1;
    case ModelSplit::kTowers:
      return kCnnTowers;
    case ModelSplit::kLayer:
    case ModelSplit::kVertical:
      return 2;
  }
  return 1;
}

bool DeviceExists(const std::string& wanted, const std::vector<std::string>& available) {
  if (wanted.empty()) return true;  // unplaced: the session's default device
  StatusOr<DeviceSpec> spec = ParseDeviceSpec(wanted);
  if (!spec.ok()) return false;
  for (const std::string& name : available) {
    StatusOr<DeviceSpec> device = ParseDeviceSpec(name);
    if (device.ok() && Matches(*spec, *device)) return true;
  }
  return false;
}

}  // namespace

StatusOr<ModelKind> ParseModelKind(const std::string& name) {
  if (name == "mlp") return ModelKind::kMlp;
  if (name == "cnn") return ModelKind::kCnn;
  if (name == "rnn") return ModelKind::kRnn;
  if (name == "convnet") return ModelKind::kConvnet;
  if (name == "convnet-bn") return ModelKind::kConvnetBn;
  return InvalidArgument("unknown model '" + name +
                         "': valid are mlp, cnn, rnn, convnet, convnet-bn");
}

const char* ModelKindName(ModelKind kind) {
  switch (kind) {
    case ModelKind::kMlp:
      return "mlp";
    case ModelKind::kCnn:
      return "cnn";
    case ModelKind::kRnn:
      return "rnn";
    case ModelKind::kConvnet:
      return "convnet";
    case ModelKind::kConvnetBn:
      return "convnet-bn";
  }
  return "?";
}

StatusOr<ModelSplit> ParseModelSplit(const std::string& name) {
  if (name == "none") return ModelSplit::kNone;
  if (name == "layer") return ModelSplit::kLayer;
  if (name == "vertical") return ModelSplit::kVertical;
  if (name == "towers") return ModelSplit::kTowers;
  return InvalidArgument("unknown split '" + name + "': valid are none, layer, vertical, towers");
}

const char* ModelSplitName(ModelSplit split) {
  switch (split) {
    case ModelSplit::kNone:
      return "none";
    case ModelSplit::kLayer:
      return "layer";
    case ModelSplit::kVertical:
      return "vertical";
    case ModelSplit::kTowers:
      return "towers";
  }
  return "?";
}

std::vector<ModelSplit> SupportedSplits(ModelKind kind) {
  switch (kind) {
    case ModelKind::kMlp:
      return {ModelSplit::kNone, ModelSplit::kLayer, ModelSplit::kVertical};
    case ModelKind::kCnn:
      return {ModelSplit::kNone, ModelSplit::kLayer, ModelSplit::kTowers};
    case ModelKind::kRnn:
    case ModelKind::kConvnet:
    case ModelKind::kConvnetBn:
      return {ModelSplit::kNone, ModelSplit::kLayer};
  }
  return {ModelSplit::kNone};
}

int64_t ModelLayerSeed(uint64_t seed, int layer) {
  // splitmix64 of the model's seed and the layer index.
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(layer + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<int64_t>(z >> 1);
}

Status CheckModelPlacement(ModelKind kind, const ModelPlacement& placement) {
  const std::vector<ModelSplit> splits = SupportedSplits(kind);
  if (std::find(splits.begin(), splits.end(), placement.split) == splits.end()) {
    std::string names;
    for (ModelSplit s : splits) names += (names.empty() ? "" : ", ") + std::string(ModelSplitName(s));
    return InvalidArgument(std::string("split '") + ModelSplitName(placement.split) + "': the " +
                           ModelKindName(kind) + " has splits " + names);
  }
  // No devices: one unplaced part.
  const std::vector<std::string> devices =
      placement.devices.empty() ? std::vector<std::string>{""} : placement.devices;
  const std::vector<std::string>& available =
      placement.available_devices.empty() ? devices : placement.available_devices;
  for (const std::string& device : devices) {
    if (!placement.available_devices.empty() && !DeviceExists(device, available)) {
      return InvalidArgument("device '" + device + "' does not exist; the devices available are " +
                             JoinDevices(available) + " (more with --devices cpu=N)");
    }
  }
  const int needed = DevicesNeeded(placement.split);
  if (static_cast<int>(devices.size()) < needed) {
    return InvalidArgument(std::string("split '") + ModelSplitName(placement.split) + "' of the " +
                           ModelKindName(kind) + " needs " + std::to_string(needed) +
                           " devices but only " + std::to_string(devices.size()) +
                           " are available: " + JoinDevices(available) + " (use --devices cpu=" +
                           std::to_string(needed) + " or more)");
  }
  return Status::OK();
}

StatusOr<SplitModel> BuildSplitModel(const Scope& scope, ModelKind kind, const Output& x,
                                     const ModelParallelParams& params,
                                     const ModelPlacement& placement) {
  AF_RETURN_IF_ERROR(CheckModelPlacement(kind, placement));
  if (params.n_classes < 2) {
    return InvalidArgument("n_classes " + std::to_string(params.n_classes) +
                           ": a classifier needs at least 2 classes");
  }
  for (size_t i = 0; i < params.hidden_units.size(); ++i) {
    if (params.hidden_units[i] < 1) {
      return InvalidArgument(std::string(ModelKindName(kind)) + ": layer " +
                             std::to_string(i + 1) + " has " +
                             std::to_string(params.hidden_units[i]) + " units; each needs >= 1");
    }
  }
  StatusOr<SplitModel> model = Internal("unknown model kind");
  switch (kind) {
    case ModelKind::kMlp:
      model = BuildMlp(scope, x, params, placement);
      break;
    case ModelKind::kCnn:
      model = BuildCnn(scope, x, params, placement);
      break;
    case ModelKind::kRnn:
      model = BuildRnn(scope, x, params, placement);
      break;
    case ModelKind::kConvnet:
    case ModelKind::kConvnetBn:
      return BuildConvnet(scope, x, params, placement, kind == ModelKind::kConvnetBn);
  }
  if (model.ok() && !model->train_logits.valid()) model->train_logits = model->logits;
  return model;
}

namespace model_parallel_internal {

std::string SpreadDevice(const std::vector<std::string>& devices, int index, int count) {
  if (devices.empty()) return "";
  const int used = std::min<int>(count, static_cast<int>(devices.size()));
  return devices[static_cast<size_t>(index * used / count)];
}

Scope OnDevice(const Scope& scope, const std::string& device) {
  return device.empty() ? scope : scope.WithDevice(device);
}

void NoteDevice(SplitModel* model, const std::string& device) {
  if (std::find(model->devices_used.begin(), model->devices_used.end(), device) ==
      model->devices_used.end()) {
    model->devices_used.push_back(device);
  }
}

StatusOr<Output> MakeWeight(const Scope& scope, const std::string& name, const Shape& shape,
                            double stddev, int64_t seed, std::vector<Output>* variables) {
  Output initial = stddev > 0.0
                       ? TruncatedNormal(scope.NewSubScope(name + "_init"), shape,
                                         DType::kFloat32, seed, 0.0, stddev)
                       : Const(scope.NewSubScope(name + "_init"), Tensor(DType::kFloat32, shape));
  AF_ASSIGN_OR_RETURN(Output w, CreateVariable(scope, name, initial));
  variables->push_back(w);
  return w;
}

StatusOr<int64_t> FeatureCount(const Output& x, const char* model) {
  if (!x.valid()) return InvalidArgument(std::string(model) + ": the input is not valid");
  const Shape& shape = x.shape();
  if (x.dtype() != DType::kFloat32 || shape.rank() != 2 || shape.dim(1) < 1) {
    return InvalidArgument(std::string(model) + ": input '" + x.name() +
                           "' must be float32 [?, F] with F known, got " +
                           std::string(DTypeName(x.dtype())) + shape.ToString());
  }
  return shape.dim(1);
}

}  // namespace model_parallel_internal
}  // namespace actorflow
