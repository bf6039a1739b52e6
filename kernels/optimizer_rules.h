// The optimizers' update rules, written once: their names, their default
// hyper-parameters and the per-element arithmetic of one update. Three places apply
// them and must agree to the bit: the CPU Apply* kernels (kernels/cpu/
// training_kernels.cc), the CUDA Apply* kernels (kernels/cuda/training.cu) and the
// parameter shard's optimizer (kernels/ps/shard_optimizer.cc); training/optimizers/optimizers.cc's
// MakeOptimizer and the command line take the names and defaults from here.
//
//   sgd       var -= lr * grad
//   momentum  accum = accum * momentum + grad;
//             var -= lr * accum                      (Nesterov: lr * grad + lr * momentum * accum)
//   adam      lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)   (once per update)
//             m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2;
//             var -= lr_t * m / (sqrt(v) + epsilon)
//   adagrad   accum += g^2;  var -= lr * g / sqrt(accum)
//
// The element functions are templates on the element type (float, double); every
// operation happens in that type, in the order written, so a caller gets the same
// bits wherever it runs them on the host. They also compile as CUDA device code
// (AF_HOST_DEVICE), where nvcc may contract a multiply-add into an FMA: GPU results
// agree within rounding, not to the bit.
//
// Header-only, no dependency: kernels, the runtime and nvcc-compiled files include it.
// Thread safety: constants and pure functions.
#ifndef ACTORFLOW_KERNELS_OPTIMIZER_RULES_H_
#define ACTORFLOW_KERNELS_OPTIMIZER_RULES_H_

#include <cmath>
#include <string>
#include <vector>

#include "kernels/cuda/host_device.h"

namespace actorflow {

enum class OptimizerKind { kGradientDescent, kMomentum, kAdam, kAdagrad };

inline constexpr OptimizerKind kAllOptimizerKinds[] = {
    OptimizerKind::kGradientDescent, OptimizerKind::kMomentum, OptimizerKind::kAdam,
    OptimizerKind::kAdagrad};

// Default hyper-parameters (TensorFlow 1.x's), used wherever a caller gives only a
// learning rate: MakeOptimizer, the parameter shards, the command line.
inline constexpr double kDefaultMomentum = 0.9;
inline constexpr double kDefaultAdamLearningRate = 0.001;
inline constexpr double kDefaultAdamBeta1 = 0.9;
inline constexpr double kDefaultAdamBeta2 = 0.999;
inline constexpr double kDefaultAdamEpsilon = 1e-8;
// > 0, so that adagrad's first update does not divide by zero.
inline constexpr double kDefaultAdagradInitialAccumulator = 0.1;

// The names of each kind, indexed by the enum's value.
struct OptimizerKindNames {
  const char* name;        // command line and configuration: "sgd", "momentum", ...
  const char* graph_name;  // the graph optimizer's name scope: "GradientDescent", ...
};
inline constexpr OptimizerKindNames kOptimizerKindNames[] = {
    {"sgd", "GradientDescent"}, {"momentum", "Momentum"}, {"adam", "Adam"}, {"adagrad", "Adagrad"}};
static_assert(sizeof(kOptimizerKindNames) / sizeof(kOptimizerKindNames[0]) ==
                  sizeof(kAllOptimizerKinds) / sizeof(kAllOptimizerKinds[0]),
              "one entry of names per OptimizerKind, in enum order");

inline const char* OptimizerKindName(OptimizerKind kind) {
  return kOptimizerKindNames[static_cast<int>(kind)].name;
}
inline const char* OptimizerKindGraphName(OptimizerKind kind) {
  return kOptimizerKindNames[static_cast<int>(kind)].graph_name;
}

// "sgd, momentum, adam, adagrad": for messages that list the valid names.
inline std::string ValidOptimizerNames() {
  std::string names;
  for (OptimizerKind kind : kAllOptimizerKinds) {
    names += (names.empty() ? "" : ", ") + std::string(OptimizerKindName(kind));
  }
  return names;
}

// True and *kind for one of OptimizerKindName's names; false otherwise.
inline bool ParseOptimizerKind(const std::string& name, OptimizerKind* kind) {
  for (OptimizerKind k : kAllOptimizerKinds) {
    if (name == OptimizerKindName(k)) {
      *kind = k;
      return true;
    }
  }
  return false;
}

// The error of a configuration (an optimizer name and a learning rate) that no
// optimizer accepts, naming the culprit; empty when both are valid.
inline std::string OptimizerConfigError(const std::string& name, double learning_rate) {
  OptimizerKind unused;
  if (!ParseOptimizerKind(name, &unused)) {
    return "unknown optimizer '" + name + "': valid optimizers are " + ValidOptimizerNames();
  }
  if (!std::isfinite(learning_rate) || learning_rate <= 0) {
    return "optimizer '" + name + "': the learning rate must be a positive number, got " +
           std::to_string(learning_rate);
  }
  return std::string();
}

// tf.train.exponential_decay's schedule (not staircase): the update made at global
// step t (the number of updates applied before it) uses
//   learning_rate * decay_rate^(t / decay_steps).
// decay_steps 0 means no decay. Graph optimizers build it from the global step
// (training/optimizers/optimizer.h); parameter shards apply it by their version.
struct LearningRateDecay {
  long long decay_steps = 0;
  double decay_rate = 1.0;

