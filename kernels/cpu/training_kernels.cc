// CPU kernels of the training ops (ApplyGradientDescent, ApplyMomentum, ApplyAdam,
// ApplyAdagrad, ApplyFtrl) for float32 and float64.
//
// Each kernel updates its variable and slot variables in place. The variables are
// reached through the node's ref inputs (Variable nodes) and locked for the whole
// update, several at once in address order so that two updates sharing variables
// cannot deadlock. Writes go through VariableResource::MutableValue(), which copies a
// buffer that a reader still holds (copy-on-write), so a value read earlier in the
// step never changes under its reader.
//
// Errors (naming the node and the variable): FailedPrecondition for an uninitialized
// variable; InvalidArgument for a slot or gradient whose shape differs from the
// variable's, or a hyper-parameter that is not a scalar.

#include <array>
#include <cstdint>
#include <vector>

#include "graph/types.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/variable_update.h"
#include "kernels/kernel.h"
#include "kernels/optimizer_rules.h"
#include "kernels/resource.h"

namespace actorflow {
namespace {

// What one update sees, with every variable locked and writable.
// refs[0] is the variable [n]; refs[1..] its slots [n]; grad [n].
template <typename T>
struct ApplyArgs {
  std::array<T*, LockedVariables::kMaxRefs> refs{};
  const T* grad = nullptr;
  int64_t n = 0;
};

// The shared part of every Apply kernel: finds, locks and checks the variables of the
// ref inputs, checks the scalars and the gradient (LockApplyVariables), then calls
// Update() and outputs the variable's new value. Subclasses implement only the loop
// over the elements, with the rule of kernels/optimizer_rules.h.
template <typename T>
class ApplyKernel : public Kernel {
 public:
  // `grad_input`: the index of the gradient; every other non-ref input is a scalar.
  ApplyKernel(const Node& node, int grad_input) : Kernel(node), grad_input_(grad_input) {}

  void Compute(KernelContext* ctx) final {
    const Node& node = ctx->node();
    StatusOr<LockedVariables> locked =
        LockApplyVariables(ctx->resources(), node, grad_input_, DTypeOf<T>::value,
                           [ctx](int i) -> const Tensor& { return ctx->input(i); }, &variables_);
    if (!locked.ok()) return ctx->SetStatus(locked.status().WithContext(node.Describe()));
    const auto& vars = locked->vars;
    const Tensor& grad = ctx->input(grad_input_);
    ApplyArgs<T> args;
    // MutableValue() on a variable listed twice copies at most once: after the first
    // call its buffer has a single owner.
    for (size_t i = 0; i < vars.size(); ++i) args.refs[i] = vars[i]->MutableValue().data<T>();
    args.grad = grad.data<T>();
    args.n = grad.NumElements();
    Update(*ctx, args);
    ctx->set_output(0, vars[0]->value);
  }

 protected:
  // The scalar input i, as T.
  static T Scalar(const KernelContext& ctx, int i) { return ctx.input(i).data<T>()[0]; }

  // Applies the update to args.refs in place.
  virtual void Update(const KernelContext& ctx, const ApplyArgs<T>& args) = 0;

 private:
  int grad_input_;
  VariableLookupCache variables_;  // the ref inputs' variables, by input index
};

// Inputs: var, alpha, delta.
template <typename T>
class ApplyGradientDescentKernel : public ApplyKernel<T> {
 public:
  explicit ApplyGradientDescentKernel(const Node& node) : ApplyKernel<T>(node, 2) {}

 protected:
  void Update(const KernelContext& ctx, const ApplyArgs<T>& args) override {
    const T alpha = this->Scalar(ctx, 1);
    T* var = args.refs[0];
    const T* grad = args.grad;
    for (int64_t i = 0; i < args.n; ++i) GradientDescentUpdate(var[i], grad[i], alpha);
  }
};

// Inputs: var, accum, lr, grad, momentum.
template <typename T>
class ApplyMomentumKernel : public ApplyKernel<T> {
 public:
  explicit ApplyMomentumKernel(const Node& node)
      : ApplyKernel<T>(node, 3), use_nesterov_(node.attr<bool>("use_nesterov")) {}

