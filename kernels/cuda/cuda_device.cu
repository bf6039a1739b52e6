// GPU devices: probing, per-device stream and cuBLAS handle, the caching pools of
// device and pinned memory, copies and completion callbacks (gpu_device.h).
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_internal.cuh"

namespace actorflow {
namespace gpu {
namespace {

// The compute capability the fat binary targets (sm_80, sm_90, PTX for compute_90):
// older devices cannot run its kernels and are not counted.
constexpr int kMinMajor = 8;

// Size classes: 512-byte steps below 1 MiB, then 1 MiB steps, so that a block serves
// every request within its class and the pool stays small.
size_t RoundUp(size_t bytes) {
  constexpr size_t kSmall = 512;
  constexpr size_t kLarge = size_t{1} << 20;
  const size_t step = bytes < kLarge ? kSmall : kLarge;
  return (bytes + step - 1) / step * step;
}

GpuProbe Probe() {
  GpuProbe probe;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();  // not sticky: leave the runtime clean for later callers
    probe.description = "no GPU: cudaGetDeviceCount returned " +
                        std::string(cudaGetErrorName(e)) + " (" +
                        std::to_string(static_cast<int>(e)) + "): " + cudaGetErrorString(e);
    return probe;
  }
  if (count == 0) {
    probe.description = "no GPU: cudaGetDeviceCount found 0 devices";
    return probe;
  }
  std::string usable;
  std::string skipped;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
      cudaGetLastError();
      skipped += " " + std::to_string(i) + " (properties unavailable)";
      continue;
    }
    const std::string what = std::to_string(i) + ": " + prop.name + " (sm_" +
                             std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
                             std::to_string(prop.totalGlobalMem >> 30) + " GiB)";
    // Ordinals stay dense: a usable device after an unusable one would get the
    // wrong ordinal, so counting stops at the first device that cannot run.
    if (prop.major < kMinMajor || !skipped.empty()) {
      skipped += " " + what;
      continue;
    }
    ++probe.count;
    usable += (usable.empty() ? "" : "; ") + what;
  }
  probe.description = std::to_string(probe.count) + " GPU(s)" +
                      (usable.empty() ? "" : ": " + usable) +
                      (skipped.empty() ? "" : "; not used (needs sm_80 or newer):" + skipped);
  return probe;
}

std::mutex& DevicesMutex() {
  static std::mutex mu;
  return mu;
}

// Devices live until the process ends (never destroyed: tensors freed during
// static destruction may still return blocks to their pools).
std::vector<GpuDevice*>& Devices() {
  static auto* devices = new std::vector<GpuDevice*>();
  return *devices;
}

GpuError CreateDevice(int ordinal, GpuDevice** out) {
  cudaError_t e = cudaSetDevice(ordinal);
  if (e != cudaSuccess) return CudaError("cudaSetDevice(" + std::to_string(ordinal) + ")", e);
  auto device = std::make_unique<GpuDevice>();
  device->ordinal = ordinal;
  e = cudaStreamCreateWithFlags(&device->stream, cudaStreamNonBlocking);
  if (e != cudaSuccess) return CudaError("cudaStreamCreateWithFlags", e);
  GpuError blas = CreateBlasHandle(device.get());
  if (!blas.ok()) {
    cudaStreamDestroy(device->stream);
    return blas;
  }
  *out = device.release();
  return GpuError();
}

// Moves pinned blocks whose copies have completed back to the free lists.
// Precondition: pinned_pool.mu held.
void ReclaimPinned(GpuDevice* device) {
  auto& pending = device->pending_pinned;
  for (size_t i = 0; i < pending.size();) {
    if (cudaEventQuery(pending[i].event) != cudaSuccess) {
      cudaGetLastError();  // cudaErrorNotReady is not an error worth keeping
      ++i;
      continue;
    }
    device->pinned_pool.free_blocks[pending[i].rounded].push_back(pending[i].block);
    device->pinned_pool.bytes_cached += pending[i].rounded;
    device->spare_events.push_back(pending[i].event);
    pending[i] = pending.back();
    pending.pop_back();
  }
}

// Precondition: pool.mu held. A cached block of the class, or nullptr.
void* TakeCached(BlockPool& pool, size_t rounded) {
  auto it = pool.free_blocks.find(rounded);
  if (it == pool.free_blocks.end() || it->second.empty()) return nullptr;
  void* block = it->second.back();
  it->second.pop_back();
  pool.bytes_cached -= rounded;
  pool.bytes_in_use += rounded;
  return block;
}

void CUDART_CB StreamCallback(cudaStream_t, cudaError_t status, void* data) {
  std::unique_ptr<std::function<void(const GpuError&)>> done(
      static_cast<std::function<void(const GpuError&)>*>(data));
  (*done)(status == cudaSuccess ? GpuError() : CudaError("queued GPU work", status));
}

}  // namespace

