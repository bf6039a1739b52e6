#include "training/dnn_model.h"

#include <cmath>
#include <string>

#include "graph/ops.h"
#include "training/feature_columns.h"
#include "training/layers.h"
#include "training/variables.h"

namespace actorflow {

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

  AF_ASSIGN_OR_RETURN(Activation activation, ParseActivation(spec.activation));
  Scope dnn = root.NewSubScope("dnn");
  for (size_t i = 0; i < spec.hidden_units.size(); ++i) {
    AF_ASSIGN_OR_RETURN(x, Dense(dnn.NewSubScope("hiddenlayer_" + std::to_string(i)), x,
                                 spec.hidden_units[i], activation,
                                 DNNLayerSeed(seed, static_cast<int>(i)), &model.variables));
  }
  AF_ASSIGN_OR_RETURN(
      model.logits,
      Dense(dnn.NewSubScope("logits"), x, spec.n_classes, Activation::kNone,
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
