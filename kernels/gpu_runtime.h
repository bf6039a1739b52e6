// The GPU runtime as code outside kernels/cuda sees it: how many GPUs this process
// can use, and how a caller that may block gets a device tensor's bytes. It names no
// CUDA type and needs no CUDA to build.
//
// A GPU library (kernels/cuda, linked only under --config=cuda) registers its runtime
// at static-initialization time. Without one, or with one that finds no usable
// device (no driver, no GPU), GpuDeviceCount() is 0 and everything runs on CPUs: no
// caller needs to know whether the build has CUDA.
//
// Thread safety: registration happens during static initialization; everything else
// may be called from any thread.
#ifndef ACTORFLOW_KERNELS_GPU_RUNTIME_H_
#define ACTORFLOW_KERNELS_GPU_RUNTIME_H_

#include <string>

#include "graph/status.h"
#include "graph/tensor.h"

namespace actorflow {

class GpuRuntime {
 public:
  virtual ~GpuRuntime() = default;
  // The number of usable GPUs; 0 when the driver or the devices are missing.
  virtual int DeviceCount() const = 0;
  // One line saying what was found, e.g. "no GPU: cudaGetDeviceCount returned
  // cudaErrorInsufficientDriver (35): ..." or "1 GPU: NVIDIA H100 (sm_90)".
  virtual std::string Describe() const = 0;
  // Copies a device tensor into a new host tensor and waits for the copy, after the
  // work already queued on the tensor's device. Only for callers that may block (a
  // client thread receiving fetches, a test), never for a device actor.
  // InvalidArgument for a host tensor.
  virtual StatusOr<Tensor> CopyToHost(const Tensor& device_tensor) const = 0;
};

// Called once, at static initialization, by the linked GPU library; the runtime must
// live until the process ends. A second registration replaces the first.
void RegisterGpuRuntime(const GpuRuntime* runtime);

// The registered runtime, or nullptr in a build without GPU support.
const GpuRuntime* GetGpuRuntime();

// GetGpuRuntime()->DeviceCount(), or 0 without a runtime.
int GpuDeviceCount();

// Why GpuDeviceCount() is what it is: the runtime's Describe(), or "this build has
// no GPU support (build with --config=cuda)".
std::string DescribeGpus();

// `t` itself when it is in host memory (or uninitialized), else a host copy made by
// the GPU runtime (Internal when none is registered). May block: see CopyToHost.
StatusOr<Tensor> ToHostTensor(const Tensor& t);

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_GPU_RUNTIME_H_
