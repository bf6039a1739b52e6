#include "training/estimators/dnn_model.h"

#include <cmath>
#include <string>

#include "graph/ops.h"
#include "training/estimators/feature_columns.h"
#include "training/estimators/layers.h"
#include "training/estimators/model_parallel.h"
#include "training/optimizers/variables.h"

namespace actorflow {

int64_t DNNLayerSeed(uint64_t seed, int layer) { return ModelLayerSeed(seed, layer); }

StatusOr<DNNModel> BuildDNNModel(const Scope& root, const DNNModelSpec& spec, uint64_t seed,
                                 const std::vector<std::string>& devices,
                                 const std::vector<std::string>& available_devices,
                                 int replica) {
  AF_RETURN_IF_ERROR(ValidateModelSpec(spec));
  AF_ASSIGN_OR_RETURN(ModelKind kind, ParseModelKind(spec.model));
  ModelPlacement placement;
  AF_ASSIGN_OR_RETURN(placement.split, ParseModelSplit(spec.split));
  placement.devices = devices;
  if (placement.devices.empty() && spec.parts > 1) {
    placement.devices.assign(static_cast<size_t>(spec.parts), "");
  }
  placement.available_devices = available_devices;
  AF_RETURN_IF_ERROR(CheckModelPlacement(kind, placement));
  const std::string first = placement.devices.empty() ? "" : placement.devices[0];
  const Scope input = first.empty() ? root : root.WithDevice(first);

  DNNModel model;
  const int64_t num_features = static_cast<int64_t>(spec.feature_columns.size());
  model.features =
      Placeholder(input.WithOpName(kDNNFeatures), DType::kFloat32, Shape{-1, num_features});
  // Fed beside the features; [batch] int32 is little to send to the head.
  model.labels = Placeholder(input.WithOpName(kDNNLabels), DType::kInt32, Shape{-1});
  if (!root.ok()) return root.status();
  AF_ASSIGN_OR_RETURN(Output x, InputLayer(input, spec.feature_columns, model.features));
  model.inputs = x;

  ModelParallelParams params;
  params.hidden_units = spec.hidden_units;
  params.n_classes = spec.n_classes;
  AF_ASSIGN_OR_RETURN(params.activation, ParseActivation(spec.activation));
  params.seed = seed;
  params.replica = replica;
  AF_ASSIGN_OR_RETURN(SplitModel split, BuildSplitModel(root, kind, x, params, placement));
  model.logits = split.logits;
  model.variables = std::move(split.variables);
  model.devices = std::move(split.devices_used);

  const Scope head = split.head_device.empty() ? root : root.WithDevice(split.head_device);
  model.probabilities = Softmax(head.WithOpName(kDNNProbabilities), model.logits);
  model.class_ids = ArgMax(head.WithOpName(kDNNClassIds), model.logits, 1);
  model.example_loss =
      SparseSoftmaxCrossEntropyWithLogits(head.WithOpName(kDNNExampleLoss), model.logits,
                                          model.labels)
          .loss;
  // A model whose training differs from inference (dropout, batch statistics) is
  // trained on its training path's loss; the others' two losses are one node.
  Output train_example_loss =
      split.train_logits.node == split.logits.node
          ? model.example_loss
          : SparseSoftmaxCrossEntropyWithLogits(head.WithOpName("train_example_loss"),
                                                split.train_logits, model.labels)
                .loss;
  model.loss = Mean(head.WithOpName(kDNNLoss), train_example_loss);
  if (!root.ok()) return root.status();
  return model;
}

}  // namespace actorflow