const GpuProbe& ProbeGpus() {
  static const GpuProbe probe = Probe();
  return probe;
}

GpuDevice* GetGpuDevice(int ordinal, GpuError* error) {
  const GpuProbe& probe = ProbeGpus();
  if (ordinal < 0 || ordinal >= probe.count) {
    *error = GpuError("GPU " + std::to_string(ordinal) + " is not available (" +
                      probe.description + ")");
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(DevicesMutex());
  auto& devices = Devices();
  if (devices.size() < static_cast<size_t>(probe.count)) devices.resize(probe.count, nullptr);
  if (devices[ordinal] == nullptr) {
    GpuError e = CreateDevice(ordinal, &devices[ordinal]);
    if (!e.ok()) {
      *error = e;
      return nullptr;
    }
  }
  return devices[ordinal];
}

int DeviceOrdinal(const GpuDevice* device) { return device->ordinal; }

GpuDevice* DeviceOfPointer(const void* device_pointer, GpuError* error) {
  cudaPointerAttributes attributes;
  cudaError_t e = cudaPointerGetAttributes(&attributes, device_pointer);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *error = CudaError("cudaPointerGetAttributes", e);
    return nullptr;
  }
  if (attributes.type != cudaMemoryTypeDevice) {
    *error = GpuError("pointer is not device memory");
    return nullptr;
  }
  return GetGpuDevice(attributes.device, error);
}

GpuError MakeCurrent(GpuDevice* device) {
  cudaError_t e = cudaSetDevice(device->ordinal);
  return e == cudaSuccess ? GpuError()
                          : CudaError("cudaSetDevice(" + std::to_string(device->ordinal) + ")", e);
}

GpuError AllocateDevice(GpuDevice* device, size_t bytes, void** out) {
  *out = nullptr;
  if (bytes == 0) return GpuError();
  const size_t rounded = RoundUp(bytes);
  BlockPool& pool = device->device_pool;
  {
    std::lock_guard<std::mutex> lock(pool.mu);
    if (void* block = TakeCached(pool, rounded)) {
      *out = block;
      return GpuError();
    }
  }
  cudaError_t e = cudaMalloc(out, rounded);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    // Out of memory: give the cached blocks back and try once more.
    std::vector<void*> release;
    {
      std::lock_guard<std::mutex> lock(pool.mu);
      for (auto& [size, blocks] : pool.free_blocks) {
        for (void* b : blocks) release.push_back(b);
      }
      pool.free_blocks.clear();
      pool.bytes_cached = 0;
    }
    for (void* b : release) cudaFree(b);
    e = cudaMalloc(out, rounded);
  }
  if (e != cudaSuccess) {
    cudaGetLastError();
    *out = nullptr;
    return CudaError("cudaMalloc(" + std::to_string(rounded) + " bytes) on GPU " +
                         std::to_string(device->ordinal),
                     e);
  }
  std::lock_guard<std::mutex> lock(pool.mu);
  pool.bytes_in_use += rounded;
  ++pool.mallocs;
  return GpuError();
}

void FreeDevice(GpuDevice* device, void* block, size_t bytes) {
  if (block == nullptr) return;
  const size_t rounded = RoundUp(bytes);
  BlockPool& pool = device->device_pool;
  std::lock_guard<std::mutex> lock(pool.mu);
  pool.free_blocks[rounded].push_back(block);
  pool.bytes_in_use -= rounded;
  pool.bytes_cached += rounded;
}

GpuError AllocatePinned(GpuDevice* device, size_t bytes, void** out) {
  const size_t rounded = RoundUp(bytes == 0 ? 1 : bytes);
  BlockPool& pool = device->pinned_pool;
  {
    std::lock_guard<std::mutex> lock(pool.mu);
    if (void* block = TakeCached(pool, rounded)) {
      *out = block;
      return GpuError();
    }
    ReclaimPinned(device);
    if (void* block = TakeCached(pool, rounded)) {
      *out = block;
      return GpuError();
    }
  }
  cudaError_t e = cudaHostAlloc(out, rounded, cudaHostAllocPortable);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *out = nullptr;
    return CudaError("cudaHostAlloc(" + std::to_string(rounded) + " bytes)", e);
  }
  std::lock_guard<std::mutex> lock(pool.mu);
  pool.bytes_in_use += rounded;
  ++pool.mallocs;
  return GpuError();
}

void FreePinned(GpuDevice* device, void* block, size_t bytes) {
  if (block == nullptr) return;
  const size_t rounded = RoundUp(bytes == 0 ? 1 : bytes);
  BlockPool& pool = device->pinned_pool;
  std::lock_guard<std::mutex> lock(pool.mu);
  pool.free_blocks[rounded].push_back(block);
  pool.bytes_in_use -= rounded;
  pool.bytes_cached += rounded;
}

