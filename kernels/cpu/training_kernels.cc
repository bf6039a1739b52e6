// CPU kernels of the training ops (ApplyGradientDescent, ApplyMomentum, ApplyAdam,
// ApplyAdagrad) for float32 and float64.
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

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/types.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/kernel.h"
#include "kernels/resource.h"

namespace actorflow {
namespace {

// What one update sees, with every variable locked and writable.
// refs[0] is the variable [n]; refs[1..] its slots [n]; grad [n].
template <typename T>
struct ApplyArgs {
  std::vector<T*> refs;
  const T* grad = nullptr;
  int64_t n = 0;
};

// The shared part of every Apply kernel: finds, locks and checks the variables of the
// ref inputs, checks the scalars and the gradient, then calls Update() and outputs
// the variable's new value. Subclasses implement only the arithmetic.
template <typename T>
class ApplyKernel : public Kernel {
 public:
  // `grad_input`: the index of the gradient; every other non-ref input is a scalar.
  ApplyKernel(const Node& node, int grad_input) : Kernel(node), grad_input_(grad_input) {}

  void Compute(KernelContext* ctx) final {
    const Node& node = ctx->node();
    // The op set declares the refs as inputs 0..num_refs-1.
    const int num_refs = static_cast<int>(node.op_def().ref_inputs.size());
    const int grad_input = grad_input_;

    std::vector<std::shared_ptr<VariableResource>> vars;
    for (int i = 0; i < num_refs; ++i) {
      auto var = VariableForNode(ctx->resources(), *node.input(i).node);
      if (!var.ok()) return ctx->SetStatus(var.status().WithContext(node.Describe()));
      vars.push_back(std::move(var).value());
    }
    for (int i = num_refs; i < node.num_inputs(); ++i) {
      if (i != grad_input && ctx->input(i).rank() != 0) {
        return ctx->Fail(Code::kInvalidArgument,
                         "input " + std::to_string(i) + " ('" + node.input(i).ToString() +
                             "') must be a scalar, got shape " + ctx->input(i).shape().ToString());
      }
    }

    // Lock each distinct variable once, in address order.
    std::vector<VariableResource*> order;
    for (const auto& v : vars) order.push_back(v.get());
    std::sort(order.begin(), order.end());
    order.erase(std::unique(order.begin(), order.end()), order.end());
    std::vector<std::unique_lock<std::mutex>> locks;
    locks.reserve(order.size());
    for (VariableResource* v : order) locks.emplace_back(v->mu);

    for (const auto& v : vars) {
      if (!v->initialized) {
        return ctx->Fail(Code::kFailedPrecondition, "attempting to use uninitialized value '" +
                                                        v->name() +
                                                        "': run its initializer (an Assign) first");
      }
      if (v->value.dtype() != DTypeOf<T>::value) {
        return ctx->Fail(Code::kInvalidArgument, "variable '" + v->name() + "' holds " +
                                                     v->value.DebugString() + ", expected dtype " +
                                                     DTypeName(DTypeOf<T>::value));
      }
    }
    const Shape& var_shape = vars[0]->value.shape();
    for (int i = 1; i < num_refs; ++i) {
      if (vars[i]->value.shape() != var_shape) {
        return ctx->Fail(Code::kInvalidArgument,
                         "slot variable '" + vars[i]->name() + "' has shape " +
                             vars[i]->value.shape().ToString() + " but variable '" +
                             vars[0]->name() + "' has shape " + var_shape.ToString());
      }
    }
    const Tensor& grad = ctx->input(grad_input);
    if (grad.shape() != var_shape) {
      return ctx->Fail(Code::kInvalidArgument, "gradient of shape " + grad.shape().ToString() +
                                                   " for variable '" + vars[0]->name() +
                                                   "' of shape " + var_shape.ToString());
    }

    ApplyArgs<T> args;
    // MutableValue() on a variable listed twice copies at most once: after the first
    // call its buffer has a single owner.
    for (const auto& v : vars) args.refs.push_back(v->MutableValue().data<T>());
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
    for (int64_t i = 0; i < args.n; ++i) var[i] -= alpha * grad[i];
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
    const T lr = this->Scalar(ctx, 2);
    const T momentum = this->Scalar(ctx, 4);
    T* var = args.refs[0];
    T* accum = args.refs[1];
    const T* grad = args.grad;
    if (use_nesterov_) {
      for (int64_t i = 0; i < args.n; ++i) {
        accum[i] = accum[i] * momentum + grad[i];
        var[i] -= lr * grad[i] + lr * momentum * accum[i];
      }
    } else {
      for (int64_t i = 0; i < args.n; ++i) {
        accum[i] = accum[i] * momentum + grad[i];
        var[i] -= lr * accum[i];
      }
    }
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
    const T beta1_power = this->Scalar(ctx, 3);
    const T beta2_power = this->Scalar(ctx, 4);
    const T lr = this->Scalar(ctx, 5);
    const T beta1 = this->Scalar(ctx, 6);
    const T beta2 = this->Scalar(ctx, 7);
    const T epsilon = this->Scalar(ctx, 8);
    const T one = T(1);
    const T lr_t = lr * std::sqrt(one - beta2_power) / (one - beta1_power);
    T* var = args.refs[0];
    T* m = args.refs[1];
    T* v = args.refs[2];
    const T* grad = args.grad;
    for (int64_t i = 0; i < args.n; ++i) {
      const T g = grad[i];
      m[i] = beta1 * m[i] + (one - beta1) * g;
      v[i] = beta2 * v[i] + (one - beta2) * g * g;
      var[i] -= lr_t * m[i] / (std::sqrt(v[i]) + epsilon);
    }
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
    for (int64_t i = 0; i < args.n; ++i) {
      const T g = grad[i];
      accum[i] += g * g;
      var[i] -= lr * g / std::sqrt(accum[i]);
    }
  }
};

const cpu::CpuKernelRegistrations<ApplyGradientDescentKernel, float, double>
    reg_apply_gradient_descent("ApplyGradientDescent");
const cpu::CpuKernelRegistrations<ApplyMomentumKernel, float, double> reg_apply_momentum(
    "ApplyMomentum");
const cpu::CpuKernelRegistrations<ApplyAdamKernel, float, double> reg_apply_adam("ApplyAdam");
const cpu::CpuKernelRegistrations<ApplyAdagradKernel, float, double> reg_apply_adagrad(
    "ApplyAdagrad");

}  // namespace
}  // namespace actorflow
