#include "training/estimators/layer_classes.h"

#include <cmath>
#include <utility>

#include "graph/ops.h"
#include "training/optimizers/variables.h"

namespace actorflow {

std::vector<Output> UpdateOps(const Graph& graph) {
  std::vector<Output> ops;
  for (const std::string& name : graph.GetCollection(kUpdateOpsCollection)) {
    if (const Node* node = graph.FindNode(name)) ops.emplace_back(node, 0);
  }
  return ops;
}

namespace layers {
namespace {

// The last dim of x when x is float32 of `rank` with it known; InvalidArgument naming
// the layer and what it expects otherwise.
StatusOr<int64_t> InnerDim(const std::string& layer, const Output& x, int rank,
                           const char* expected) {
  if (!x.valid()) return InvalidArgument(layer + ": the input is not valid");
  const Shape& shape = x.shape();
  if (x.dtype() != DType::kFloat32 || shape.unknown_rank() || shape.rank() != rank ||
      shape.dim(rank - 1) < 1) {
    return InvalidArgument(layer + ": input '" + x.name() + "' is " +
                           std::string(DTypeName(x.dtype())) + " " + shape.ToString() +
                           ", expected float32 " + expected + " with the last dim known");
  }
  return shape.dim(rank - 1);
}

// A variable of the layer, recorded in `variables`: truncated normal with `stddev`
// (seeded), or zeros when stddev is 0.
StatusOr<Output> NewLayerVariable(const Scope& scope, const std::string& name, const Shape& shape,
                                  double stddev, int64_t seed, std::vector<Output>* variables) {
  const Scope init = scope.NewSubScope(name + "_init");
  Output initial = stddev > 0.0
                       ? TruncatedNormal(init, shape, DType::kFloat32, seed, 0.0, stddev)
                       : Const(init, Tensor(DType::kFloat32, shape));
  AF_ASSIGN_OR_RETURN(Output v, CreateVariable(scope, name, initial));
  variables->push_back(v);
  return v;
}

Status CheckSameInnerDim(const std::string& layer, int64_t built_for, int64_t given) {
  if (built_for == given) return Status::OK();
  return InvalidArgument(layer + ": built for inputs with " + std::to_string(built_for) +
                         " in the last dim, now given " + std::to_string(given));
}

}  // namespace

Scope Layer::CallScope(const Scope& scope) {
  const int k = calls_++;
  return scope.NewSubScope(k == 0 ? name_ : name_ + "_" + std::to_string(k));
}

StatusOr<Output> Conv2D::operator()(const Scope& scope, const Output& x, bool /*training*/) {
  AF_ASSIGN_OR_RETURN(const int64_t channels, InnerDim(name_, x, 4, "[N, H, W, C]"));
  const Conv2DOptions& o = options_;
  if (o.filters < 1 || o.kernel_size < 1 || o.strides < 1) {
    return InvalidArgument(name_ + ": filters, kernel_size and strides must be >= 1");
  }
  const Scope call = CallScope(scope);
  if (!built()) {
    in_channels_ = channels;
    const double stddev =
        std::sqrt(2.0 / static_cast<double>(o.kernel_size * o.kernel_size * channels));
    AF_RETURN_IF_ERROR(NewLayerVariable(call, "kernel",
                                        Shape{o.kernel_size, o.kernel_size, channels, o.filters},
                                        stddev, o.seed, &variables_)
                           .status());
    if (o.use_bias) {
      AF_RETURN_IF_ERROR(
          NewLayerVariable(call, "bias", Shape{o.filters}, 0.0, 0, &variables_).status());
    }
  }
  AF_RETURN_IF_ERROR(CheckSameInnerDim(name_, in_channels_, channels));
  Output y = actorflow::Conv2D(call.WithOpName("Conv2D"), x, variables_[0],
                               {1, o.strides, o.strides, 1}, o.padding);
  if (o.use_bias) y = BiasAdd(call.WithOpName("BiasAdd"), y, variables_[1]);
  y = Activate(call, o.activation, y);
  if (!call.ok()) return call.status();
  return y;
}

StatusOr<Output> Dense::operator()(const Scope& scope, const Output& x, bool /*training*/) {
  AF_ASSIGN_OR_RETURN(const int64_t features, InnerDim(name_, x, 2, "[N, F]"));
  if (options_.units < 1) return InvalidArgument(name_ + ": units must be >= 1");
  const Scope call = CallScope(scope);
  if (!built()) {
    in_features_ = features;
    // Glorot's stddev, as layers.h's Dense.
    const double stddev = std::sqrt(2.0 / static_cast<double>(features + options_.units));
    AF_RETURN_IF_ERROR(NewLayerVariable(call, "kernel", Shape{features, options_.units}, stddev,
                                        options_.seed, &variables_)
                           .status());
    AF_RETURN_IF_ERROR(
        NewLayerVariable(call, "bias", Shape{options_.units}, 0.0, 0, &variables_).status());
  }
  AF_RETURN_IF_ERROR(CheckSameInnerDim(name_, in_features_, features));
  Output y = BiasAdd(call.WithOpName("BiasAdd"), MatMul(call.WithOpName("MatMul"), x,
                                                        variables_[0]),
                     variables_[1]);
  y = Activate(call, options_.activation, y);
  if (!call.ok()) return call.status();
  return y;
}

StatusOr<Output> BatchNormalization::operator()(const Scope& scope, const Output& x,
                                                bool training) {
  if (!x.valid()) return InvalidArgument(name_ + ": the input is not valid");
  const int rank = x.shape().unknown_rank() ? 0 : x.shape().rank();
  AF_ASSIGN_OR_RETURN(const int64_t channels,
                      InnerDim(name_, x, rank == 2 ? 2 : 4, "[N, H, W, C] or [N, C]"));
  const BatchNormalizationOptions& o = options_;
  if (!(o.momentum >= 0.0 && o.momentum <= 1.0) || !(o.epsilon >= 0.0)) {
    return InvalidArgument(name_ + ": momentum must be in [0, 1] and epsilon >= 0");
  }
  const Scope call = CallScope(scope);
  if (!built()) {
    channels_ = channels;
    const Shape c{channels};
    const Scope init = call.NewSubScope("init");
    Tensor ones(DType::kFloat32, c);
    for (int64_t i = 0; i < channels; ++i) ones.data<float>()[i] = 1.0f;
    AF_ASSIGN_OR_RETURN(Output gamma, CreateVariable(call, "gamma", Const(init, ones)));
    AF_ASSIGN_OR_RETURN(Output beta,
                        CreateVariable(call, "beta", Const(init, Tensor(DType::kFloat32, c))));
    AF_ASSIGN_OR_RETURN(Output moving_mean,
                        CreateVariable(call, "moving_mean", Const(init, Tensor(DType::kFloat32, c)),
                                       /*trainable=*/false));
    AF_ASSIGN_OR_RETURN(Output moving_variance,
                        CreateVariable(call, "moving_variance", Const(init, ones),
                                       /*trainable=*/false));
    variables_ = {gamma, beta, moving_mean, moving_variance};
  }
  AF_RETURN_IF_ERROR(CheckSameInnerDim(name_, channels_, channels));
  const Output& gamma = variables_[0];
  const Output& beta = variables_[1];
  const Output& moving_mean = variables_[2];
  const Output& moving_variance = variables_[3];
  FusedBatchNormResult bn = FusedBatchNorm(call.WithOpName("FusedBatchNorm"), x, gamma, beta,
                                           moving_mean, moving_variance, o.epsilon, training);
  if (training) {
    Output mean_update = AssignMovingAverage(call.WithOpName("update_moving_mean"), moving_mean,
                                             bn.batch_mean, o.momentum);
    Output variance_update =
        AssignMovingAverage(call.WithOpName("update_moving_variance"), moving_variance,
                            bn.batch_variance, o.momentum);
    if (!call.ok()) return call.status();
    call.graph()->AddToCollection(kUpdateOpsCollection, mean_update.node->name());
    call.graph()->AddToCollection(kUpdateOpsCollection, variance_update.node->name());
  }
  if (!call.ok()) return call.status();
  return bn.y;
}

StatusOr<Output> Dropout::operator()(const Scope& scope, const Output& x, bool training) {
  if (!x.valid()) return InvalidArgument("Dropout: the input is not valid");
  if (!(rate_ >= 0.0 && rate_ < 1.0)) {
    return InvalidArgument("Dropout: rate must be in [0, 1), got " + std::to_string(rate_));
  }
  if (!training || rate_ == 0.0) return x;
  Output y = actorflow::Dropout(scope, x, 1.0 - rate_, seed_, /*is_training=*/true).output;
  if (!scope.ok()) return scope.status();
  return y;
}

StatusOr<Output> MaxPooling2D(const Scope& scope, const Output& x, int64_t pool_size,
                              int64_t strides, const std::string& padding) {
  AF_RETURN_IF_ERROR(InnerDim("MaxPooling2D", x, 4, "[N, H, W, C]").status());
  if (pool_size < 1 || strides < 1) {
    return InvalidArgument("MaxPooling2D: pool_size and strides must be >= 1");
  }
  Output y = MaxPool(scope, x, {1, pool_size, pool_size, 1},
                     {1, strides, strides, 1}, padding);
  if (!scope.ok()) return scope.status();
  return y;
}

}  // namespace layers
}  // namespace actorflow
