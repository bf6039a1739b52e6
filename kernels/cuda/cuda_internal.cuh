// What the .cu files of kernels/cuda share: the GpuDevice definition, error
// formatting and launch helpers. Included only by files that nvcc compiles (the
// genrules of kernels/cuda/BUILD); the host compiler never sees CUDA types.
//
// Thread safety: GpuDevice's pools are guarded by their own mutexes; the stream and
// cuBLAS handle are set once at creation (cuBLAS calls on one handle are serialized
// by blas_mu). cublas_v2.h is included for its types only: cuBLAS is not linked.
#ifndef ACTORFLOW_KERNELS_CUDA_CUDA_INTERNAL_CUH_
#define ACTORFLOW_KERNELS_CUDA_CUDA_INTERNAL_CUH_

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/gpu_launch.h"

namespace actorflow {
namespace gpu {

// Free blocks by rounded size; a block is reused only for its own size class.
struct BlockPool {
  std::mutex mu;
  std::map<size_t, std::vector<void*>> free_blocks;
  size_t bytes_in_use = 0;
  size_t bytes_cached = 0;
  int64_t mallocs = 0;
};

// A pinned block whose queued copy may still run, and the event that says when not.
struct PendingPinned {
  void* block;
  size_t rounded;
  cudaEvent_t event;
};

class GpuDevice {
 public:
  int ordinal = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  std::mutex blas_mu;
  BlockPool device_pool;
  BlockPool pinned_pool;
  std::vector<PendingPinned> pending_pinned;  // guarded by pinned_pool.mu
  std::vector<cudaEvent_t> spare_events;      // guarded by pinned_pool.mu
};

// Creates device->blas bound to device->stream (blas.cu: cuBLAS is loaded on first
// use). Precondition: the device is current and its stream exists.
GpuError CreateBlasHandle(GpuDevice* device);

// "cudaMalloc: out of memory (cudaErrorMemoryAllocation = 2)"
inline GpuError CudaError(const std::string& call, cudaError_t e) {
  return GpuError(call + ": " + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + " = " +
                  std::to_string(static_cast<int>(e)) + ")");
}

// The launch's own error (a bad configuration), without clearing a sticky one.
inline GpuError LaunchError(const char* kernel) {
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? GpuError() : CudaError(std::string("launch of ") + kernel, e);
}

inline constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n elements: enough to fill the device, capped
// so that the grid size stays legal.
inline unsigned int GridFor(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned int>(blocks < 65535 * 8 ? (blocks > 0 ? blocks : 1) : 65535 * 8);
}

__device__ __forceinline__ int64_t OffsetOf(const StridedIndex& s, int64_t i) {
  int64_t offset = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    const int64_t dim = s.dims[d];
    offset += (i % dim) * s.strides[d];
    i /= dim;
  }
  return offset;
}

// Calls f(T{}) with T the C++ type of a float ElemType; false for other types.
template <typename F>
bool VisitFloat(ElemType type, F&& f) {
  switch (type) {
    case ElemType::kFloat32: f(float{}); return true;
    case ElemType::kFloat64: f(double{}); return true;
    default: return false;
  }
}

// The same for every ElemType (bool as bool).
template <typename F>
void VisitAny(ElemType type, F&& f) {
  switch (type) {
    case ElemType::kFloat32: f(float{}); break;
    case ElemType::kFloat64: f(double{}); break;
    case ElemType::kInt32: f(int32_t{}); break;
    case ElemType::kInt64: f(int64_t{}); break;
    case ElemType::kBool: f(bool{}); break;
  }
}

inline GpuError NotFloat(const char* what) {
  return GpuError(std::string(what) + ": only float32 and float64 are supported on the GPU");
}

}  // namespace gpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CUDA_CUDA_INTERNAL_CUH_
