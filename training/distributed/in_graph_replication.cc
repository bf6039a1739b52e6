#include "training/distributed/in_graph_replication.h"

#include <cmath>
#include <cstring>
#include <utility>

#include "graph/gradients.h"
#include "graph/ops.h"
#include "placement/ps_strategy.h"
#include "training/estimators/dnn_model.h"
#include "training/estimators/feature_columns.h"
#include "training/estimators/layers.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

// One dense layer's variables: where they live and how they start.
struct LayerSpec {
  std::string scope;  // "dnn/hiddenlayer_<i>" or "dnn/logits"
  int64_t fan_in = 0;
  int64_t units = 0;
  int64_t seed = 0;
};

std::vector<LayerSpec> Layers(const DNNModelSpec& spec, uint64_t seed) {
  std::vector<LayerSpec> layers;
  int64_t fan_in = static_cast<int64_t>(spec.feature_columns.size());
  for (size_t i = 0; i < spec.hidden_units.size(); ++i) {
    layers.push_back({"dnn/hiddenlayer_" + std::to_string(i), fan_in, spec.hidden_units[i],
                      DNNLayerSeed(seed, static_cast<int>(i))});
    fan_in = spec.hidden_units[i];
  }
  layers.push_back({"dnn/logits", fan_in, spec.n_classes,
                    DNNLayerSeed(seed, static_cast<int>(spec.hidden_units.size()))});
  return layers;
}

// The ps device of each variable (kernel then bias per layer): greedy by bytes.
StatusOr<std::vector<std::string>> VariableDevices(const std::vector<LayerSpec>& layers,
                                                   const std::vector<std::string>& ps_devices) {
  std::vector<VariableSize> sizes;
  for (const LayerSpec& l : layers) {
    sizes.push_back({l.scope + "/kernel", l.fan_in * l.units * 4});
    sizes.push_back({l.scope + "/bias", l.units * 4});
  }
  AF_ASSIGN_OR_RETURN(PsAssignment assignment,
                      AssignVariablesToPs(sizes, static_cast<int>(ps_devices.size()),
                                          PsStrategy::kGreedyBytes));
  std::vector<std::string> devices;
  for (const VariableSize& v : sizes) {
    devices.push_back(ps_devices[static_cast<size_t>(assignment.task_of.at(v.name))]);
  }
  return devices;
}

// Tower `index`'s forward pass over the shared variables (kernel, bias per layer).
StatusOr<InGraphTower> BuildTower(const Scope& root, const DNNModelSpec& spec, int index,
                                  const std::string& device, const std::vector<Output>& variables) {
  InGraphTower tower;
  tower.device = device;
  const Scope scope = root.NewSubScope("tower_" + std::to_string(index)).WithDevice(device);
  const int64_t num_features = static_cast<int64_t>(spec.feature_columns.size());
  tower.features = Placeholder(scope.WithOpName("features"), DType::kFloat32, Shape{-1, num_features});
  tower.labels = Placeholder(scope.WithOpName("labels"), DType::kInt32, Shape{-1});
  tower.weight = Placeholder(scope.WithOpName("weight"), DType::kFloat32, Shape{});
  if (!scope.ok()) return scope.status();
  AF_ASSIGN_OR_RETURN(Output x, InputLayer(scope, spec.feature_columns, tower.features));
  AF_ASSIGN_OR_RETURN(Activation activation, ParseActivation(spec.activation));
  const size_t num_layers = variables.size() / 2;
  for (size_t i = 0; i < num_layers; ++i) {
    const bool logits = i + 1 == num_layers;
    Scope layer = scope.NewSubScope(logits ? "dnn/logits" : "dnn/hiddenlayer_" + std::to_string(i));
    x = BiasAdd(layer, MatMul(layer, x, variables[2 * i]), variables[2 * i + 1]);
    if (!logits) x = Activate(layer, activation, x);
  }
  tower.probabilities = Softmax(scope.WithOpName("probabilities"), x);
  tower.class_ids = ArgMax(scope.WithOpName("class_ids"), x, 1);
  tower.example_loss =
      SparseSoftmaxCrossEntropyWithLogits(scope.WithOpName("example_loss"), x, tower.labels).loss;
  tower.loss = Mean(scope.WithOpName("loss"), tower.example_loss);
  if (!scope.ok()) return scope.status();
  return tower;
}

}  // namespace

