// GPU kernels for constants, placeholders, variables and their assignment (and
// IsVariableInitialized and VariableShape, the CPU's kernels: their results stay in
// host memory), NoOp, and the two ends of a cross-device edge (_Send, _Recv).
//
// Variables placed on a GPU hold device tensors in the device's ResourceManager,
// like the CPU's: reading shares the buffer, Assign replaces it, the Apply kernels
// update it in place after copy-on-write (gpu_kernel.h, MakeExclusiveOnDevice).
//
// Partition boundaries: tensors cross devices in host memory. A GPU _Send queues a
// copy into pinned host memory and hands the host tensor to the rendezvous once the
// stream has finished it (one copy, asynchronous); a GPU _Recv takes the host tensor
// from the rendezvous and queues its copy to the device. Integer tensors cross too
// (labels for a GPU loss), though no integer math runs on the GPU: the only integer
// kernels here are _Send/_Recv, Placeholder (fed values stay in host memory) and an
// int32 Const in host memory (see RegisterStateKernels).
#include <memory>
#include <mutex>
#include <string>

#include "graph/types.h"
#include "kernels/cpu/state_kernels.h"
#include "kernels/cpu/variable_update.h"
#include "kernels/cuda/gpu_kernel.h"
#include "kernels/rendezvous.h"
#include "kernels/resource.h"

namespace actorflow {
namespace gpu {
namespace {

// The value attr, copied to the device on first use and shared by every step.
class ConstGpuKernel : public GpuKernel {
 public:
  explicit ConstGpuKernel(const Node& node) : GpuKernel(node), host_(node.attr<Tensor>("value")) {}
  Status Launch(GpuLaunch* l) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!device_value_.IsInitialized()) {
      AF_ASSIGN_OR_RETURN(device_value_, CopyToDevice(l->device, host_));
    }
    l->ctx->set_output(0, device_value_);
    return Status::OK();
  }

 private:
  const Tensor host_;
  std::mutex mu_;
  Tensor device_value_;  // guarded by mu_
};

class VariableGpuKernel : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;
  Status Launch(GpuLaunch* l) override {
    AF_ASSIGN_OR_RETURN(auto var, VariableForNode(l->ctx->resources(), l->ctx->node()));
    std::lock_guard<std::mutex> lock(var->mu);
    if (!var->initialized) return UninitializedVariable(*var);
    // A value put there by host code (a restore) moves to the device once.
    if (!var->value.IsOnDevice()) {
      AF_ASSIGN_OR_RETURN(var->value, CopyToDevice(l->device, var->value));
    }
    l->ctx->set_output(0, var->value);
    return Status::OK();
  }
};

class AssignGpuKernel : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;
  Status Launch(GpuLaunch* l) override {
    const Node& node = l->ctx->node();
    AF_ASSIGN_OR_RETURN(auto var, VariableForNode(l->ctx->resources(), *node.input(0).node));
    const Tensor& value = l->inputs[1];
    AF_RETURN_IF_ERROR(CheckAssign(*var, value, node.attr<bool>("validate_shape")));
    std::lock_guard<std::mutex> lock(var->mu);
    // Shared with the producer of `value`; in-place updates copy first.
    var->value = value;
    var->initialized = true;
    l->ctx->set_output(0, value);
    return Status::OK();
  }
};

RendezvousKey KeyOf(const KernelContext& ctx) {
  const Node& n = ctx.node();
  return RendezvousKey{ctx.step_id(), n.attr<std::string>("tensor_name"),
                       n.attr<std::string>("send_device"), n.attr<std::string>("recv_device")};
}

// The GPU of the kernel's device, made current for this thread.
StatusOr<GpuDevice*> CurrentDevice(const KernelContext& ctx) {
  AF_ASSIGN_OR_RETURN(GpuDevice * device, DeviceFromName(ctx.device_name()));
  if (!MakeCurrent(device).ok()) return Internal("cudaSetDevice");
  return device;
}

// An end of a cross-device edge: fails without a rendezvous (a DirectSession), else
// Transfer()s. Every error names the node.
class CrossDeviceGpuKernel : public Kernel {
 public:
  using Kernel::Kernel;
  bool IsAsync() const final { return true; }
  void Compute(KernelContext*) final {}
  void ComputeAsync(KernelContext* ctx, std::function<void()> done) final {
    if (ctx->rendezvous() == nullptr || ctx->scheduler() == nullptr) {
      Fail(ctx, FailedPrecondition("cross-device edge in a session without a rendezvous "
                                   "(partitioned graphs run only in the actor runtime)"));
      return done();
    }
    Transfer(ctx, std::move(done));
  }

 protected:
  static void Fail(KernelContext* ctx, const Status& s) {
    ctx->SetStatus(s.WithContext(ctx->node().Describe()));
  }
  virtual void Transfer(KernelContext* ctx, std::function<void()> done) = 0;
};

