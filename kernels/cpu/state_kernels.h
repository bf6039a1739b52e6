// The host-side kernels of state_kernels.cc that other device types register too
// (a GPU keeps constants of integer dtypes, fed placeholders and NoOps in host
// memory, so their kernels are the CPU's).
//
// Thread safety: kernels are immutable after construction; Compute may run on any
// thread.
#ifndef ACTORFLOW_KERNELS_CPU_STATE_KERNELS_H_
#define ACTORFLOW_KERNELS_CPU_STATE_KERNELS_H_

#include "graph/graph.h"
#include "graph/tensor.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {

// Output: the "value" attr (shared, never copied).
class ConstKernel : public Kernel {
 public:
  explicit ConstKernel(const Node& node) : Kernel(node), value_(node.attr<Tensor>("value")) {}
  void Compute(KernelContext* ctx) override { ctx->set_output(0, value_); }

 private:
  const Tensor value_;
};

// Fed placeholders never run their kernel: running one means it was not fed.
class PlaceholderKernel : public Kernel {
 public:
  using Kernel::Kernel;
  void Compute(KernelContext* ctx) override;
};

// IsVariableInitialized: bool [] in host memory, whether the variable of input 0 (a
// ref input: no value is read) holds a value in the device's resources. A variable
// that does not exist there yet is not initialized: the lookup never creates it.
class IsVariableInitializedKernel : public Kernel {
 public:
  using Kernel::Kernel;
  void Compute(KernelContext* ctx) override;
};

// VariableShape: int64 [rank] in host memory, the shape of the value the variable of
// input 0 holds in the device's resources (only its shape is read: the value may be
// a device tensor). FailedPrecondition when it has none; InvalidArgument when it
// holds another dtype than the node declares.
class VariableShapeKernel : public Kernel {
 public:
  using Kernel::Kernel;
  void Compute(KernelContext* ctx) override;
};

class NoOpKernel : public Kernel {
 public:
  using Kernel::Kernel;
  void Compute(KernelContext*) override {}
};

}  // namespace cpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CPU_STATE_KERNELS_H_
