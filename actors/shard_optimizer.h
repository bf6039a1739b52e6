// The update rules a parameter shard applies to its variables: the formulas of the
// training kernels (kernels/cpu/training_kernels.cc) with the hyper-parameters of
// training/optimizer.h's MakeOptimizer, so that a model trained through parameter
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
// CAF-free. Invariants: every variable given to Apply was first given to AddVariable
// with the same dtype and shape; one update = Apply on each variable, then FinishUpdate.
// Thread safety: none (owned by one shard).
#ifndef ACTORFLOW_ACTORS_SHARD_OPTIMIZER_H_
#define ACTORFLOW_ACTORS_SHARD_OPTIMIZER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"

namespace actorflow {

class ShardOptimizer {
 public:
  // InvalidArgument for an unknown rule (listing sgd, momentum, adam, adagrad) or a
  // learning rate that is not a positive finite number.
  static StatusOr<std::unique_ptr<ShardOptimizer>> Create(const std::string& rule,
                                                          double learning_rate);

  // Creates the slots of `name` for a variable like `value` (float32 or float64).
  void AddVariable(const std::string& name, const Tensor& value);
  // One update of variable `name`: *var (copied first when its buffer is shared,
  // since readers may still hold it) is changed in place with `grad` [same shape].
  void Apply(const std::string& name, Tensor* var, const Tensor& grad);
  // Ends one update of every variable (Adam's beta powers advance).
  void FinishUpdate();

  const std::string& rule() const { return rule_; }

 private:
  ShardOptimizer(std::string rule, double learning_rate)
      : rule_(std::move(rule)), learning_rate_(learning_rate) {}

  template <typename T>
  void ApplyTyped(std::vector<Tensor>* slots, Tensor* var, const Tensor& grad);

  std::string rule_;
  double learning_rate_;
  // Per variable: its slots ([var shape] each): momentum/adagrad: accum; adam: m, v.
  std::map<std::string, std::vector<Tensor>> slots_;
  // Adam's beta powers, kept in each dtype as the graph keeps them.
  float beta1_power_f_ = 0.9f, beta2_power_f_ = 0.999f;
  double beta1_power_d_ = 0.9, beta2_power_d_ = 0.999;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SHARD_OPTIMIZER_H_