StatusOr<InGraphModel> BuildInGraphModel(const Scope& root, const DNNModelSpec& spec,
                                         uint64_t seed, const InGraphReplication& replication,
                                         Optimizer* optimizer) {
  AF_RETURN_IF_ERROR(ValidateModelSpec(spec));
  if (replication.ps_devices.empty()) {
    return InvalidArgument("in-graph replication: no ps device for the variables");
  }
  if (replication.tower_devices.empty()) {
    return InvalidArgument("in-graph replication: no tower device (one tower per device)");
  }
  if (optimizer == nullptr) return InvalidArgument("in-graph replication: the optimizer is null");
  if (!root.ok()) return root.status();

  InGraphModel model;
  const std::vector<LayerSpec> layers = Layers(spec, seed);
  AF_ASSIGN_OR_RETURN(model.variable_devices, VariableDevices(layers, replication.ps_devices));
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerSpec& l = layers[i];
    const Scope kernel_scope = root.NewSubScope(l.scope).WithDevice(model.variable_devices[2 * i]);
    const Scope bias_scope = root.NewSubScope(l.scope).WithDevice(model.variable_devices[2 * i + 1]);
    // DNNClassifier's initial values: Glorot's truncated normal, zeros.
    const double stddev = std::sqrt(2.0 / static_cast<double>(l.fan_in + l.units));
    Output initial =
        TruncatedNormal(kernel_scope, Shape{l.fan_in, l.units}, DType::kFloat32, l.seed, 0.0, stddev);
    AF_ASSIGN_OR_RETURN(Output kernel, CreateVariable(kernel_scope, "kernel", initial));
    AF_ASSIGN_OR_RETURN(Output bias,
                        CreateVariable(bias_scope, "bias", Tensor(DType::kFloat32, Shape{l.units})));
    model.variables.push_back(kernel);
    model.variables.push_back(bias);
  }
  AF_ASSIGN_OR_RETURN(model.global_step,
                      CreateGlobalStep(root.WithDevice(replication.ps_devices.front())));

  // Towers, each with its gradients seeded by its weight: d(weight_i * loss_i)/dv.
  const int num_towers = static_cast<int>(replication.tower_devices.size());
  std::vector<std::vector<Output>> tower_grads;
  std::vector<Output> weighted_losses;
  for (int t = 0; t < num_towers; ++t) {
    AF_ASSIGN_OR_RETURN(InGraphTower tower,
                        BuildTower(root, spec, t, replication.tower_devices[static_cast<size_t>(t)],
                                   model.variables));
    auto grads = Gradients(root, {tower.loss}, model.variables, {tower.weight});
    if (!grads.ok()) return grads.status().WithContext("tower " + std::to_string(t));
    tower_grads.push_back(std::move(grads).value());
    weighted_losses.push_back(Mul(root.NewSubScope("tower_" + std::to_string(t)).WithDevice(tower.device),
                                  tower.weight, tower.loss));
    model.towers.push_back(std::move(tower));
  }
  const float inverse_towers = 1.0f / static_cast<float>(num_towers);

  // The average of each variable's gradients, beside the variable.
  Optimizer::GradsAndVars grads_and_vars;
  for (size_t v = 0; v < model.variables.size(); ++v) {
    const Output& var = model.variables[v];
    const Scope average = root.NewSubScope("average_gradients")
                              .ColocateWith(var)
                              .WithDevice(model.variable_devices[v]);
    Output sum;
    for (int t = 0; t < num_towers; ++t) {
      const Output& g = tower_grads[static_cast<size_t>(t)][v];
      if (!g.valid()) {
        return Internal("in-graph replication: tower " + std::to_string(t) +
                        " has no gradient for variable '" + var.node->name() + "'");
      }
      sum = t == 0 ? g : Add(average, sum, g);
    }
    model.averaged_gradients.push_back(Mul(average, sum, inverse_towers));
    grads_and_vars.emplace_back(model.averaged_gradients.back(), var);
  }
  Output loss_sum = weighted_losses.front();
  for (size_t t = 1; t < weighted_losses.size(); ++t) loss_sum = Add(root, loss_sum, weighted_losses[t]);
  model.loss = Mul(root.WithOpName(kInGraphLoss), loss_sum, inverse_towers);
  if (!root.ok()) return root.status();

  AF_ASSIGN_OR_RETURN(model.train, optimizer->ApplyGradients(root.WithOpName(kInGraphTrain),
                                                             grads_and_vars, model.global_step));
  model.init = GlobalVariablesInitializer(root.WithOpName(kInGraphInit));
  if (!root.ok()) return root.status();
  return model;
}

StatusOr<FeedList> SplitBatchOverTowers(const InGraphModel& model, const Tensor& features,
                                        const Tensor& labels) {
  const int64_t towers = static_cast<int64_t>(model.towers.size());
  if (towers == 0) return InvalidArgument("SplitBatchOverTowers: the model has no tower");
  if (features.dtype() != DType::kFloat32 || features.rank() != 2) {
    return InvalidArgument("SplitBatchOverTowers: features are " + features.DebugString() +
                           ", expected float32 [batch, F]");
  }
  const int64_t rows = features.dim(0);
  const int64_t cols = features.dim(1);
  if (labels.dtype() != DType::kInt32 || labels.rank() != 1 || labels.dim(0) != rows) {
    return InvalidArgument("SplitBatchOverTowers: labels are " + labels.DebugString() +
                           ", expected int32 [" + std::to_string(rows) + "]");
  }
  if (rows == 0) return InvalidArgument("SplitBatchOverTowers: the batch has no rows");
  FeedList feeds;
  int64_t begin = 0;
  for (int64_t t = 0; t < towers; ++t) {
    int64_t count = rows / towers + (t < rows % towers ? 1 : 0);
    float weight = static_cast<float>(towers) * static_cast<float>(count) / static_cast<float>(rows);
    int64_t first = begin;
    if (count == 0) {  // fewer rows than towers: row 0 again, counted for nothing
      count = 1;
      first = 0;
      weight = 0.0f;
    }
    Tensor x(DType::kFloat32, Shape{count, cols});
    Tensor y(DType::kInt32, Shape{count});
    std::memcpy(x.data<float>(), features.data<float>() + first * cols,
                static_cast<size_t>(count * cols) * sizeof(float));
    std::memcpy(y.data<int32_t>(), labels.data<int32_t>() + first,
                static_cast<size_t>(count) * sizeof(int32_t));
    const InGraphTower& tower = model.towers[static_cast<size_t>(t)];
    feeds.emplace_back(tower.features.name(), std::move(x));
    feeds.emplace_back(tower.labels.name(), std::move(y));
    feeds.emplace_back(tower.weight.name(), Tensor::Scalar(weight));
    if (weight > 0.0f) begin += count;
  }
  return feeds;
}

}  // namespace actorflow
