#include "training/estimators/layers.h"

#include <cmath>

#include "graph/ops.h"
#include "training/optimizers/variables.h"

namespace actorflow {

StatusOr<Activation> ParseActivation(const std::string& name) {
  if (name == "relu") return Activation::kRelu;
  if (name == "tanh") return Activation::kTanh;
  if (name == "sigmoid") return Activation::kSigmoid;
  return InvalidArgument("unknown activation '" + name + "': valid are relu, tanh, sigmoid");
}

Output Activate(const Scope& scope, Activation activation, const Output& x) {
  switch (activation) {
    case Activation::kRelu:
      return Relu(scope, x);
    case Activation::kTanh:
      return Tanh(scope, x);
    case Activation::kSigmoid:
      return Sigmoid(scope, x);
    case Activation::kNone:
      break;
  }
  return x;
}

StatusOr<Output> Dense(const Scope& scope, const Output& x, int64_t units, Activation activation,
                       int64_t seed, std::vector<Output>* variables) {
  if (!x.valid()) return InvalidArgument("Dense: the input is not a valid Output");
  const Shape& shape = x.shape();
  if (x.dtype() != DType::kFloat32 || shape.rank() != 2 || shape.dim(1) < 0) {
    return InvalidArgument("Dense: input '" + x.name() +
                           "' must be float32 [?, F] with F known, got " +
                           std::string(DTypeName(x.dtype())) + shape.ToString());
  }
  if (units < 1) {
    return InvalidArgument("Dense: units must be at least 1, got " + std::to_string(units));
  }
  const int64_t fan_in = shape.dim(1);
  const double stddev = std::sqrt(2.0 / static_cast<double>(fan_in + units));
  Output initial = TruncatedNormal(scope, Shape{fan_in, units}, DType::kFloat32, seed, 0.0, stddev);
  AF_ASSIGN_OR_RETURN(Output w, CreateVariable(scope, "kernel", initial));
  AF_ASSIGN_OR_RETURN(Output b,
                      CreateVariable(scope, "bias", Tensor(DType::kFloat32, Shape{units})));
  if (variables != nullptr) {
    variables->push_back(w);
    variables->push_back(b);
  }
  Output y = Activate(scope, activation, BiasAdd(scope, MatMul(scope, x, w), b));
  if (!scope.ok()) return scope.status();
  return y;
}

}  // namespace actorflow
