// tf.layers' layer classes: a layer owns its variables and can be applied more than
// once. Its first call creates the variables under "<name>/" ("conv1/kernel",
// "conv1/bias"); every later call reuses them and builds its ops under
// "<name>_<k>/", so one graph can hold a model's training path (dropout on, batch
// statistics) and its inference path (dropout off, moving averages) over the same
// variables:
//
//   layers::Conv2D conv("conv1", {.filters = 32, .kernel_size = 5, .seed = 1});
//   AF_ASSIGN_OR_RETURN(Output train_h, conv(scope, images, /*training=*/true));
//   AF_ASSIGN_OR_RETURN(Output eval_h, conv(scope, images, /*training=*/false));
//
// Images are NHWC: x [N, H, W, C]. Variables are created with CreateVariable
// (training/optimizers/variables.h), so GlobalVariablesInitializer, the optimizers,
// checkpoints and ReplicaDeviceSetter see them; the variables take the scope's
// device. A layer whose variables depend on its input's shape checks that later calls
// give the same inner dims (InvalidArgument naming the layer otherwise).
//
// Layers that change state when training (BatchNormalization's moving averages) add
// their update ops to the graph's kUpdateOpsCollection (TF1's UPDATE_OPS), which a
// train op must depend on: UpdateOps(graph) below.
//
// Thread safety: as Scope (one building thread per graph); a layer object is used by
// that thread only.
#ifndef ACTORFLOW_TRAINING_ESTIMATORS_LAYER_CLASSES_H_
#define ACTORFLOW_TRAINING_ESTIMATORS_LAYER_CLASSES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "graph/status.h"
#include "training/estimators/layers.h"

namespace actorflow {

// The collection of update ops (graph/graph.h collections) that training layers add.
inline constexpr char kUpdateOpsCollection[] = "update_ops";

// The nodes of kUpdateOpsCollection, as Outputs a train op can take as control
// dependencies (empty when the graph has none).
std::vector<Output> UpdateOps(const Graph& graph);

namespace layers {

// What every layer with variables shares: its name, where its variables are, and how
// many times it was applied.
class Layer {
 public:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  const std::string& name() const { return name_; }
  // Its variables, in creation order (empty before the first call).
  const std::vector<Output>& variables() const { return variables_; }

 protected:
  // The scope of this call's ops: "<name>" the first time, "<name>_<k>" after.
  Scope CallScope(const Scope& scope);
  bool built() const { return !variables_.empty(); }
  std::string name_;
  std::vector<Output> variables_;
  int calls_ = 0;
};

struct Conv2DOptions {
  int64_t filters = 1;
  int64_t kernel_size = 3;         // square kernels
  int64_t strides = 1;
  std::string padding = "SAME";    // "SAME" or "VALID"
  Activation activation = Activation::kNone;
  bool use_bias = true;
  int64_t seed = 1;                // the kernel's initializer
};

// x [N, H, W, C] -> activation(conv(x, kernel) + bias) [N, H', W', filters]; kernel
// [k, k, C, filters] from a truncated normal with He's stddev sqrt(2 / (k*k*C)) (what
// ReLU networks start well with), bias zeros.
class Conv2D : public Layer {
 public:
  Conv2D(std::string name, Conv2DOptions options) : Layer(std::move(name)), options_(options) {}
  StatusOr<Output> operator()(const Scope& scope, const Output& x, bool training = false);

 private:
  Conv2DOptions options_;
  int64_t in_channels_ = 0;
};

struct DenseOptions {
  int64_t units = 1;
  Activation activation = Activation::kNone;
  int64_t seed = 1;
};

// x [N, F] -> activation(x kernel + bias) [N, units], initialized as layers.h's Dense.
class Dense : public Layer {
 public:
  Dense(std::string name, DenseOptions options) : Layer(std::move(name)), options_(options) {}
  StatusOr<Output> operator()(const Scope& scope, const Output& x, bool training = false);

 private:
  DenseOptions options_;
  int64_t in_features_ = 0;
};

struct BatchNormalizationOptions {
  double momentum = 0.99;  // of the moving averages, tf.layers' default
  double epsilon = 0.001;
};

// Batch normalization over the last (channel) axis of x [N, H, W, C] or [N, C], as
// tf.layers.batch_normalization (FusedBatchNorm, graph/ops.h). Variables: "gamma"
// (ones) and "beta" (zeros), trainable; "moving_mean" (zeros) and "moving_variance"
// (ones), not trainable. Training: normalizes with the batch's statistics and adds
// the two moving-average updates (momentum) to kUpdateOpsCollection; inference:
// normalizes with the moving averages.
class BatchNormalization : public Layer {
 public:
  explicit BatchNormalization(std::string name, BatchNormalizationOptions options = {})
      : Layer(std::move(name)), options_(options) {}
  StatusOr<Output> operator()(const Scope& scope, const Output& x, bool training);

 private:
  BatchNormalizationOptions options_;
  int64_t channels_ = 0;
};

// Dropout with tf.layers' `rate` (the fraction dropped): training keeps each element
// with probability 1 - rate and scales it by 1 / (1 - rate), a new mask per step,
// seeded; inference passes x through. No variables.
class Dropout {
 public:
  Dropout(double rate, int64_t seed) : rate_(rate), seed_(seed) {}
  StatusOr<Output> operator()(const Scope& scope, const Output& x, bool training);

 private:
  double rate_;
  int64_t seed_;
};

// Max pooling with a square window: x [N, H, W, C] -> [N, H', W', C]. (Flatten and
// GlobalAvgPool are plain ops: graph/ops.h.)
StatusOr<Output> MaxPooling2D(const Scope& scope, const Output& x, int64_t pool_size,
                              int64_t strides, const std::string& padding = "VALID");

}  // namespace layers
}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_ESTIMATORS_LAYER_CLASSES_H_