 protected:
  void Update(const KernelContext& ctx, const ApplyArgs<T>& args) override {
    const MomentumParams<T> params{this->Scalar(ctx, 2), this->Scalar(ctx, 4), use_nesterov_};
    T* var = args.refs[0];
    T* accum = args.refs[1];
    const T* grad = args.grad;
    for (int64_t i = 0; i < args.n; ++i) MomentumUpdate(var[i], accum[i], grad[i], params);
  }

 private:
  bool use_nesterov_;
};

// Inputs: var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad.
template <typename T>
class ApplyAdamKernel : public ApplyKernel<T> {
 public:
  explicit ApplyAdamKernel(const Node& node) : ApplyKernel<T>(node, 9) {}

 protected:
  void Update(const KernelContext& ctx, const ApplyArgs<T>& args) override {
    const AdamParams<T> params{
        AdamStepSize(this->Scalar(ctx, 5), this->Scalar(ctx, 3), this->Scalar(ctx, 4)),
        this->Scalar(ctx, 6), this->Scalar(ctx, 7), this->Scalar(ctx, 8)};
    T* var = args.refs[0];
    T* m = args.refs[1];
    T* v = args.refs[2];
    const T* grad = args.grad;
    for (int64_t i = 0; i < args.n; ++i) AdamUpdate(var[i], m[i], v[i], grad[i], params);
  }
};

// Inputs: var, accum, lr, grad.
template <typename T>
class ApplyAdagradKernel : public ApplyKernel<T> {
 public:
  explicit ApplyAdagradKernel(const Node& node) : ApplyKernel<T>(node, 3) {}

 protected:
  void Update(const KernelContext& ctx, const ApplyArgs<T>& args) override {
    const T lr = this->Scalar(ctx, 2);
    T* var = args.refs[0];
    T* accum = args.refs[1];
    const T* grad = args.grad;
    for (int64_t i = 0; i < args.n; ++i) AdagradUpdate(var[i], accum[i], grad[i], lr);
  }
};

// Inputs: var, accum, linear, grad, lr, l1, l2, lr_power.
template <typename T>
class ApplyFtrlKernel : public ApplyKernel<T> {
 public:
  explicit ApplyFtrlKernel(const Node& node) : ApplyKernel<T>(node, 3) {}

 protected:
  void Update(const KernelContext& ctx, const ApplyArgs<T>& args) override {
    const FtrlParams<T> params{this->Scalar(ctx, 4), this->Scalar(ctx, 5), this->Scalar(ctx, 6),
                               this->Scalar(ctx, 7)};
    T* var = args.refs[0];
    T* accum = args.refs[1];
    T* linear = args.refs[2];
    const T* grad = args.grad;
    for (int64_t i = 0; i < args.n; ++i) FtrlUpdate(var[i], accum[i], linear[i], grad[i], params);
  }
};

const cpu::CpuKernelRegistrations<ApplyGradientDescentKernel, float, double>
    reg_apply_gradient_descent("ApplyGradientDescent");
const cpu::CpuKernelRegistrations<ApplyMomentumKernel, float, double> reg_apply_momentum(
    "ApplyMomentum");
const cpu::CpuKernelRegistrations<ApplyAdamKernel, float, double> reg_apply_adam("ApplyAdam");
const cpu::CpuKernelRegistrations<ApplyAdagradKernel, float, double> reg_apply_adagrad(
    "ApplyAdagrad");
const cpu::CpuKernelRegistrations<ApplyFtrlKernel, float, double> reg_apply_ftrl("ApplyFtrl");

}  // namespace
}  // namespace actorflow