void FreePinnedAfterQueuedWork(GpuDevice* device, void* block, size_t bytes) {
  if (block == nullptr) return;
  const size_t rounded = RoundUp(bytes == 0 ? 1 : bytes);
  BlockPool& pool = device->pinned_pool;
  // Events belong to the device current when they are created and recorded.
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) cudaGetLastError();
  if (previous != device->ordinal && cudaSetDevice(device->ordinal) != cudaSuccess) {
    cudaGetLastError();
  }
  std::lock_guard<std::mutex> lock(pool.mu);
  cudaEvent_t event = nullptr;
  if (!device->spare_events.empty()) {
    event = device->spare_events.back();
    device->spare_events.pop_back();
  } else if (cudaEventCreateWithFlags(&event, cudaEventDisableTiming) != cudaSuccess) {
    cudaGetLastError();
    event = nullptr;
  }
  if (event == nullptr || cudaEventRecord(event, device->stream) != cudaSuccess) {
    // Without an event the block cannot be proven idle: leave it out of the pool.
    cudaGetLastError();
    if (event != nullptr) device->spare_events.push_back(event);
    pool.bytes_in_use -= rounded;
    if (previous >= 0 && previous != device->ordinal) cudaSetDevice(previous);
    return;
  }
  // Counted in bytes_cached only once ReclaimPinned finds its copy done.
  pool.bytes_in_use -= rounded;
  device->pending_pinned.push_back(PendingPinned{block, rounded, event});
  if (previous >= 0 && previous != device->ordinal) cudaSetDevice(previous);
}

PoolStats GetPoolStats(GpuDevice* device) {
  PoolStats stats;
  {
    std::lock_guard<std::mutex> lock(device->device_pool.mu);
    stats.device_bytes_in_use = device->device_pool.bytes_in_use;
    stats.device_bytes_cached = device->device_pool.bytes_cached;
    stats.device_mallocs = device->device_pool.mallocs;
  }
  std::lock_guard<std::mutex> lock(device->pinned_pool.mu);
  stats.pinned_bytes_in_use = device->pinned_pool.bytes_in_use;
  stats.pinned_bytes_cached = device->pinned_pool.bytes_cached;
  for (const PendingPinned& p : device->pending_pinned) stats.pinned_bytes_cached += p.rounded;
  return stats;
}

GpuError CopyHostToDevice(GpuDevice* device, void* dst, const void* pinned_src, size_t bytes) {
  if (bytes == 0) return GpuError();
  cudaError_t e =
      cudaMemcpyAsync(dst, pinned_src, bytes, cudaMemcpyHostToDevice, device->stream);
  return e == cudaSuccess ? GpuError() : CudaError("cudaMemcpyAsync host to device", e);
}

GpuError CopyDeviceToHost(GpuDevice* device, void* pinned_dst, const void* src, size_t bytes) {
  if (bytes == 0) return GpuError();
  cudaError_t e =
      cudaMemcpyAsync(pinned_dst, src, bytes, cudaMemcpyDeviceToHost, device->stream);
  return e == cudaSuccess ? GpuError() : CudaError("cudaMemcpyAsync device to host", e);
}

GpuError CopyDeviceToDevice(GpuDevice* device, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return GpuError();
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, device->stream);
  return e == cudaSuccess ? GpuError() : CudaError("cudaMemcpyAsync device to device", e);
}

GpuError ZeroDevice(GpuDevice* device, void* dst, size_t bytes) {
  if (bytes == 0) return GpuError();
  cudaError_t e = cudaMemsetAsync(dst, 0, bytes, device->stream);
  return e == cudaSuccess ? GpuError() : CudaError("cudaMemsetAsync", e);
}

GpuError WhenQueuedWorkDone(GpuDevice* device, std::function<void(const GpuError&)> done) {
  auto* data = new std::function<void(const GpuError&)>(std::move(done));
  // cudaStreamAddCallback, unlike cudaLaunchHostFunc, runs its callback also after a
  // device error, so `done` fires exactly once whatever happens on the stream.
  cudaError_t e = cudaStreamAddCallback(device->stream, StreamCallback, data, 0);
  if (e != cudaSuccess) {
    delete data;
    return CudaError("cudaStreamAddCallback", e);
  }
  return GpuError();
}

GpuError Synchronize(GpuDevice* device) {
  cudaError_t e = cudaStreamSynchronize(device->stream);
  return e == cudaSuccess ? GpuError() : CudaError("cudaStreamSynchronize", e);
}

}  // namespace gpu
}  // namespace actorflow
