// Optimizer: checking (gradient, variable) pairs, gating, slots, the global step and
// the train op. The update rules of the concrete optimizers are in optimizers.cc.
#include "training/optimizers/optimizer.h"

#include <set>

#include "graph/gradients.h"
#include "graph/ops.h"
#include "training/optimizers/variables.h"

namespace actorflow {

namespace {

std::string NamesOf(const std::vector<Output>& outputs) {
  std::string names;
  for (const Output& o : outputs) names += (names.empty() ? "'" : ", '") + o.node->name() + "'";
  return names;
}

std::string SlotKey(const Output& var, const std::string& slot) {
  return "slot:" + var.node->name() + "/" + slot;
}

}  // namespace

Scope Optimizer::BesideVariable(const Scope& scope, const Output& var) {
  return scope.WithDevice(var.node->requested_device()).ColocateWith(var);
}

Status Optimizer::Prepare(const Scope&, const std::vector<Output>&) { return Status::OK(); }

StatusOr<std::vector<Output>> Optimizer::Finish(const Scope&) { return std::vector<Output>{}; }

Tensor Optimizer::ScalarOf(DType dtype, double value) {
  return VisitDType(dtype, [value](auto zero) {
    using T = decltype(zero);
    return Tensor::Scalar<T>(static_cast<T>(value));
  });
}

StatusOr<Output> Optimizer::FindCreated(const Graph& graph, const std::string& key) const {
  auto it = created_.find({&graph, key});
  if (it != created_.end()) {
    const Node* node = graph.FindNode(it->second);
    if (node != nullptr && node->op() == "Variable") return Output(node);
  }
  return NotFound("optimizer " + name_ + " has no variable " + key + " in this graph");
}

StatusOr<Output> Optimizer::GetSlot(const Graph& graph, const Output& var,
                                    const std::string& slot) const {
  if (!var.valid()) return InvalidArgument("GetSlot: the variable is an invalid Output");
  return FindCreated(graph, SlotKey(var, slot));
}

StatusOr<Output> Optimizer::GetOrCreateSlot(Graph* graph, const Output& var,
                                            const std::string& slot, double initial_value) {
  const std::string key = SlotKey(var, slot);
  auto found = FindCreated(*graph, key);
  if (found.ok()) return found;
  // At the graph's root (the slot is named after the variable, whatever the caller's
  // name scope), without the caller's control dependencies, beside the variable.
  Scope root = Scope::ForGraph(graph).ColocateWith(var).WithDevice(var.node->requested_device());
  const std::string name = graph->UniqueName(var.node->name() + "/" + slot);
  // Fill keeps the graph small for large variables: [var shape] from one scalar.
  Output initial = Fill(root.NewSubScope(name), var.shape(), ScalarOf(var.dtype(), initial_value));
  if (!root.ok()) return root.status().WithContext("creating slot '" + name + "'");
  AF_ASSIGN_OR_RETURN(Output created, CreateVariable(root, name, initial, /*trainable=*/false));
  created_[{graph, key}] = created.node->name();
  return created;
}

StatusOr<Output> Optimizer::GetOrCreateNonSlot(Graph* graph, const std::string& key,
                                               const std::string& base, const Output& colocate_with,
                                               double initial_value) {
  auto found = FindCreated(*graph, key);
  if (found.ok()) return found;
  Scope root = Scope::ForGraph(graph)
                   .ColocateWith(colocate_with)
                   .WithDevice(colocate_with.node->requested_device());
  AF_ASSIGN_OR_RETURN(Output created, CreateVariable(root, graph->UniqueName(base),
                                                     ScalarOf(colocate_with.dtype(), initial_value),
                                                     /*trainable=*/false));
  created_[{graph, key}] = created.node->name();
  return created;
}

StatusOr<Output> Optimizer::ApplyGradients(const Scope& scope, const GradsAndVars& grads_and_vars,
                                           Output global_step) {
  GradientsAndVars pairs;
  for (const auto& [grad, var] : grads_and_vars) pairs.emplace_back(Gradient{grad, {}}, var);
  return ApplyGradientsGated(scope, pairs, global_step, {});
}

StatusOr<Output> Optimizer::ApplyGradientsWithSlices(const Scope& scope,
                                                     const GradientsAndVars& grads_and_vars,
                                                     Output global_step) {
  return ApplyGradientsGated(scope, grads_and_vars, global_step, {});
}

StatusOr<Output> Optimizer::ApplySparse(const Scope& scope, const IndexedSlices& grad,
                                        const Output& var) {
  return ApplyDense(scope, DenseFromSlices(scope.NewSubScope("dense_gradient"), grad), var);
}

StatusOr<Output> Optimizer::ApplyGradientsGated(const Scope& scope,
                                                const GradientsAndVars& grads_and_vars,
                                                Output global_step,
                                                const std::vector<Output>& gates) {
  if (!scope.ok()) return scope.status();
  const std::string where = name_ + " optimizer: ";
  if (grads_and_vars.empty()) {
    return InvalidArgument(where + "no (gradient, variable) pairs to apply");
  }
  // Check everything before building anything, so that a rejected call adds no node.
  std::vector<Output> vars;
  std::vector<Output> all_gates = gates;
  std::set<const Node*> seen;
  for (const auto& [grad, var] : grads_and_vars) {
    if (!var.valid()) return InvalidArgument(where + "a variable is an invalid Output");
    if (var.node->op() != "Variable") {
      return InvalidArgument(where + "'" + var.name() + "' is a " + var.node->op() +
                             " node, not a Variable: only variables can be updated");
    }
    if (!IsFloating(var.dtype())) {
      return InvalidArgument(where + "variable '" + var.node->name() + "' has dtype " +
                             DTypeName(var.dtype()) +
                             "; only float32/float64 variables "
                             "can be trained");
    }
    if (!seen.insert(var.node).second) {
      return InvalidArgument(where + "variable '" + var.node->name() + "' appears twice");
    }
    if (!grad.valid()) {
      return InvalidArgument(where + "no gradient for variable '" + var.node->name() + "'");
    }
    const Output& values = grad.sparse() ? grad.slices.values : grad.dense;
    if (values.dtype() != var.dtype()) {
      return InvalidArgument(where + "the gradient '" + values.name() + "' has dtype " +
                             DTypeName(values.dtype()) + " but variable '" + var.node->name() +
                             "' has dtype " + DTypeName(var.dtype()));
    }
    if (grad.sparse() && !grad.slices.indices.valid()) {
      return InvalidArgument(where + "the sparse gradient of variable '" + var.node->name() +
                             "' has no indices");
    }
    vars.push_back(var);
    all_gates.push_back(values);
    if (grad.sparse()) all_gates.push_back(grad.slices.indices);
  }
  if (global_step.valid() &&
      (global_step.node->op() != "Variable" || !IsInteger(global_step.dtype()))) {
    return InvalidArgument(where + "global_step '" + global_step.name() +
                           "' must be an int32/int64 Variable (see CreateGlobalStep)");
  }

  if (decay_.enabled() && !global_step.valid()) {
    return InvalidArgument(where + "the learning rate decays with the global step, but no "
                           "global_step was given");
  }
  building_step_ = global_step;
  AF_RETURN_IF_ERROR(Prepare(scope, vars));
  const Scope optimizer_scope = scope.NewSubScope(name_);
  // The gate: one NoOp that waits for every gradient (and the loss), so that no update
  // starts before every read of a variable in the step. It waits through an Identity
  // per tensor rather than a control edge from the tensor's node: a control edge from
  // a fed node (a fed gradient) would make the session run that node. Each Identity
  // sits on its tensor's device: a gradient computed on another device than the
  // gate's then crosses as a control signal, not as its whole value.
  const Scope gate_scope = optimizer_scope.NewSubScope("gate");
  std::vector<Output> gate_reads;
  for (const Output& tensor : all_gates) {
    const std::string& device = tensor.node->requested_device();
    gate_reads.push_back(
        Identity(device.empty() ? gate_scope : gate_scope.WithDevice(device), tensor));
  }
  const Output gate(NoOp(gate_scope.WithControlDependencies(gate_reads)));
  if (!scope.ok()) return scope.status();
  std::vector<Output> updates;
  for (const auto& [grad, var] : grads_and_vars) {
    const Scope update_scope =
        BesideVariable(optimizer_scope.NewSubScope("update_" + var.node->name()), var)
            .WithControlDependencies({gate});
    AF_ASSIGN_OR_RETURN(Output update, grad.sparse()
                                           ? ApplySparse(update_scope, grad.slices, var)
                                           : ApplyDense(update_scope, grad.dense, var));
    if (!scope.ok()) return scope.status();
    updates.push_back(update);
  }
  const Scope after_updates = optimizer_scope.WithControlDependencies(updates);
  AF_ASSIGN_OR_RETURN(std::vector<Output> finish, Finish(after_updates));
  std::vector<Output> step_ops = updates;
  step_ops.insert(step_ops.end(), finish.begin(), finish.end());
  if (global_step.valid()) {
    step_ops.push_back(
        AssignAdd(BesideVariable(after_updates.NewSubScope("global_step"), global_step),
                  global_step, ScalarOf(global_step.dtype(), 1)));
  }
  const Node* train = NoOp(scope.WithControlDependencies(step_ops));
  if (!scope.ok()) return scope.status();
  return Output(train);
}

Status Optimizer::SetLearningRateDecay(const LearningRateDecay& decay) {
  const std::string error = LearningRateDecayError(decay);
  if (!error.empty()) return InvalidArgument(name_ + " optimizer: " + error);
  decay_ = decay;
  return Status::OK();
}

Input Optimizer::LearningRate(const Scope& scope, DType dtype, double base) const {
  if (!decay_.enabled()) return ScalarOf(dtype, base);
  const Scope s = scope.NewSubScope("learning_rate");
  const Output exponent = Div(s, Cast(s, building_step_, dtype),
                              ScalarOf(dtype, static_cast<double>(decay_.decay_steps)));
  return Mul(s, ScalarOf(dtype, base), Pow(s, ScalarOf(dtype, decay_.decay_rate), exponent));
}

StatusOr<Output> Optimizer::Minimize(const Scope& scope, Output loss) {
  return Minimize(scope, loss, Output());
}

StatusOr<Optimizer::GradientsAndVars> Optimizer::ComputeGradients(
    const Scope& scope, Output loss, std::vector<Output> var_list) const {
  if (!scope.ok()) return scope.status();
  const std::string where = name_ + " optimizer: ";
  if (!loss.valid()) return InvalidArgument(where + "the loss is an invalid Output");
  if (!IsFloating(loss.dtype())) {
    return InvalidArgument(where + "the loss '" + loss.name() + "' has dtype " +
                           DTypeName(loss.dtype()) + ", expected float32 or float64");
  }
  if (var_list.empty()) {
    const Graph& graph = *scope.graph();
    for (const std::string& name : graph.GetCollection(kTrainableVariablesCollection)) {
      const Node* node = graph.FindNode(name);
      if (node == nullptr) {
        return NotFound(where + "the trainable variables collection names '" + name +
                        "', which is not a node of the graph");
      }
      var_list.push_back(Output(node));
    }
    if (var_list.empty()) {
      return InvalidArgument(where +
                             "no variables to optimize: var_list is empty and the "
                             "graph has no trainable variables (create them with "
                             "CreateVariable)");
    }
  }
  for (const Output& var : var_list) {
    if (!var.valid()) return InvalidArgument(where + "var_list holds an invalid Output");
  }
  AF_ASSIGN_OR_RETURN(std::vector<Gradient> grads,
                      GradientsWithSlices(scope, {loss}, var_list));
  GradientsAndVars pairs;
  for (size_t i = 0; i < var_list.size(); ++i) {
    if (grads[i].valid()) pairs.emplace_back(grads[i], var_list[i]);
  }
  if (pairs.empty()) {
    return InvalidArgument(where + "no gradients: the loss '" + loss.name() +
                           "' depends on none of the variables " + NamesOf(var_list));
  }
  return pairs;
}

StatusOr<Output> Optimizer::Minimize(const Scope& scope, Output loss, Output global_step,
                                     std::vector<Output> var_list) {
  AF_ASSIGN_OR_RETURN(GradientsAndVars pairs, ComputeGradients(scope, loss, std::move(var_list)));
  return ApplyGradientsGated(scope, pairs, global_step, {loss});
}

}  // namespace actorflow
