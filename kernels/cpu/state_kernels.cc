// CPU kernels for constants, placeholders, variables, their assignments, whether they
// are initialized and the shape of their live value, and the ops that only pass
// values along (Identity, NoOp).
//
// Variables live in the step's ResourceManager. Reading a variable shares its buffer;
// assignments replace the buffer (Assign) or update it in place after copy-on-write
// (AssignAdd/AssignSub), so a tensor read earlier never changes under its reader.

#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

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

namespace {

// The variable of `variable_node` in `resources`, keyed as VariableForNode keys it,
// looked up without creating it: NotFound when it does not exist there.
StatusOr<std::shared_ptr<VariableResource>> FindVariable(ResourceManager* resources,
                                                         const Node& variable_node) {
  const std::string& shared_name = variable_node.attr<std::string>("shared_name");
  return resources->LookupVariable(variable_node.attr<std::string>("container"),
                                   shared_name.empty() ? variable_node.name() : shared_name);
}

}  // namespace

void IsVariableInitializedKernel::Compute(KernelContext* ctx) {
  auto var = FindVariable(ctx->resources(), *ctx->node().input(0).node);
  bool initialized = false;
  if (var.ok()) {
    std::lock_guard<std::mutex> lock((*var)->mu);
    initialized = (*var)->initialized;
  }
  ctx->set_output(0, Tensor::Scalar(initialized));
}

void VariableShapeKernel::Compute(KernelContext* ctx) {
  const Node& variable = *ctx->node().input(0).node;
  auto var = FindVariable(ctx->resources(), variable);
  if (!var.ok()) {
    return ctx->SetStatus(FailedPrecondition(ctx->node().Describe() + ": variable '" +
                                             variable.name() + "' has no value on this device "
                                             "yet: run its initializer (an Assign) first"));
  }
  std::vector<int64_t> dims;
  {
    std::lock_guard<std::mutex> lock((*var)->mu);
    if (!(*var)->initialized) {
      return ctx->SetStatus(UninitializedVariable(**var).WithContext(ctx->node().Describe()));
    }
    const DType declared = variable.attr<DType>("dtype");
    if ((*var)->dtype() != declared) {
      return ctx->SetStatus(InvalidArgument(
          ctx->node().Describe() + ": variable '" + variable.name() + "' holds dtype " +
          DTypeName((*var)->dtype()) + " on this device, but the graph declares " +
          DTypeName(declared)));
    }
    dims = (*var)->value.shape().dims();
  }
  ctx->set_output(0, Tensor::FromVector<int64_t>(dims));
}

}  // namespace cpu

namespace {

using cpu::ConstKernel;
using cpu::IsVariableInitializedKernel;
using cpu::NoOpKernel;
using cpu::VariableShapeKernel;
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
  // Its only non-ref value is its bool output: one kernel for variables of any dtype.
  KernelRegistry::Global().Register("IsVariableInitialized", kDeviceCpu, DType::kBool,
                                    MakeKernelFactory<IsVariableInitializedKernel>());
  KernelRegistry::Global().Register("VariableShape", kDeviceCpu, DType::kInt64,
                                    MakeKernelFactory<VariableShapeKernel>());
  // NoOp has no inputs or outputs; its kernel dtype is the float32 default.
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kBool}) {
    KernelRegistry::Global().Register("NoOp", kDeviceCpu, dt, MakeKernelFactory<NoOpKernel>());
  }
  return true;
}

const bool state_kernels_registered = RegisterStateKernels();

}  // namespace
}  // namespace actorflow
