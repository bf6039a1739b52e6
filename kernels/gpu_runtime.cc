#include "kernels/gpu_runtime.h"

#include <atomic>

namespace actorflow {
namespace {

// A function-local static: registration runs from other translation units' static
// initializers, whose order relative to this file's is unspecified.
std::atomic<const GpuRuntime*>& Slot() {
  static std::atomic<const GpuRuntime*> slot{nullptr};
  return slot;
}

}  // namespace

void RegisterGpuRuntime(const GpuRuntime* runtime) { Slot().store(runtime); }

const GpuRuntime* GetGpuRuntime() { return Slot().load(); }

int GpuDeviceCount() {
  const GpuRuntime* runtime = GetGpuRuntime();
  return runtime == nullptr ? 0 : runtime->DeviceCount();
}

std::string DescribeGpus() {
  const GpuRuntime* runtime = GetGpuRuntime();
  return runtime == nullptr ? "this build has no GPU support (build with --config=cuda)"
                            : runtime->Describe();
}

StatusOr<Tensor> ToHostTensor(const Tensor& t) {
  if (!t.IsOnDevice()) return t;
  const GpuRuntime* runtime = GetGpuRuntime();
  if (runtime == nullptr) {
    return Internal("a device tensor " + t.DebugString() +
                    " reached host code in a process without a GPU runtime");
  }
  return runtime->CopyToHost(t);
}

}  // namespace actorflow
