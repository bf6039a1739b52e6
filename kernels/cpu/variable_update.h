// What every kernel that reads or updates a variable in place checks first, shared by
// the CPU and the GPU kernels (kernels/cuda/ links the CPU kernels): the one message
// for an uninitialized variable, the checks of an Assign, and LockApplyVariables, the
// lock-and-check step of the Apply* training kernels.
//
// Thread safety: LockedVariables holds the variables' mutexes until it is destroyed;
// the functions are otherwise pure.
#ifndef ACTORFLOW_KERNELS_CPU_VARIABLE_UPDATE_H_
#define ACTORFLOW_KERNELS_CPU_VARIABLE_UPDATE_H_

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/resource.h"

namespace actorflow {

// FailedPrecondition naming `var` and what to do about it.
Status UninitializedVariable(const VariableResource& var);

// InvalidArgument when Assign's `value` cannot go into `var` (validate_shape and a
// shape unlike the declared one).
Status CheckAssign(const VariableResource& var, const Tensor& value, bool validate_shape);

// The variables of an Apply node's ref inputs, locked. vars[0] is the variable being
// updated, vars[1..] its slots, in input order (a variable may appear twice; it is
// locked once).
struct LockedVariables {
  std::vector<std::shared_ptr<VariableResource>> vars;
  std::vector<std::unique_lock<std::mutex>> locks;
};

// For an Apply* node whose ref inputs are inputs 0..k-1 and whose gradient is input
// `grad_input` (every other input a scalar hyper-parameter): finds its variables,
// locks each once in address order (so two updates sharing variables cannot
// deadlock), and checks that every variable is initialized and holds `dtype`, that
// the slots and the gradient have the variable's shape, and that the
// hyper-parameters are scalars. `input(i)` gives input i. Errors name the variable or
// the input but not the node (the caller adds it): FailedPrecondition
// (UninitializedVariable), InvalidArgument otherwise; on error nothing stays locked.
// `cache`, when given, keeps the ref inputs' variables between calls (by input index).
// A SparseApply* node passes `indices_input` >= 0: its row ids, an int32/int64 [n]
// tensor, and a gradient of the rows, [n, var[1:]], instead of the variable's shape.
StatusOr<LockedVariables> LockApplyVariables(ResourceManager* resources, const Node& node,
                                             int grad_input, DType dtype,
                                             const std::function<const Tensor&(int)>& input,
                                             VariableLookupCache* cache = nullptr,
                                             int indices_input = -1);

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CPU_VARIABLE_UPDATE_H_
