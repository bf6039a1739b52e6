#include "training/dnn_model.h"

#include <cmath>
#include <string>

#include "graph/ops.h"
#include "training/feature_columns.h"
#include "training/variables.h"

namespace actorflow {
namespace {

Output Activate(const Scope& scope, const std::string& activation, const Output& x) {
  if (activation == "tanh") return Tanh(scope, x);
  if (activation == "sigmoid") return Sigmoid(scope, x);
  return Relu(scope, x);
}

// A dense layer under `scope`: x [?, fan_in] -> x W + b [?, units], W ("kernel")
// from a truncated normal with Glorot's stddev, b ("bias") from zeros. Appends W and
// b to *variables.
StatusOr<Output> Dense(const Scope& scope, const Output& x, int64_t fan_in, int64_t units,
                       int64_t seed, std::vector<Output>* variables) {
  const double stddev = std::sqrt(2.0 / static_cast<double>(fan_in + units));
  Output initial = TruncatedNormal(scope, Shape{fan_in, units}, DType::kFloat32, seed, 0.0, stddev);
  AF_ASSIGN_OR_RETURN(Output w, CreateVariable(scope, "kernel", initial));
  AF_ASSIGN_OR_RETURN(Output b,
                      CreateVariable(scope, "bias", Tensor(DType::kFloat32, Shape{units})));
  variables->push_back(w);
  variables->push_back(b);
  Output y = BiasAdd(scope, MatMul(scope, x, w), b);
  if (!scope.ok()) return scope.status();
  return y;
}

}  // namespace

int64_t DNNLayerSeed(uint64_t seed, int layer) {
  // splitmix64 of the model's seed and the layer index.
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(layer + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<int64_t>(z >> 1);
}

StatusOr<DNNModel> BuildDNNModel(const Scope& root, const DNNModelSpec& spec, uint64_t seed) {
  AF_RETURN_IF_ERROR(ValidateModelSpec(spec));
  DNNModel model;
  const int64_t num_features = static_cast<int64_t>(spec.feature_columns.size());
  model.features =
      Placeholder(root.WithOpName(kDNNFeatures), DType::kFloat32, Shape{-1, num_features});
  model.labels = Placeholder(root.WithOpName(kDNNLabels), DType::kInt32, Shape{-1});
  if (!root.ok()) return root.status();
  AF_ASSIGN_OR_RETURN(Output x, InputLayer(root, spec.feature_columns, model.features));

  Scope dnn = root.NewSubScope("dnn");
  int64_t fan_in = num_features;
  for (size_t i = 0; i < spec.hidden_units.size(); ++i) {
    Scope layer = dnn.NewSubScope("hiddenlayer_" + std::to_string(i));
    const int64_t units = spec.hidden_units[i];
    AF_ASSIGN_OR_RETURN(Output z, Dense(layer, x, fan_in, units,
                                        DNNLayerSeed(seed, static_cast<int>(i)), &model.variables));
    x = Activate(layer, spec.activation, z);
    fan_in = units;
  }
  AF_ASSIGN_OR_RETURN(
      model.logits,
      Dense(dnn.NewSubScope("logits"), x, fan_in, spec.n_classes,
            DNNLayerSeed(seed, static_cast<int>(spec.hidden_units.size())), &model.variables));
  model.probabilities = Softmax(root.WithOpName(kDNNProbabilities), model.logits);
  model.class_ids = ArgMax(root.WithOpName(kDNNClassIds), model.logits, 1);
  model.example_loss =
      SparseSoftmaxCrossEntropyWithLogits(root.WithOpName(kDNNExampleLoss), model.logits,
                                          model.labels)
          .loss;
  model.loss = Mean(root.WithOpName(kDNNLoss), model.example_loss);
  if (!root.ok()) return root.status();
  return model;
}

}  // namespace actorflow
