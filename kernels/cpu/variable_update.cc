#include "kernels/cpu/variable_update.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <vector>
#include <string>
#include <utility>

namespace actorflow {

Status UninitializedVariable(const VariableResource& var) {
  return FailedPrecondition("attempting to use uninitialized value '" + var.name() +
                            "': run its initializer (an Assign) first");
}

Status CheckAssign(const VariableResource& var, const Tensor& value, bool validate_shape) {
  if (validate_shape && !var.declared_shape().IsCompatibleWith(value.shape())) {
    return InvalidArgument("cannot assign a value of shape " + value.shape().ToString() +
                           " to variable '" + var.name() + "' of shape " +
                           var.declared_shape().ToString());
  }
  return Status::OK();
}

StatusOr<LockedVariables> LockApplyVariables(ResourceManager* resources, const Node& node,
                                             int grad_input, DType dtype,
                                             const std::function<const Tensor&(int)>& input,
                                             VariableLookupCache* cache, int indices_input) {
  // The op set declares the refs as inputs 0..num_refs-1.
  const int num_refs = static_cast<int>(node.op_def().ref_inputs.size());
  if (num_refs < 1 || num_refs > LockedVariables::kMaxRefs) {
    return Internal("an update of " + std::to_string(num_refs) + " variables (op " + node.op() +
                    "): between 1 and " + std::to_string(LockedVariables::kMaxRefs) +
                    " are supported");
  }
  LockedVariables locked;
  LockedVariables::Variables& vars = locked.vars;
  for (int i = 0; i < num_refs; ++i) {
    const Node& ref = *node.input(i).node;
    AF_ASSIGN_OR_RETURN(auto var, cache != nullptr ? cache->Get(resources, ref, i)
                                                   : VariableForNode(resources, ref));
    vars.push_back(std::move(var));
  }
  for (int i = num_refs; i < node.num_inputs(); ++i) {
    if (i != grad_input && i != indices_input && input(i).rank() != 0) {
      return InvalidArgument("input " + std::to_string(i) + " ('" + node.input(i).ToString() +
                             "') must be a scalar, got shape " + input(i).shape().ToString());
    }
  }

  std::array<VariableResource*, LockedVariables::kMaxRefs> order;
  for (int i = 0; i < num_refs; ++i) order[i] = vars[i].get();
  // At most kMaxRefs entries: an insertion sort.
  for (int i = 1; i < num_refs; ++i) {
    for (int j = i; j > 0 && std::less<>()(order[j], order[j - 1]); --j) {
      std::swap(order[j - 1], order[j]);
    }
  }
  const auto distinct = std::unique(order.begin(), order.begin() + num_refs);
  for (auto it = order.begin(); it != distinct; ++it) {
    locked.locks[it - order.begin()] = std::unique_lock<std::mutex>((*it)->mu);
  }

  for (const auto& v : vars) {
    if (!v->initialized) return UninitializedVariable(*v);
    if (v->value.dtype() != dtype) {
      return InvalidArgument("variable '" + v->name() + "' holds " + v->value.DebugString() +
                             ", expected dtype " + DTypeName(dtype));
    }
  }
  const Shape& var_shape = vars[0]->value.shape();
  for (int i = 1; i < num_refs; ++i) {
    if (vars[i]->value.shape() != var_shape) {
      return InvalidArgument("slot variable '" + vars[i]->name() + "' has shape " +
                             vars[i]->value.shape().ToString() + " but variable '" +
                             vars[0]->name() + "' has shape " + var_shape.ToString());
    }
  }
  const Tensor& grad = input(grad_input);
  if (indices_input >= 0) {
    const Tensor& indices = input(indices_input);
    if (indices.rank() != 1 ||
        (indices.dtype() != DType::kInt32 && indices.dtype() != DType::kInt64)) {
      return InvalidArgument("indices must be an int32 or int64 vector, got " +
                             indices.DebugString());
    }
    std::vector<int64_t> rows = var_shape.dims();
    if (rows.empty()) {
      return InvalidArgument("variable '" + vars[0]->name() + "' is a scalar: it has no rows");
    }
    rows[0] = indices.dim(0);
    if (grad.shape() != Shape(rows)) {
      return InvalidArgument("gradient of shape " + grad.shape().ToString() + " for " +
                             std::to_string(indices.dim(0)) + " rows of variable '" +
                             vars[0]->name() + "' of shape " + var_shape.ToString() +
                             ": expected " + Shape(rows).ToString());
    }
    return locked;
  }
  if (grad.shape() != var_shape) {
    return InvalidArgument("gradient of shape " + grad.shape().ToString() + " for variable '" +
                           vars[0]->name() + "' of shape " + var_shape.ToString());
  }
  return locked;
}

}  // namespace actorflow