// Input: a device tensor (or a host one, e.g. a feed passed through). Sends its host
// copy once the stream has produced it.
class SendGpuKernel : public CrossDeviceGpuKernel {
 public:
  using CrossDeviceGpuKernel::CrossDeviceGpuKernel;

 protected:
  void Transfer(KernelContext* ctx, std::function<void()> done) override {
    const Tensor& value = ctx->input(0);
    if (!value.IsOnDevice()) {
      Fail(ctx, ctx->rendezvous()->Send(KeyOf(*ctx), value));
      return done();
    }
    auto device = CurrentDevice(*ctx);
    StatusOr<Tensor> host = device.ok() ? QueueCopyToHost(*device, value)
                                        : StatusOr<Tensor>(device.status());
    if (!host.ok()) {
      Fail(ctx, host.status());
      return done();
    }
    Tensor copy = std::move(host).value();
    FinishWhenQueuedWorkDone(
        ctx, *device, [ctx, copy] { Fail(ctx, ctx->rendezvous()->Send(KeyOf(*ctx), copy)); },
        std::move(done));
  }
};

// Output: the received tensor, copied to the device (queued; done once it is there).
class RecvGpuKernel : public CrossDeviceGpuKernel {
 public:
  using CrossDeviceGpuKernel::CrossDeviceGpuKernel;

 protected:
  void Transfer(KernelContext* ctx, std::function<void()> done) override {
    // The rendezvous calls back on the executor's thread.
    ctx->rendezvous()->RecvAsync(
        KeyOf(*ctx), [ctx, done](const Status& status, const Tensor& value) {
          auto device = status.ok() ? CurrentDevice(*ctx) : StatusOr<GpuDevice*>(status);
          StatusOr<Tensor> on_device = value;
          if (!device.ok()) {
            on_device = device.status();
          } else if (!value.IsOnDevice()) {
            on_device = CopyToDevice(*device, value);
          }
          if (!on_device.ok()) {
            Fail(ctx, on_device.status());
            return done();
          }
          ctx->set_output(0, std::move(on_device).value());
          FinishWhenQueuedWorkDone(ctx, *device, nullptr, done);
        });
  }
};

template <typename T>
void RegisterFloatType() {
  constexpr DType dt = DTypeOf<T>::value;
  KernelRegistry& r = KernelRegistry::Global();
  r.Register("Const", kDeviceGpu, dt, MakeKernelFactory<ConstGpuKernel>());
  r.Register("Variable", kDeviceGpu, dt, MakeKernelFactory<VariableGpuKernel>());
  r.Register("Assign", kDeviceGpu, dt, MakeKernelFactory<AssignGpuKernel>());
  r.Register("NoOp", kDeviceGpu, dt, MakeKernelFactory<cpu::NoOpKernel>());
}

bool RegisterStateKernels() {
  RegisterFloatType<float>();
  RegisterFloatType<double>();
  // An int32 constant stays in host memory (the CPU's kernel): the partitioner puts
  // one on the sending device of every cross-device control edge (a _Send's dummy
  // input), and nothing on the GPU computes with integers. The placer sees this
  // kernel, so an int32 Const requested on a GPU stays there, harmlessly. Fed
  // placeholders never run their kernel and a NoOp queues nothing: the CPU's too.
  KernelRegistry::Global().Register("Const", kDeviceGpu, DType::kInt32,
                                    MakeKernelFactory<cpu::ConstKernel>());
  // Whether a variable on the GPU is initialized: a bool in host memory, read from
  // the device's resources by the CPU's kernel (it touches no device memory), so a
  // variable placed on a GPU can be checked where it lives (colocated, a ref input).
  KernelRegistry::Global().Register("IsVariableInitialized", kDeviceGpu, DType::kBool,
                                    MakeKernelFactory<cpu::IsVariableInitializedKernel>());
  // The same for the shape of a variable's live value (a device tensor's shape is
  // host metadata): int64 [rank] in host memory.
  KernelRegistry::Global().Register("VariableShape", kDeviceGpu, DType::kInt64,
                                    MakeKernelFactory<cpu::VariableShapeKernel>());
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kBool}) {
    // Every dtype: the partitioner gives a GPU partition a Placeholder for each fed
    // tensor it consumes (int32 labels for a GPU loss); fed values arrive in host
    // memory and the consumers copy them over.
    KernelRegistry::Global().Register("Placeholder", kDeviceGpu, dt,
                                      MakeKernelFactory<cpu::PlaceholderKernel>());
    KernelRegistry::Global().Register("_Send", kDeviceGpu, dt, MakeKernelFactory<SendGpuKernel>());
    KernelRegistry::Global().Register("_Recv", kDeviceGpu, dt, MakeKernelFactory<RecvGpuKernel>());
  }
  return true;
}

const bool registered = RegisterStateKernels();

}  // namespace
}  // namespace gpu
}  // namespace actorflow
