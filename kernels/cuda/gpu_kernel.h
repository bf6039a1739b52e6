// GpuKernel: the base of every GPU kernel (device type "GPU"), and the tensor
// helpers the GPU kernels share. Compiled by the host compiler: it reaches CUDA only through gpu_device.h
// and gpu_launch.h.
//
// How a GPU kernel runs (never blocking the executor's thread):
//  1. ComputeAsync finds the device from the context's device name ("...GPU:<n>"),
//     copies every host input to the device (staged through pinned memory; feeds
//     and constants arrive in host memory) except inputs read only for their shape;
//  2. Launch() checks shapes, allocates device outputs and queues the work on the
//     device's stream, then returns;
//  3. when the stream reaches the end of that work, a stream callback (a CUDA
//     thread) posts the continuation through AsyncScheduler::Post, and the executor
//     resumes on its own thread: an optional After() step runs there (reading back a
//     flag, sending a tensor), then `done`.
// An error in 1 or 2 ends the kernel at once with a status naming the node; a device
// error reported by the stream becomes Internal naming the node.
//
// Memory rule: device tensors are freed to the device's pool as soon as the host
// drops them, possibly before queued kernels have read them; this is safe because
// every use of device memory is queued on the device's single stream (gpu_device.h).
//
// Thread safety: as for every Kernel (Compute may run concurrently for different
// steps); kernels that cache state lock it.
#ifndef ACTORFLOW_KERNELS_CUDA_GPU_KERNEL_H_
#define ACTORFLOW_KERNELS_CUDA_GPU_KERNEL_H_

#include <functional>
#include <string>
#include <vector>

#include "graph/shape.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "graph/types.h"
#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/gpu_launch.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace gpu {

ElemType ElemTypeOf(DType dtype);

// The GPU of a full device name ("/job:localhost/replica:0/task:0/device:GPU:1").
StatusOr<GpuDevice*> DeviceFromName(const std::string& device_name);

// An uninitialized (not zeroed) device tensor from the device's pool.
StatusOr<Tensor> AllocateDeviceTensor(GpuDevice* device, DType dtype, const Shape& shape);

// A new device tensor holding `host`'s bytes: the copy is queued on the stream, so
// the result is ready for any later work on that stream.
StatusOr<Tensor> CopyToDevice(GpuDevice* device, const Tensor& host);

// A host tensor in pinned memory that will hold `device_tensor`'s bytes once the work
// queued so far (including this copy) completes: read it only after that.
StatusOr<Tensor> QueueCopyToHost(GpuDevice* device, const Tensor& device_tensor);

// `t` with a buffer that only it owns, on the device: a host value is copied over, a
// shared device buffer is copied into a fresh one (copy-on-write for variables).
Status MakeExclusiveOnDevice(GpuDevice* device, Tensor* t);

// Up to kMaxDims dims of `shape` with row-major strides; InvalidArgument above that.
StatusOr<StridedIndex> ContiguousIndex(const Shape& shape);

// What a Launch() sees.
struct GpuLaunch {
  KernelContext* ctx = nullptr;
  GpuDevice* device = nullptr;
  // ctx's inputs, on the device (except shape-only inputs, as they came).
  std::vector<Tensor> inputs;
  // Runs on the executor's thread once the queued work completed without a device
  // error, before `done`; may set the kernel's status.
  std::function<void()> after;

  // Allocates output i on the device with the node's output dtype.
  StatusOr<Tensor> AllocateOutput(int i, const Shape& shape);
  // The same for a shape computed from the inputs (broadcast dims, multiples of a dim),
  // as the CPU kernels' AllocateCheckedOutput (kernels/cpu/kernel_util.h): first
  // InvalidArgument "output <i>: ..." when its element or byte count does not fit in
  // int64.
  StatusOr<Tensor> AllocateCheckedOutput(int i, const Shape& shape);
};

class GpuKernel : public Kernel {
 public:
  using Kernel::Kernel;
  bool IsAsync() const final { return true; }
  void Compute(KernelContext* ctx) final;  // fails: GPU kernels are asynchronous
  void ComputeAsync(KernelContext* ctx, std::function<void()> done) final;

 protected:
  // Checks the inputs, allocates and sets the outputs, queues the work. A non-OK
  // status fails the kernel (it is prefixed with the node unless it names it).
  virtual Status Launch(GpuLaunch* launch) = 0;
  // Inputs read only for their shape (ZerosLike's x, SumToShapeOf's like): never
  // copied to the device.
  virtual bool ShapeOnlyInput(int) const { return false; }
};

// Ends a kernel whose work is queued on `device`: `done` runs on the executor's
// thread (through ctx->scheduler()) after the stream reaches this point, preceded by
// `after` when the stream reported no error. Used by GpuKernel and by the kernels
// that manage their own inputs (_Recv).
void FinishWhenQueuedWorkDone(KernelContext* ctx, GpuDevice* device, std::function<void()> after,
                              std::function<void()> done);

// Registers K<T> as the GPU kernel of `op` for each T in Ts.
template <template <typename> class K, typename... Ts>
struct GpuKernelRegistrations {
  explicit GpuKernelRegistrations(const char* op) {
    (KernelRegistry::Global().Register(op, kDeviceGpu, DTypeOf<Ts>::value,
                                       MakeKernelFactory<K<Ts>>()),
     ...);
  }
};

}  // namespace gpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CUDA_GPU_KERNEL_H_
