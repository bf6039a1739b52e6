// The concrete optimizers (their update ops and state) and MakeOptimizer.
#include "graph/ops.h"
#include "graph/sparse_ops.h"
#include "training/optimizers/optimizer.h"

namespace actorflow {

// --- GradientDescent -------------------------------------------------------------

GradientDescentOptimizer::GradientDescentOptimizer(double learning_rate)
    : Optimizer(OptimizerKindGraphName(OptimizerKind::kGradientDescent)), learning_rate_(learning_rate) {}

StatusOr<Output> GradientDescentOptimizer::ApplyDense(const Scope& scope, const Output& grad,
                                                      const Output& var) {
  return ApplyGradientDescent(scope, var, LearningRate(scope, var.dtype(), learning_rate_), grad);
}

StatusOr<Output> GradientDescentOptimizer::ApplySparse(const Scope& scope,
                                                       const IndexedSlices& grad,
                                                       const Output& var) {
  return SparseApplyGradientDescent(scope, var, LearningRate(scope, var.dtype(), learning_rate_),
                                    grad.values, grad.indices);
}

// --- Momentum ----------------------------------------------------------------------

MomentumOptimizer::MomentumOptimizer(double learning_rate, double momentum, bool use_nesterov)
    : Optimizer(OptimizerKindGraphName(OptimizerKind::kMomentum)),
      learning_rate_(learning_rate),
      momentum_(momentum),
      use_nesterov_(use_nesterov) {}

StatusOr<Output> MomentumOptimizer::ApplyDense(const Scope& scope, const Output& grad,
                                               const Output& var) {
  AF_ASSIGN_OR_RETURN(Output accum, GetOrCreateSlot(scope.graph(), var, "Momentum", 0.0));
  const DType dtype = var.dtype();
  return ApplyMomentum(scope, var, accum, LearningRate(scope, dtype, learning_rate_), grad,
                       ScalarOf(dtype, momentum_), use_nesterov_);
}

// --- Adam ------------------------------------------------------------------------------

AdamOptimizer::AdamOptimizer(double learning_rate, double beta1, double beta2, double epsilon)
    : Optimizer(OptimizerKindGraphName(OptimizerKind::kAdam)),
      learning_rate_(learning_rate),
      beta1_(beta1),
      beta2_(beta2),
      epsilon_(epsilon) {}

Status AdamOptimizer::Prepare(const Scope& scope, const std::vector<Output>& vars) {
  powers_.clear();
  for (const Output& var : vars) {
    const DType dtype = var.dtype();
    if (powers_.count(dtype)) continue;
    const std::string suffix = std::string(":") + DTypeName(dtype);
    BetaPowers powers;
    AF_ASSIGN_OR_RETURN(
        powers.beta1_power,
        GetOrCreateNonSlot(scope.graph(), "beta1_power" + suffix, "beta1_power", var, beta1_));
    AF_ASSIGN_OR_RETURN(
        powers.beta2_power,
        GetOrCreateNonSlot(scope.graph(), "beta2_power" + suffix, "beta2_power", var, beta2_));
    powers_[dtype] = powers;
  }
  return Status::OK();
}

StatusOr<Output> AdamOptimizer::ApplyDense(const Scope& scope, const Output& grad,
                                           const Output& var) {
  AF_ASSIGN_OR_RETURN(Output m, GetOrCreateSlot(scope.graph(), var, "Adam_m", 0.0));
  AF_ASSIGN_OR_RETURN(Output v, GetOrCreateSlot(scope.graph(), var, "Adam_v", 0.0));
  const DType dtype = var.dtype();
  const BetaPowers& powers = powers_.at(dtype);  // Prepare made one pair per dtype
  return ApplyAdam(scope, var, m, v, powers.beta1_power, powers.beta2_power,
                   LearningRate(scope, dtype, learning_rate_), ScalarOf(dtype, beta1_),
                   ScalarOf(dtype, beta2_), ScalarOf(dtype, epsilon_), grad);
}

StatusOr<Output> AdamOptimizer::ApplySparse(const Scope& scope, const IndexedSlices& grad,
                                            const Output& var) {
  AF_ASSIGN_OR_RETURN(Output m, GetOrCreateSlot(scope.graph(), var, "Adam_m", 0.0));
  AF_ASSIGN_OR_RETURN(Output v, GetOrCreateSlot(scope.graph(), var, "Adam_v", 0.0));
  const DType dtype = var.dtype();
  const BetaPowers& powers = powers_.at(dtype);
  return SparseApplyAdam(scope, var, m, v, powers.beta1_power, powers.beta2_power,
                         LearningRate(scope, dtype, learning_rate_), ScalarOf(dtype, beta1_),
                         ScalarOf(dtype, beta2_), ScalarOf(dtype, epsilon_), grad.values,
                         grad.indices);
}

// After every update of the step: beta1_power *= beta1, beta2_power *= beta2. The
// scope's control dependencies make the reads of the powers follow the updates.
StatusOr<std::vector<Output>> AdamOptimizer::Finish(const Scope& scope) {
  std::vector<Output> ops;
  for (const auto& [dtype, powers] : powers_) {
    for (const auto& [power, beta] :
         {std::make_pair(powers.beta1_power, beta1_), std::make_pair(powers.beta2_power, beta2_)}) {
      const Scope s = BesideVariable(scope.NewSubScope("update_" + power.node->name()), power);
      ops.push_back(Assign(s, power, Mul(s, power, ScalarOf(dtype, beta))));
    }
  }
  if (!scope.ok()) return scope.status();
  return ops;
}

// --- Adagrad ---------------------------------------------------------------------------

AdagradOptimizer::AdagradOptimizer(double learning_rate, double initial_accumulator_value)
    : Optimizer(OptimizerKindGraphName(OptimizerKind::kAdagrad)),
      learning_rate_(learning_rate),
      initial_accumulator_value_(initial_accumulator_value) {}

StatusOr<Output> AdagradOptimizer::ApplyDense(const Scope& scope, const Output& grad,
                                              const Output& var) {
  AF_ASSIGN_OR_RETURN(Output accum,
                      GetOrCreateSlot(scope.graph(), var, "Adagrad", initial_accumulator_value_));
  return ApplyAdagrad(scope, var, accum, LearningRate(scope, var.dtype(), learning_rate_), grad);
}

StatusOr<Output> AdagradOptimizer::ApplySparse(const Scope& scope, const IndexedSlices& grad,
                                               const Output& var) {
  AF_ASSIGN_OR_RETURN(Output accum,
                      GetOrCreateSlot(scope.graph(), var, "Adagrad", initial_accumulator_value_));
  return SparseApplyAdagrad(scope, var, accum, LearningRate(scope, var.dtype(), learning_rate_),
                            grad.values, grad.indices);
}

// --- Ftrl ----------------------------------------------------------------------------

FtrlOptimizer::FtrlOptimizer(double learning_rate, double learning_rate_power,
                             double initial_accumulator_value, double l1, double l2)
    : Optimizer("Ftrl"),
      learning_rate_(learning_rate),
      learning_rate_power_(learning_rate_power),
      initial_accumulator_value_(initial_accumulator_value),
      l1_(l1),
      l2_(l2) {}

StatusOr<FtrlOptimizer::Slots> FtrlOptimizer::GetSlots(const Scope& scope, const Output& var) {
  Slots slots;
  AF_ASSIGN_OR_RETURN(slots.accum,
                      GetOrCreateSlot(scope.graph(), var, "Ftrl", initial_accumulator_value_));
  AF_ASSIGN_OR_RETURN(slots.linear, GetOrCreateSlot(scope.graph(), var, "Ftrl_1", 0.0));
  return slots;
}

StatusOr<Output> FtrlOptimizer::ApplyDense(const Scope& scope, const Output& grad,
                                           const Output& var) {
  AF_ASSIGN_OR_RETURN(Slots slots, GetSlots(scope, var));
  const DType dtype = var.dtype();
  return ApplyFtrl(scope, var, slots.accum, slots.linear, grad,
                   LearningRate(scope, dtype, learning_rate_), ScalarOf(dtype, l1_),
                   ScalarOf(dtype, l2_), ScalarOf(dtype, learning_rate_power_));
}

StatusOr<Output> FtrlOptimizer::ApplySparse(const Scope& scope, const IndexedSlices& grad,
                                            const Output& var) {
  AF_ASSIGN_OR_RETURN(Slots slots, GetSlots(scope, var));
  const DType dtype = var.dtype();
  return SparseApplyFtrl(scope, var, slots.accum, slots.linear, grad.values, grad.indices,
                         LearningRate(scope, dtype, learning_rate_), ScalarOf(dtype, l1_),
                         ScalarOf(dtype, l2_), ScalarOf(dtype, learning_rate_power_));
}

// --- MakeOptimizer ----------------------------------------------------------------------

StatusOr<std::unique_ptr<Optimizer>> MakeOptimizer(const std::string& name, double learning_rate) {
  const std::string error = OptimizerConfigError(name, learning_rate);
  if (!error.empty()) return InvalidArgument(error);
  OptimizerKind kind = OptimizerKind::kGradientDescent;
  ParseOptimizerKind(name, &kind);
  return MakeOptimizer(kind, learning_rate);
}

StatusOr<std::unique_ptr<Optimizer>> MakeOptimizer(OptimizerKind kind, double learning_rate) {
  const std::string error = OptimizerConfigError(OptimizerKindName(kind), learning_rate);
  if (!error.empty()) return InvalidArgument(error);
  std::unique_ptr<Optimizer> optimizer;
  switch (kind) {
    case OptimizerKind::kGradientDescent:
      optimizer.reset(new GradientDescentOptimizer(learning_rate));
      break;
    case OptimizerKind::kMomentum:
      optimizer.reset(new MomentumOptimizer(learning_rate, kDefaultMomentum));
      break;
    case OptimizerKind::kAdam:
      optimizer.reset(new AdamOptimizer(learning_rate));
      break;
    case OptimizerKind::kAdagrad:
      optimizer.reset(new AdagradOptimizer(learning_rate));
      break;
  }
  return optimizer;
}

}  // namespace actorflow
