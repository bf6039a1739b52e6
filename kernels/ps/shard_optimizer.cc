#include "kernels/ps/shard_optimizer.h"

#include <algorithm>
#include <type_traits>

#include "kernels/denormal.h"

namespace actorflow {
namespace {

constexpr char kBeta1PowerSuffix[] = "Adam_beta1_power";
constexpr char kBeta2PowerSuffix[] = "Adam_beta2_power";

bool IsHostFloat(const Tensor& t, DType dtype) {
  return t.IsInitialized() && !t.IsOnDevice() && t.dtype() == dtype;
}

std::string Describe(const Tensor& t) {
  return t.IsInitialized() ? t.DebugString() : std::string("<empty>");
}

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

// var - lr * grad into fresh memory (GradientDescentUpdate on each element).
template <typename T>
Tensor DescendedCopy(const Tensor& var, const Tensor& grad, double rate) {
  const T lr = static_cast<T>(rate);
  const int64_t n = var.NumElements();
  Tensor out = Tensor::Uninitialized(var.dtype(), var.shape());
  const T* __restrict in = var.data<T>();
  const T* __restrict g = grad.data<T>();
  T* __restrict o = out.data<T>();
  for (int64_t i = 0; i < n; ++i) {
    T v = in[i];
    GradientDescentUpdate(v, g[i], lr);
    o[i] = v;
  }
  return out;
}

}  // namespace

StatusOr<std::unique_ptr<ShardOptimizer>> ShardOptimizer::Create(const std::string& rule,
                                                                 double learning_rate) {
  const std::string error = OptimizerConfigError(rule, learning_rate);
  if (!error.empty()) return InvalidArgument(error);
  OptimizerKind kind = OptimizerKind::kGradientDescent;
  ParseOptimizerKind(rule, &kind);
  return std::unique_ptr<ShardOptimizer>(new ShardOptimizer(kind, learning_rate));
}

std::vector<std::string> ShardOptimizer::SlotSuffixes(const std::string& rule) {
  OptimizerKind kind;
  if (!ParseOptimizerKind(rule, &kind)) return {};
  std::vector<std::string> suffixes = OptimizerSlotNames(kind);
  if (kind == OptimizerKind::kAdam) {
    suffixes.push_back(kBeta1PowerSuffix);
    suffixes.push_back(kBeta2PowerSuffix);
  }
  return suffixes;
}

std::vector<std::string> ShardOptimizer::AllSlotSuffixes() {
  std::vector<std::string> all;
  for (OptimizerKind kind : kAllOptimizerKinds) {
    for (std::string& suffix : SlotSuffixes(OptimizerKindName(kind))) {
      all.push_back(std::move(suffix));
    }
  }
  return all;
}

bool ShardOptimizer::SplitSlotName(const std::string& name,
                                   const std::vector<std::string>& suffixes,
                                   std::string* variable) {
  const size_t slash = name.rfind('/');
  if (slash == std::string::npos || slash == 0) return false;
  const std::string suffix = name.substr(slash + 1);
  if (std::find(suffixes.begin(), suffixes.end(), suffix) == suffixes.end()) return false;
  *variable = name.substr(0, slash);
  return true;
}

void ShardOptimizer::SplitVariablesAndSlots(const std::map<std::string, Tensor>& values,
                                            const std::string& rule,
                                            std::map<std::string, Tensor>* variables,
                                            std::map<std::string, std::string>* slot_of) {
  const std::vector<std::string> own = SlotSuffixes(rule);
  const std::vector<std::string> any = AllSlotSuffixes();
  for (const auto& [name, value] : values) {
    std::string var;
    if (SplitSlotName(name, any, &var) && values.count(var)) {
      if (SplitSlotName(name, own, &var)) (*slot_of)[name] = var;
      continue;
    }
    (*variables)[name] = value;
  }
}

void ShardOptimizer::AddVariable(const std::string& name, const Tensor& value) {
  VariableSlots& entry = slots_[name];
  entry.dtype = value.dtype();
  entry.shape = value.shape();
  entry.slots.clear();
  for (size_t i = 0; i < OptimizerSlotNames(kind_).size(); ++i) {
    entry.slots.push_back(Filled(value, OptimizerSlotInitialValue(kind_)));
  }
}

void ShardOptimizer::Apply(const std::string& name, Tensor* var, const Tensor& grad) {
  // The graph optimizers' kernels run so (kernels/denormal.h): the same arithmetic.
  ScopedFlushDenormal flush_denormals;
  if (kind_ == OptimizerKind::kGradientDescent && !var->RefCountIsOne()) {
    // Shared (a reply or the previous version holds it): the update goes into fresh
    // memory in one pass, instead of a copy and then an update in place.
    const double rate = learning_rate_ * rate_scale_ * schedule_scale_;
    *var = var->dtype() == DType::kFloat32 ? DescendedCopy<float>(*var, grad, rate)
                                           : DescendedCopy<double>(*var, grad, rate);
    return;
  }
  if (!var->RefCountIsOne()) *var = var->DeepCopy();
  std::vector<Tensor>* slots = &slots_[name].slots;
  for (Tensor& slot : *slots) {
    if (!slot.RefCountIsOne()) slot = slot.DeepCopy();  // an export still holds it
  }
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
  const T lr = static_cast<T>(learning_rate_ * rate_scale_ * schedule_scale_);
  switch (kind_) {
    case OptimizerKind::kGradientDescent:
      for (int64_t i = 0; i < n; ++i) GradientDescentUpdate(var[i], grad[i], lr);
      break;
    case OptimizerKind::kMomentum: {
      const MomentumParams<T> params{lr, static_cast<T>(kDefaultMomentum), false};
      T* accum = (*slots)[0].data<T>();
      for (int64_t i = 0; i < n; ++i) MomentumUpdate(var[i], accum[i], grad[i], params);
      break;
    }
    case OptimizerKind::kAdagrad: {
      T* accum = (*slots)[0].data<T>();
      for (int64_t i = 0; i < n; ++i) AdagradUpdate(var[i], accum[i], grad[i], lr);
      break;
    }
    case OptimizerKind::kAdam: {
      const bool f32 = std::is_same<T, float>::value;
      const T beta1_power = f32 ? static_cast<T>(beta1_power_f_) : static_cast<T>(beta1_power_d_);
      const T beta2_power = f32 ? static_cast<T>(beta2_power_f_) : static_cast<T>(beta2_power_d_);
      const AdamParams<T> params{AdamStepSize(lr, beta1_power, beta2_power),
                                 static_cast<T>(kDefaultAdamBeta1),
                                 static_cast<T>(kDefaultAdamBeta2),
                                 static_cast<T>(kDefaultAdamEpsilon)};
      T* m = (*slots)[0].data<T>();
      T* v = (*slots)[1].data<T>();
      for (int64_t i = 0; i < n; ++i) AdamUpdate(var[i], m[i], v[i], grad[i], params);
      break;
    }
  }
}

void ShardOptimizer::FinishUpdate() {
  if (kind_ != OptimizerKind::kAdam) return;
  beta1_power_f_ *= static_cast<float>(kDefaultAdamBeta1);
  beta2_power_f_ *= static_cast<float>(kDefaultAdamBeta2);
  beta1_power_d_ *= kDefaultAdamBeta1;
  beta2_power_d_ *= kDefaultAdamBeta2;
}

std::map<std::string, Tensor> ShardOptimizer::ExportSlots() const {
  std::map<std::string, Tensor> out;
  const std::vector<std::string> suffixes = SlotSuffixes(rule_);
  for (const auto& [name, entry] : slots_) {
    for (size_t i = 0; i < entry.slots.size(); ++i) {
      out[name + "/" + suffixes[i]] = entry.slots[i];
    }
    if (kind_ != OptimizerKind::kAdam) continue;
    const bool f32 = entry.dtype == DType::kFloat32;
    out[name + "/" + kBeta1PowerSuffix] =
        f32 ? Tensor::Scalar<float>(beta1_power_f_) : Tensor::Scalar<double>(beta1_power_d_);
    out[name + "/" + kBeta2PowerSuffix] =
        f32 ? Tensor::Scalar<float>(beta2_power_f_) : Tensor::Scalar<double>(beta2_power_d_);
  }
  return out;
}

Status ShardOptimizer::ImportSlots(const std::map<std::string, Tensor>& slots) {
  const std::vector<std::string> suffixes = SlotSuffixes(rule_);
  const size_t per_variable = OptimizerSlotNames(kind_).size();  // [var shape] slots
  // Checked first, committed after: by variable, its [var shape] slots (in order).
  std::map<std::string, std::vector<const Tensor*>> given;
  // Adam's beta powers by dtype: {beta1, beta2} and the slot each came from.
  std::map<DType, std::pair<const Tensor*, std::string>> powers[2];
  for (const auto& [slot_name, tensor] : slots) {
    std::string var;
    if (!SplitSlotName(slot_name, suffixes, &var) || !slots_.count(var)) {
      return InvalidArgument("slot '" + slot_name + "' is not a slot of " + rule_ +
                             (suffixes.empty() ? " (which has none)" : "") +
                             " for a variable of this shard");
    }
    const VariableSlots& entry = slots_.at(var);
    const std::string suffix = slot_name.substr(var.size() + 1);
    const size_t index = std::find(suffixes.begin(), suffixes.end(), suffix) - suffixes.begin();
    const std::string variable_is = "; the variable '" + var + "' is " + DTypeName(entry.dtype) +
                                    entry.shape.ToString();
    if (index < per_variable) {
      if (!IsHostFloat(tensor, entry.dtype) || tensor.shape() != entry.shape) {
        return InvalidArgument("slot '" + slot_name + "' is " + Describe(tensor) + variable_is);
      }
      auto& list = given[var];
      list.resize(per_variable, nullptr);
      list[index] = &tensor;
      continue;
    }
    // A beta power: a scalar of the variable's dtype, equal on every variable of it.
    if (!IsHostFloat(tensor, entry.dtype) || tensor.shape() != Shape{}) {
      return InvalidArgument("slot '" + slot_name + "' is " + Describe(tensor) +
                             " but must be a " + DTypeName(entry.dtype) + " scalar" +
                             variable_is);
    }
    auto& seen = powers[index - per_variable];
    auto it = seen.find(entry.dtype);
    if (it == seen.end()) {
      seen[entry.dtype] = {&tensor, slot_name};
    } else if (it->second.first->ElementAsDouble(0) != tensor.ElementAsDouble(0)) {
      return InvalidArgument("slot '" + slot_name + "' is " +
                             std::to_string(tensor.ElementAsDouble(0)) + " but '" +
                             it->second.second + "' is " +
                             std::to_string(it->second.first->ElementAsDouble(0)) +
                             ": the beta powers are the same on every variable of a shard");
    }
  }
  for (const auto& [var, list] : given) {
    for (size_t i = 0; i < list.size(); ++i) {
      if (list[i] == nullptr) {
        return InvalidArgument("slot '" + var + "/" + suffixes[i] + "' is missing while other " +
                               "slots of variable '" + var + "' are given");
      }
    }
    if (kind_ != OptimizerKind::kAdam) continue;
    const DType dtype = slots_.at(var).dtype;
    for (int p = 0; p < 2; ++p) {
      if (!powers[p].count(dtype)) {
        return InvalidArgument("slot '" + var + "/" + suffixes[per_variable + p] +
                               "' is missing: adam slots need the beta powers (of some " +
                               DTypeName(dtype) + " variable)");
      }
    }
  }
  for (const auto& [var, list] : given) {
    std::vector<Tensor>& own = slots_.at(var).slots;
    for (size_t i = 0; i < list.size(); ++i) own[i] = list[i]->DeepCopy();
  }
  for (const auto& [dtype, power] : powers[0]) {
    if (dtype == DType::kFloat32) {
      beta1_power_f_ = *power.first->data<float>();
    } else {
      beta1_power_d_ = *power.first->data<double>();
    }
  }
  for (const auto& [dtype, power] : powers[1]) {
    if (dtype == DType::kFloat32) {
      beta2_power_f_ = *power.first->data<float>();
    } else {
      beta2_power_d_ = *power.first->data<double>();
    }
  }
  return Status::OK();
}

}  // namespace actorflow
