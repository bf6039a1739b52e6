#include "actors/shard_optimizer.h"

#include <cmath>
#include <type_traits>

namespace actorflow {
namespace {

constexpr double kMomentum = 0.9;
constexpr double kBeta1 = 0.9;
constexpr double kBeta2 = 0.999;
constexpr double kEpsilon = 1e-8;
constexpr double kAdagradInitialAccumulator = 0.1;

Tensor Filled(const Tensor& like, double value) {
  Tensor t(like.dtype(), like.shape());
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    if (like.dtype() == DType::kFloat32) {
      t.data<float>()[i] = static_cast<float>(value);
    } else {
      t.data<double>()[i] = value;
    }
  }
  return t;
}

}  // namespace

StatusOr<std::unique_ptr<ShardOptimizer>> ShardOptimizer::Create(const std::string& rule,
                                                                 double learning_rate) {
  if (rule != "sgd" && rule != "momentum" && rule != "adam" && rule != "adagrad") {
    return InvalidArgument("unknown optimizer '" + rule +
                           "': valid optimizers are sgd, momentum, adam, adagrad");
  }
  if (!std::isfinite(learning_rate) || learning_rate <= 0) {
    return InvalidArgument("optimizer '" + rule +
                           "': the learning rate must be a positive number, got " +
                           std::to_string(learning_rate));
  }
  return std::unique_ptr<ShardOptimizer>(new ShardOptimizer(rule, learning_rate));
}

void ShardOptimizer::AddVariable(const std::string& name, const Tensor& value) {
  std::vector<Tensor>& slots = slots_[name];
  slots.clear();
  if (rule_ == "momentum") slots.push_back(Filled(value, 0.0));
  if (rule_ == "adagrad") slots.push_back(Filled(value, kAdagradInitialAccumulator));
  if (rule_ == "adam") {
    slots.push_back(Filled(value, 0.0));
    slots.push_back(Filled(value, 0.0));
  }
}

void ShardOptimizer::Apply(const std::string& name, Tensor* var, const Tensor& grad) {
  if (!var->RefCountIsOne()) *var = var->DeepCopy();
  std::vector<Tensor>* slots = &slots_[name];
  if (var->dtype() == DType::kFloat32) {
    ApplyTyped<float>(slots, var, grad);
  } else {
    ApplyTyped<double>(slots, var, grad);
  }
}

template <typename T>
void ShardOptimizer::ApplyTyped(std::vector<Tensor>* slots, Tensor* var_tensor,
                                const Tensor& grad_tensor) {
  T* var = var_tensor->data<T>();
  const T* grad = grad_tensor.data<T>();
  const int64_t n = var_tensor->NumElements();
  const T lr = static_cast<T>(learning_rate_);
  if (rule_ == "sgd") {
    for (int64_t i = 0; i < n; ++i) var[i] -= lr * grad[i];
  } else if (rule_ == "momentum") {
    const T momentum = static_cast<T>(kMomentum);
    T* accum = (*slots)[0].data<T>();
    for (int64_t i = 0; i < n; ++i) {
      accum[i] = accum[i] * momentum + grad[i];
      var[i] -= lr * accum[i];
    }
  } else if (rule_ == "adagrad") {
    T* accum = (*slots)[0].data<T>();
    for (int64_t i = 0; i < n; ++i) {
      const T g = grad[i];
      accum[i] += g * g;
      var[i] -= lr * g / std::sqrt(accum[i]);
    }
  } else {  // adam
    const T beta1_power = std::is_same<T, float>::value ? static_cast<T>(beta1_power_f_)
                                                        : static_cast<T>(beta1_power_d_);
    const T beta2_power = std::is_same<T, float>::value ? static_cast<T>(beta2_power_f_)
                                                        : static_cast<T>(beta2_power_d_);
    const T beta1 = static_cast<T>(kBeta1);
    const T beta2 = static_cast<T>(kBeta2);
    const T epsilon = static_cast<T>(kEpsilon);
    const T one = T(1);
    const T lr_t = lr * std::sqrt(one - beta2_power) / (one - beta1_power);
    T* m = (*slots)[0].data<T>();
    T* v = (*slots)[1].data<T>();
    for (int64_t i = 0; i < n; ++i) {
      const T g = grad[i];
      m[i] = beta1 * m[i] + (one - beta1) * g;
      v[i] = beta2 * v[i] + (one - beta2) * g * g;
      var[i] -= lr_t * m[i] / (std::sqrt(v[i]) + epsilon);
    }
  }
}

void ShardOptimizer::FinishUpdate() {
  if (rule_ != "adam") return;
  beta1_power_f_ *= static_cast<float>(kBeta1);
  beta2_power_f_ *= static_cast<float>(kBeta2);
  beta1_power_d_ *= kBeta1;
  beta2_power_d_ *= kBeta2;
}

}  // namespace actorflow
