// CPU kernels for constants, placeholders, variables and their assignments, and the
// ops that only pass values along (Identity, NoOp).
//
// Variables live in the step's ResourceManager. Reading a variable shares its buffer;
// assignments replace the buffer (Assign) or update it in place after copy-on-write
// (AssignAdd/AssignSub), so a tensor read earlier never changes under its reader.

#include <mutex>
#include <type_traits>

#include "graph/types.h"
#include "kernels/cpu/state_kernels.h"
#include "kernels/cpu/variable_update.h"
#include "kernels/kernel.h"
#include "kernels/resource.h"

namespace actorflow {
namespace cpu {

void PlaceholderKernel::Compute(KernelContext* ctx) {
  const Node& n = ctx->node();
  ctx->SetStatus(InvalidArgument("you must feed a value for placeholder '" + n.name() +
                                 "' with dtype " + DTypeName(n.output_dtype(0)) + " and shape " +
                                 n.output_shape(0).ToString()));
}

}  // namespace cpu

namespace {

using cpu::ConstKernel;
using cpu::NoOpKernel;
using cpu::PlaceholderKernel;

class IdentityKernel : public Kernel {
 public:
  using Kernel::Kernel;
  void Compute(KernelContext* ctx) override { ctx->set_output(0, ctx->input(0)); }
};

class VariableKernel : public Kernel {
 public:
  using Kernel::Kernel;
  void Compute(KernelContext* ctx) override {
    auto var = VariableForNode(ctx->resources(), ctx->node());
    if (!var.ok()) return ctx->SetStatus(var.status());
    std::lock_guard<std::mutex> lock((*var)->mu);
    if (!(*var)->initialized) return ctx->SetStatus(UninitializedVariable(**var));
    ctx->set_output(0, (*var)->value);
  }
};

class AssignKernel : public Kernel {
 public:
  using Kernel::Kernel;
  void Compute(KernelContext* ctx) override {
    const Node& node = ctx->node();
    auto var = VariableForNode(ctx->resources(), *node.input(0).node);
    if (!var.ok()) return ctx->SetStatus(var.status());
    const Tensor& value = ctx->input(1);
    Status valid = CheckAssign(**var, value, node.attr<bool>("validate_shape"));
    if (!valid.ok()) return ctx->SetStatus(valid.WithContext(node.Describe()));
    std::lock_guard<std::mutex> lock((*var)->mu);
    // The new value is shared with the producer of `value`; later in-place updates
    // copy first (Variable::MutableValue), so sharing is safe.
    (*var)->value = value;
    (*var)->initialized = true;
    ctx->set_output(0, value);
  }
};

template <typename T, bool kSubtract>
class AssignUpdateKernel : public Kernel {
 public:
  using Kernel::Kernel;
  void Compute(KernelContext* ctx) override {
    auto var = VariableForNode(ctx->resources(), *ctx->node().input(0).node);
    if (!var.ok()) return ctx->SetStatus(var.status());
    const Tensor& delta = ctx->input(1);
    std::lock_guard<std::mutex> lock((*var)->mu);
    if (!(*var)->initialized) return ctx->SetStatus(UninitializedVariable(**var));
    if ((*var)->value.shape() != delta.shape()) {
      return ctx->Fail(Code::kInvalidArgument,
                       "update of shape " + delta.shape().ToString() + " for variable '" +
                           (*var)->name() + "' of shape " + (*var)->value.shape().ToString());
    }
    Tensor& value = (*var)->MutableValue();
    T* out = value.data<T>();
    const T* d = delta.data<T>();
    const int64_t n = value.NumElements();
    for (int64_t i = 0; i < n; ++i) out[i] = kSubtract ? out[i] - d[i] : out[i] + d[i];
    ctx->set_output(0, value);
  }
};

template <typename T>
void RegisterForType() {
  constexpr DType dt = DTypeOf<T>::value;
  KernelRegistry& r = KernelRegistry::Global();
  r.Register("Const", kDeviceCpu, dt, MakeKernelFactory<ConstKernel>());
  r.Register("Placeholder", kDeviceCpu, dt, MakeKernelFactory<PlaceholderKernel>());
  r.Register("Identity", kDeviceCpu, dt, MakeKernelFactory<IdentityKernel>());
  r.Register("Variable", kDeviceCpu, dt, MakeKernelFactory<VariableKernel>());
  r.Register("Assign", kDeviceCpu, dt, MakeKernelFactory<AssignKernel>());
  if constexpr (!std::is_same_v<T, bool>) {
    r.Register("AssignAdd", kDeviceCpu, dt, MakeKernelFactory<AssignUpdateKernel<T, false>>());
    r.Register("AssignSub", kDeviceCpu, dt, MakeKernelFactory<AssignUpdateKernel<T, true>>());
  }
}

bool RegisterStateKernels() {
  RegisterForType<float>();
  RegisterForType<double>();
  RegisterForType<int32_t>();
  RegisterForType<int64_t>();
  RegisterForType<bool>();
  // NoOp has no inputs or outputs; its kernel dtype is the float32 default.
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kBool}) {
    KernelRegistry::Global().Register("NoOp", kDeviceCpu, dt, MakeKernelFactory<NoOpKernel>());
  }
  return true;
}

const bool registered = RegisterStateKernels();

}  // namespace
}  // namespace actorflow
