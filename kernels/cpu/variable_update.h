// What every kernel that reads or updates a variable in place checks first, shared by
// the CPU and the GPU kernels (kernels/cuda/ links the CPU kernels): the one message
// for an uninitialized variable, the checks of an Assign, and LockApplyVariables, the
// lock-and-check step of the Apply* training kernels.
//
// Thread safety: LockedVariables holds the variables' mutexes until it is destroyed;
// the functions are otherwise pure.
#ifndef ACTORFLOW_KERNELS_CPU_VARIABLE_UPDATE_H_
#define ACTORFLOW_KERNELS_CPU_VARIABLE_UPDATE_H_

#include <array>
#include <cstddef>
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
// locked once). Held inline, not on the heap: a training step runs an update per
// variable, and allocations were a visible share of a small model's step.
struct LockedVariables {
  // More ref inputs than any Apply op has (FTRL and Adam: 3); an op with more is
  // refused by LockApplyVariables (Internal).
  static constexpr int kMaxRefs = 8;

  class Variables {
   public:
    using Item = std::shared_ptr<VariableResource>;
    const Item* begin() const { return items_.data(); }
    const Item* end() const { return items_.data() + size_; }
    size_t size() const { return size_; }
    const Item& operator[](size_t i) const { return items_[i]; }
    // Precondition: size() < kMaxRefs.
    void push_back(Item v) { items_[size_++] = std::move(v); }

   private:
    std::array<Item, kMaxRefs> items_;
    size_t size_ = 0;
  };

  Variables vars;
  // The held locks first, default (unlocked) ones after. Declared after `vars`, so
  // they are released before the variables holding the mutexes can go.
  std::array<std::unique_lock<std::mutex>, kMaxRefs> locks;
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
