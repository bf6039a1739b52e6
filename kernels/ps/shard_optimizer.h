// The update rules a parameter shard applies to its variables: the element rules of
// kernels/optimizer_rules.h (the training kernels' own) with its default
// hyper-parameters (MakeOptimizer's), so that a model trained through parameter
// servers follows the same arithmetic as the graph optimizers:
//   sgd       var -= lr * grad
//   momentum  accum = 0.9 * accum + grad; var -= lr * accum            (accum from 0)
//   adam      lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power);
//             m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
//             var -= lr_t * m / (sqrt(v) + eps)      (b1 .9, b2 .999, eps 1e-8;
//             the beta powers start at b1, b2 and are multiplied by them after each
//             update, in the variable's dtype, as the graph does)
//   adagrad   accum += g^2; var -= lr * g / sqrt(accum)                (accum from 0.1)
// Arithmetic happens in the variable's dtype (float32 or float64).
//
// Slots leave and enter as tensors named "<var>/<suffix>" (SlotSuffixes), so that a
// checkpoint holds them beside the variables (training/checkpoint/ps_checkpoint.h):
//   momentum  <var>/Momentum                       [var shape]
//   adagrad   <var>/Adagrad                        [var shape]
//   adam      <var>/Adam_m, <var>/Adam_v           [var shape]
//             <var>/Adam_beta1_power, <var>/Adam_beta2_power   [] in the var's dtype
//             (the shard's beta powers, the same on every variable of a dtype)
//   sgd       none
// A name "V/S" is a slot when V is a variable and S one of the rule's suffixes.
//
// CAF-free. Invariants: every variable given to Apply was first given to AddVariable
// with the same dtype and shape; one update = Apply on each variable, then FinishUpdate.
// A slot buffer is written in place only while the optimizer is its sole owner
// (copy-on-write, as the variables): exported slots never change afterwards.
// Thread safety: none (owned by one shard).
#ifndef ACTORFLOW_KERNELS_PS_SHARD_OPTIMIZER_H_
#define ACTORFLOW_KERNELS_PS_SHARD_OPTIMIZER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/optimizer_rules.h"

namespace actorflow {

class ShardOptimizer {
 public:
  // InvalidArgument for an unknown rule (listing sgd, momentum, adam, adagrad) or a
  // learning rate that is not a positive finite number.
  static StatusOr<std::unique_ptr<ShardOptimizer>> Create(const std::string& rule,
                                                          double learning_rate);

  // The slot suffixes of `rule`, in export order (see the top of this file); empty
  // for sgd and for an unknown rule.
  static std::vector<std::string> SlotSuffixes(const std::string& rule);
  // The suffixes of every rule: a name "V/S" with V a variable and S among them is a
  // slot of some optimizer (perhaps another one than a shard's).
  static std::vector<std::string> AllSlotSuffixes();
  // Splits `name` = "V/S" at its last '/' when S is one of `suffixes`: true and
  // *variable = V. Whether V is a variable is the caller's to check.
  static bool SplitSlotName(const std::string& name, const std::vector<std::string>& suffixes,
                            std::string* variable);
  // Splits `values` (variables and, beside them, slots: a checkpoint's or a
  // Snapshot's values and slots in one map) into the variables and the slots of
  // `rule`, by the naming convention: "V/S" is a slot when V is also in `values` and
  // S one of any rule's suffixes. Slots of another rule are left out (their variable
  // starts fresh slots). *slot_of maps each slot kept to its variable.
  static void SplitVariablesAndSlots(const std::map<std::string, Tensor>& values,
                                     const std::string& rule,
                                     std::map<std::string, Tensor>* variables,
                                     std::map<std::string, std::string>* slot_of);

  // Creates the slots of `name` for a variable like `value` (float32 or float64).
  void AddVariable(const std::string& name, const Tensor& value);
  // One update of variable `name`: *var and its slots (each copied first when its
  // buffer is shared, since readers or exports may still hold it) are changed in
  // place with `grad` [same shape].
  void Apply(const std::string& name, Tensor* var, const Tensor& grad);
  // Ends one update of every variable (Adam's beta powers advance).
  void FinishUpdate();

  // The slots of every variable, by slot name: [var shape] tensors sharing this
  // optimizer's buffers (read-only: later updates copy before writing) and, for adam,
  // the beta powers as new scalars. Empty for sgd.
  std::map<std::string, Tensor> ExportSlots() const;
  // Replaces the slots of the variables named in `slots` (names and tensors as
  // ExportSlots gives them; the tensors are copied); a variable with none given keeps
  // its slots. Adam's beta powers are taken from any variable of each dtype that has
  // them. InvalidArgument naming the slot, and nothing changes, for: a name that is
  // not a slot of this rule for an added variable, a dtype or shape unlike the
  // variable's (a beta power must be a scalar of its dtype), a variable given only
  // some of its [var shape] slots, adam m/v given with no beta powers of their dtype,
  // or beta powers that disagree between variables of one dtype.
  Status ImportSlots(const std::map<std::string, Tensor>& slots);

  const std::string& rule() const { return rule_; }
  // Multiplies the learning rate of the updates that follow (elastic training's
  // linear scaling sets it per update); 1 by default.
  void set_rate_scale(double scale) { rate_scale_ = scale; }
  // Multiplies it further by a schedule's factor (a decay by version); 1 by default.
  void set_schedule_scale(double scale) { schedule_scale_ = scale; }

 private:
  ShardOptimizer(OptimizerKind kind, double learning_rate)
      : kind_(kind), rule_(OptimizerKindName(kind)), learning_rate_(learning_rate) {}

  template <typename T>
  void ApplyTyped(std::vector<Tensor>* slots, Tensor* var, const Tensor& grad);

  struct VariableSlots {
    DType dtype = DType::kFloat32;
    Shape shape;
    // [var shape] each, in SlotSuffixes order: momentum/adagrad: accum; adam: m, v.
    std::vector<Tensor> slots;
  };

  OptimizerKind kind_;
  std::string rule_;  // OptimizerKindName(kind_)
  double learning_rate_;
  double rate_scale_ = 1.0;
  double schedule_scale_ = 1.0;
  std::map<std::string, VariableSlots> slots_;  // by variable name
  // Adam's beta powers, kept in each dtype as the graph keeps them.
  float beta1_power_f_ = static_cast<float>(kDefaultAdamBeta1);
  float beta2_power_f_ = static_cast<float>(kDefaultAdamBeta2);
  double beta1_power_d_ = kDefaultAdamBeta1;
  double beta2_power_d_ = kDefaultAdamBeta2;
};

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_PS_SHARD_OPTIMIZER_H_
