// The GPU devices of this process, without CUDA types (like ggml-cuda.h): what the
// kernel classes (compiled by the host compiler) use to reach the code that nvcc
// compiles (cuda_device.cu). One GpuDevice per GPU ordinal, created on first use and
// alive until the process ends, owns:
//   - one stream, created non-blocking: every launch and copy of the device goes on
//     it, so launch order is execution order;
//   - a caching pool of device memory over cudaMalloc (never managed memory). A
//     freed block goes back to the pool and is handed to a later allocation of the
//     same size class; since every use of a block is queued on the one stream, a
//     reuse is ordered after the earlier user's kernels without any wait;
//   - a pool of pinned host blocks (cudaHostAlloc) that stage host<->device copies so
//     that cudaMemcpyAsync never waits on pageable memory;
//   - a cuBLAS handle bound to the stream.
//
// Nothing here blocks the calling thread on the GPU except Synchronize() and the
// out-of-memory path of AllocateDevice (documented there). Completion is reported by
// WhenQueuedWorkDone, whose callback runs on a CUDA-owned thread.
//
// Errors: a GpuError names the CUDA or cuBLAS call and its error; callers add the
// node or device.
//
// Thread safety: every function may be called from any thread; the pools are
// internally locked. Work queued from several threads onto one device is ordered by
// the stream in the order the calls return.
#ifndef ACTORFLOW_KERNELS_CUDA_GPU_DEVICE_H_
#define ACTORFLOW_KERNELS_CUDA_GPU_DEVICE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

namespace actorflow {
namespace gpu {

// Ok, or what failed ("cudaMalloc(1048576 bytes): out of memory (2)").
class GpuError {
 public:
  GpuError() = default;
  explicit GpuError(std::string message) : message_(std::move(message)) {}
  bool ok() const { return message_.empty(); }
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

// What the driver reports, probed once per process: the usable devices (0 without a
// driver: cudaErrorInsufficientDriver and cudaErrorNoDevice both mean "no GPU") and
// one line that says why, for skip messages and logs.
struct GpuProbe {
  int count = 0;
  std::string description;
};
const GpuProbe& ProbeGpus();

class GpuDevice;  // defined in cuda_internal.cuh

// The device of `ordinal`, created on first use (stream, cuBLAS handle, pools), or
// nullptr with *error set when the ordinal is not a usable device or creation failed.
GpuDevice* GetGpuDevice(int ordinal, GpuError* error);
int DeviceOrdinal(const GpuDevice* device);
// The device whose memory holds `device_pointer` (cudaPointerGetAttributes), or
// nullptr with *error set for host or unknown memory.
GpuDevice* DeviceOfPointer(const void* device_pointer, GpuError* error);

// Makes `device` current on the calling thread; call before queueing work from a
// thread that may have served another device.
GpuError MakeCurrent(GpuDevice* device);

// --- Memory -------------------------------------------------------------------------

// A device block of at least `bytes` from the pool (nullptr for 0 bytes). When
// cudaMalloc fails, the pool's free blocks are released (cudaFree, which waits for
// the device: the one blocking path, taken only when memory runs out) and the
// allocation is tried once more.
GpuError AllocateDevice(GpuDevice* device, size_t bytes, void** out);
// Returns a block to the pool. Safe from any thread, also while kernels queued on
// the stream still use it (see the reuse rule at the top).
void FreeDevice(GpuDevice* device, void* block, size_t bytes);

// A pinned host block of at least `bytes`, aligned to at least 64 bytes.
GpuError AllocatePinned(GpuDevice* device, size_t bytes, void** out);
// Returns a pinned block for immediate reuse: no queued copy may still use it.
void FreePinned(GpuDevice* device, void* block, size_t bytes);
// Returns a pinned block that a queued copy may still read or write: it is reused
// only after the work queued so far on the stream has completed (an event is
// recorded now and queried, never waited for, by later allocations). Not from a
// WhenQueuedWorkDone callback (no CUDA calls there): the block would be dropped.
void FreePinnedAfterQueuedWork(GpuDevice* device, void* block, size_t bytes);

struct PoolStats {
  size_t device_bytes_in_use = 0;
  size_t device_bytes_cached = 0;  // free blocks kept for reuse
  int64_t device_mallocs = 0;      // cudaMalloc calls so far
  size_t pinned_bytes_in_use = 0;
  size_t pinned_bytes_cached = 0;
};
PoolStats GetPoolStats(GpuDevice* device);

// --- Copies and completion, queued on the device's stream ---------------------------

// `host` must be pinned (AllocatePinned) so that the copy is truly asynchronous.
GpuError CopyHostToDevice(GpuDevice* device, void* dst, const void* pinned_src, size_t bytes);
GpuError CopyDeviceToHost(GpuDevice* device, void* pinned_dst, const void* src, size_t bytes);
GpuError CopyDeviceToDevice(GpuDevice* device, void* dst, const void* src, size_t bytes);
// Sets `bytes` bytes at `dst` to zero.
GpuError ZeroDevice(GpuDevice* device, void* dst, size_t bytes);

// Calls `done` exactly once, on a CUDA-owned thread, when everything queued on the
// stream so far has completed: with ok, or with the stream's error. `done` must not
// call CUDA and must return quickly (it holds up the stream): hand the work on, e.g.
// through AsyncScheduler::Post. When the callback cannot even be queued, the error
// is returned and `done` is not called.
GpuError WhenQueuedWorkDone(GpuDevice* device, std::function<void(const GpuError&)> done);

// Waits for everything queued so far. For callers that may block (a client thread
// copying fetches, tests, benchmarks); never for a device actor.
GpuError Synchronize(GpuDevice* device);

}  // namespace gpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CUDA_GPU_DEVICE_H_
