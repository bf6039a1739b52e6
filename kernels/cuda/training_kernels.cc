// GPU kernels of the training ops (ApplyGradientDescent, ApplyMomentum, ApplyAdam,
// ApplyAdagrad), float32 and float64, with the CPU kernels' checks and messages
// (kernels/cpu/training_kernels.cc; both check with LockApplyVariables). The
// arithmetic is kernels/optimizer_rules.h's, in training.cu.
//
// The variables are locked (in address order) only while the update is queued: the
// stream orders it after every earlier read that was queued, and copy-on-write
// (MakeExclusiveOnDevice) keeps a buffer that a reader still holds unchanged. The
// hyper-parameters stay on the device: the update kernel reads them there.
#include <vector>

#include "kernels/cpu/variable_update.h"
#include "kernels/cuda/gpu_kernel.h"
#include "kernels/resource.h"

namespace actorflow {
namespace gpu {
namespace {

Status Queued(const GpuError& e) { return e.ok() ? Status::OK() : Internal(e.message()); }

template <typename T>
class ApplyGpuKernel : public GpuKernel {
 public:
  // `grad_input`: the index of the gradient; every other non-ref input is a scalar.
  ApplyGpuKernel(const Node& node, int grad_input) : GpuKernel(node), grad_input_(grad_input) {}

  Status Launch(GpuLaunch* l) final {
    const Node& node = l->ctx->node();
    AF_ASSIGN_OR_RETURN(LockedVariables locked,
                        LockApplyVariables(l->ctx->resources(), node, grad_input_,
                                           DTypeOf<T>::value,
                                           [l](int i) -> const Tensor& { return l->inputs[i]; }));
    const Tensor& grad = l->inputs[grad_input_];
    std::vector<void*> refs;
    // A variable listed twice is made exclusive once: the second call finds it so.
    for (const auto& v : locked.vars) {
      AF_RETURN_IF_ERROR(MakeExclusiveOnDevice(l->device, &v->value));
      refs.push_back(v->value.raw_data());
    }
    AF_RETURN_IF_ERROR(Queued(Update(l, refs, grad.raw_data(), grad.NumElements())));
    l->ctx->set_output(0, locked.vars[0]->value);
    return Status::OK();
  }

 protected:
  static constexpr ElemType kType = DTypeOf<T>::value == DType::kFloat32 ? ElemType::kFloat32
                                                                         : ElemType::kFloat64;
  // The device address of scalar input i.
  static const void* Scalar(const GpuLaunch* l, int i) { return l->inputs[i].raw_data(); }
  virtual GpuError Update(const GpuLaunch* l, const std::vector<void*>& refs, const void* grad,
                          int64_t n) = 0;

 private:
  const int grad_input_;
};

// Inputs: var, alpha, delta.
template <typename T>
class ApplyGradientDescentGpu : public ApplyGpuKernel<T> {
 public:
  explicit ApplyGradientDescentGpu(const Node& node) : ApplyGpuKernel<T>(node, 2) {}
  GpuError Update(const GpuLaunch* l, const std::vector<void*>& refs, const void* grad,
                  int64_t n) override {
    return ApplyGradientDescent(l->device, this->kType, refs[0], this->Scalar(l, 1), grad, n);
  }
};

// Inputs: var, accum, lr, grad, momentum.
template <typename T>
class ApplyMomentumGpu : public ApplyGpuKernel<T> {
 public:
  explicit ApplyMomentumGpu(const Node& node)
      : ApplyGpuKernel<T>(node, 3), use_nesterov_(node.attr<bool>("use_nesterov")) {}
  GpuError Update(const GpuLaunch* l, const std::vector<void*>& refs, const void* grad,
                  int64_t n) override {
    return ApplyMomentum(l->device, this->kType, refs[0], refs[1], this->Scalar(l, 2), grad,
                         this->Scalar(l, 4), use_nesterov_, n);
  }

 private:
  const bool use_nesterov_;
};

// Inputs: var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad.
template <typename T>
class ApplyAdamGpu : public ApplyGpuKernel<T> {
 public:
  explicit ApplyAdamGpu(const Node& node) : ApplyGpuKernel<T>(node, 9) {}
  GpuError Update(const GpuLaunch* l, const std::vector<void*>& refs, const void* grad,
                  int64_t n) override {
    return ApplyAdam(l->device, this->kType, refs[0], refs[1], refs[2], this->Scalar(l, 3),
                     this->Scalar(l, 4), this->Scalar(l, 5), this->Scalar(l, 6),
                     this->Scalar(l, 7), this->Scalar(l, 8), grad, n);
  }
};

// Inputs: var, accum, lr, grad.
template <typename T>
class ApplyAdagradGpu : public ApplyGpuKernel<T> {
 public:
  explicit ApplyAdagradGpu(const Node& node) : ApplyGpuKernel<T>(node, 3) {}
  GpuError Update(const GpuLaunch* l, const std::vector<void*>& refs, const void* grad,
                  int64_t n) override {
    return ApplyAdagrad(l->device, this->kType, refs[0], refs[1], this->Scalar(l, 2), grad, n);
  }
};

const GpuKernelRegistrations<ApplyGradientDescentGpu, float, double> reg_gradient_descent(
    "ApplyGradientDescent");
const GpuKernelRegistrations<ApplyMomentumGpu, float, double> reg_momentum("ApplyMomentum");
const GpuKernelRegistrations<ApplyAdamGpu, float, double> reg_adam("ApplyAdam");
const GpuKernelRegistrations<ApplyAdagradGpu, float, double> reg_adagrad("ApplyAdagrad");

}  // namespace
}  // namespace gpu
}  // namespace actorflow