  bool enabled() const { return decay_steps > 0; }
  // The factor of the update made at global step `step` (1 when disabled).
  double ScaleAt(long long step) const {
    if (!enabled()) return 1.0;
    return std::pow(decay_rate, static_cast<double>(step) / static_cast<double>(decay_steps));
  }
  bool operator==(const LearningRateDecay& o) const {
    return decay_steps == o.decay_steps && decay_rate == o.decay_rate;
  }
};

// The error of a decay no optimizer accepts, naming the culprit; empty when valid.
inline std::string LearningRateDecayError(const LearningRateDecay& decay) {
  if (decay.decay_steps < 0) {
    return "learning rate decay: decay_steps must be >= 0 (0: no decay), got " +
           std::to_string(decay.decay_steps);
  }
  if (!std::isfinite(decay.decay_rate) || decay.decay_rate <= 0) {
    return "learning rate decay: decay_rate must be a positive number, got " +
           std::to_string(decay.decay_rate);
  }
  return std::string();
}

// The per-variable slots of each rule, in the order of the update's arguments (each
// [var shape], named "<var>/<slot>"), and their initial values.
inline std::vector<std::string> OptimizerSlotNames(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kMomentum:
      return {"Momentum"};
    case OptimizerKind::kAdam:
      return {"Adam_m", "Adam_v"};
    case OptimizerKind::kAdagrad:
      return {"Adagrad"};
    case OptimizerKind::kGradientDescent:
      break;
  }
  return {};
}
inline double OptimizerSlotInitialValue(OptimizerKind kind) {
  return kind == OptimizerKind::kAdagrad ? kDefaultAdagradInitialAccumulator : 0.0;
}

// --- the arithmetic of one element ----------------------------------------------------

template <typename T>
AF_HOST_DEVICE inline T OptimizerSqrt(T x) {
  return HostDeviceSqrt(x);
}

template <typename T>
AF_HOST_DEVICE inline void GradientDescentUpdate(T& var, T grad, T lr) {
  var -= lr * grad;
}

template <typename T>
struct MomentumParams {
  T lr;
  T momentum;
  bool use_nesterov;
};

template <typename T>
AF_HOST_DEVICE inline void MomentumUpdate(T& var, T& accum, T grad, const MomentumParams<T>& p) {
  const T acc = accum * p.momentum + grad;
  accum = acc;
  if (p.use_nesterov) {
    var -= p.lr * grad + p.lr * p.momentum * acc;
  } else {
    var -= p.lr * acc;
  }
}

// lr_t: the step size of one update (AdamStepSize), the same for every element.
template <typename T>
struct AdamParams {
  T lr_t;
  T beta1;
  T beta2;
  T epsilon;
};

// The bias-corrected step size: lr * sqrt(1 - beta2_power) / (1 - beta1_power).
template <typename T>
AF_HOST_DEVICE inline T AdamStepSize(T lr, T beta1_power, T beta2_power) {
  const T one = T(1);
  return lr * OptimizerSqrt(one - beta2_power) / (one - beta1_power);
}

template <typename T>
AF_HOST_DEVICE inline void AdamUpdate(T& var, T& m, T& v, T grad, const AdamParams<T>& p) {
  const T one = T(1);
  const T mi = p.beta1 * m + (one - p.beta1) * grad;
  const T vi = p.beta2 * v + (one - p.beta2) * grad * grad;
  m = mi;
  v = vi;
  var -= p.lr_t * mi / (OptimizerSqrt(vi) + p.epsilon);
}

template <typename T>
AF_HOST_DEVICE inline void AdagradUpdate(T& var, T& accum, T grad, T lr) {
  const T acc = accum + grad * grad;
  accum = acc;
  var -= lr * grad / OptimizerSqrt(acc);
}

// FTRL-proximal (McMahan et al.; TensorFlow's ApplyFtrl) with learning-rate power p
// (-0.5: the usual 1/sqrt schedule):
//   accum' = accum + grad^2
//   linear += grad - (accum'^-p - accum^-p) / lr * var
//   var = |linear| > l1 ? (sign(linear) * l1 - linear) / (accum'^-p / lr + 2 * l2) : 0
template <typename T>
struct FtrlParams {
  T lr;
  T l1;
  T l2;
  T lr_power;
};

// Also device code: the CUDA SparseApplyFtrl kernel (kernels/cuda/sparse.cu) runs it.
template <typename T>
AF_HOST_DEVICE inline T FtrlPower(T accum, T lr_power) {
  return lr_power == T(-0.5) ? OptimizerSqrt(accum) : HostDevicePow(accum, -lr_power);
}

template <typename T>
AF_HOST_DEVICE inline void FtrlUpdate(T& var, T& accum, T& linear, T grad, const FtrlParams<T>& p) {
  const T new_accum = accum + grad * grad;
  const T new_power = FtrlPower(new_accum, p.lr_power);
  linear += grad - (new_power - FtrlPower(accum, p.lr_power)) / p.lr * var;
  const T shrunk = (linear > T(0) ? p.l1 : -p.l1) - linear;
  var = (linear > p.l1 || linear < -p.l1) ? shrunk / (new_power / p.lr + T(2) * p.l2) : T(0);
  accum = new_accum;
}

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_OPTIMIZER_RULES_H_
