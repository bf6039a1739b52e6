// Registers the CUDA runtime with kernels/gpu_runtime.h at static initialization, so
// that a binary linking kernels/cuda finds its GPUs (or learns why there are none)
// without any code outside kernels/cuda knowing about CUDA.
#include <cstring>
#include <string>

#include "kernels/cuda/gpu_device.h"
#include "kernels/gpu_runtime.h"

namespace actorflow {
namespace gpu {
namespace {

class CudaRuntime : public GpuRuntime {
 public:
  int DeviceCount() const override { return ProbeGpus().count; }
  std::string Describe() const override { return ProbeGpus().description; }

  StatusOr<Tensor> CopyToHost(const Tensor& device_tensor) const override {
    if (!device_tensor.IsOnDevice()) {
      return InvalidArgument("CopyToHost of a host tensor " + device_tensor.DebugString());
    }
    Tensor host(device_tensor.dtype(), device_tensor.shape());
    const size_t bytes = device_tensor.TotalBytes();
    if (bytes == 0) return host;
    GpuError error;
    GpuDevice* device = DeviceOfPointer(device_tensor.raw_data(), &error);
    if (device == nullptr) {
      return Internal("copying " + device_tensor.DebugString() + " to the host: " +
                      error.message());
    }
    // The stream belongs to its device: make that one current on this thread.
    error = MakeCurrent(device);
    if (!error.ok()) return Internal(error.message());
    void* pinned = nullptr;
    error = AllocatePinned(device, bytes, &pinned);
    if (!error.ok()) return ResourceExhausted(error.message());
    // Queued after everything already on the stream, so the tensor is complete.
    error = CopyDeviceToHost(device, pinned, device_tensor.raw_data(), bytes);
    if (error.ok()) error = Synchronize(device);
    if (error.ok()) std::memcpy(host.raw_data(), pinned, bytes);
    FreePinned(device, pinned, bytes);
    if (!error.ok()) {
      return Internal("copying " + device_tensor.DebugString() + " to the host: " +
                      error.message());
    }
    return host;
  }
};

// Never destroyed: code running during static destruction may still ask.
const bool registered = [] {
  RegisterGpuRuntime(new CudaRuntime());
  return true;
}();

}  // namespace
}  // namespace gpu
}  // namespace actorflow
