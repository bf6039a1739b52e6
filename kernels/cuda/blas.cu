// MatMul and StridedBatchedMatMul through cuBLAS (gpu_launch.h). cuBLAS is column-major: a row-major
// C [m, n] is a column-major C^T [n, m], and C^T = op(B)^T op(A)^T, so the call
// swaps the operands and passes the row-major leading dimensions unchanged.
// The default math mode is kept (no TF32), so float32 results match the CPU's
// within a float32 summation error.
//
// cuBLAS is loaded with dlopen when the first device is created, not linked: its
// libraries (~600 MB) cost a process 0.4 s and 200 MB at start-up, which a CUDA
// build on a machine without a GPU should not pay.
#include <dlfcn.h>

#include <algorithm>
#include <mutex>
#include <string>

#include "kernels/cuda/cuda_internal.cuh"

namespace actorflow {
namespace gpu {
namespace {

struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSgemm_v2_64) sgemm = nullptr;
  decltype(&cublasDgemm_v2_64) dgemm = nullptr;
  decltype(&cublasSgemmStridedBatched_64) sgemm_strided_batched = nullptr;
  decltype(&cublasDgemmStridedBatched_64) dgemm_strided_batched = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  std::string error;  // why loading failed; empty when loaded
};

template <typename F>
bool Bind(void* library, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(library, name));
  return *out != nullptr;
}

CublasApi Load() {
  CublasApi api;
  const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  // The toolkit's copy first; then the loader's search path (LD_LIBRARY_PATH), for a
  // binary taken to a machine with CUDA elsewhere.
  void* library = dlopen(("/usr/local/cuda/lib64/" + name).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    api.error = "cannot load " + name + ": " + (why != nullptr ? why : "unknown error");
    return api;
  }
  if (!Bind(library, "cublasCreate_v2", &api.create) ||
      !Bind(library, "cublasSetStream_v2", &api.set_stream) ||
      !Bind(library, "cublasSgemm_v2_64", &api.sgemm) ||
      !Bind(library, "cublasDgemm_v2_64", &api.dgemm) ||
      !Bind(library, "cublasSgemmStridedBatched_64", &api.sgemm_strided_batched) ||
      !Bind(library, "cublasDgemmStridedBatched_64", &api.dgemm_strided_batched) ||
      !Bind(library, "cublasGetStatusString", &api.status_string)) {
    api.error = name + " lacks a function this build calls (a cuBLAS older than the headers?)";
  }
  return api;
}

const CublasApi& Api() {
  static const CublasApi api = Load();
  return api;
}

std::string StatusText(cublasStatus_t s) {
  return Api().status_string != nullptr ? Api().status_string(s)
                                        : "cuBLAS status " + std::to_string(static_cast<int>(s));
}

// The most products one strided-batched call is given: some cuBLAS kernels map the
// batch to a grid dimension, which holds at most 65535 blocks, so a longer batch is
// queued as several calls.
constexpr int64_t kMaxBatchPerCall = 32768;

// The strided-batched gemm of every chunk of the batch, in the column-major form of
// the file comment (operands swapped); the first failing status, or success.
template <typename T, typename Gemm>
cublasStatus_t GemmChunks(Gemm gemm, cublasHandle_t handle, cublasOperation_t op_a,
                          cublasOperation_t op_b, int64_t m, int64_t n, int64_t k, const T* a,
                          int64_t lda, int64_t stride_a, const T* b, int64_t ldb,
                          int64_t stride_b, T* c, int64_t count) {
  const T alpha = T(1);
  const T beta = T(0);
  for (int64_t first = 0; first < count; first += kMaxBatchPerCall) {
    const int64_t chunk = std::min(kMaxBatchPerCall, count - first);
    const cublasStatus_t s =
        gemm(handle, op_b, op_a, n, m, k, &alpha, b + first * stride_b, ldb, stride_b,
             a + first * stride_a, lda, stride_a, &beta, c + first * m * n, n, m * n, chunk);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
  }
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

GpuError CreateBlasHandle(GpuDevice* device) {
  const CublasApi& api = Api();
  if (!api.error.empty()) return GpuError(api.error);
  cublasStatus_t s = api.create(&device->blas);
  if (s != CUBLAS_STATUS_SUCCESS) return GpuError("cublasCreate: " + StatusText(s));
  s = api.set_stream(device->blas, device->stream);
  if (s != CUBLAS_STATUS_SUCCESS) return GpuError("cublasSetStream: " + StatusText(s));
  return GpuError();
}

GpuError MatMul(GpuDevice* device, ElemType type, bool transpose_a, bool transpose_b,
                int64_t m, int64_t n, int64_t k, const void* a, const void* b, void* c) {
  if (m == 0 || n == 0) return GpuError();
  if (k == 0) {  // an empty sum: zeros, without asking cuBLAS about k = 0
    return ZeroDevice(device, c, static_cast<size_t>(m * n) * (type == ElemType::kFloat64 ? 8 : 4));
  }
  const CublasApi& api = Api();
  if (!api.error.empty()) return GpuError(api.error);
  const int64_t lda = transpose_a ? m : k;  // row-major A is [m,k] or [k,m]
  const int64_t ldb = transpose_b ? k : n;  // row-major B is [k,n] or [n,k]
  const cublasOperation_t op_a = transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  std::lock_guard<std::mutex> lock(device->blas_mu);
  cublasStatus_t s;
  if (type == ElemType::kFloat32) {
    const float alpha = 1.0f;
    const float beta = 0.0f;
    s = api.sgemm(device->blas, op_b, op_a, n, m, k, &alpha, static_cast<const float*>(b), ldb,
                  static_cast<const float*>(a), lda, &beta, static_cast<float*>(c), n);
  } else if (type == ElemType::kFloat64) {
    const double alpha = 1.0;
    const double beta = 0.0;
    s = api.dgemm(device->blas, op_b, op_a, n, m, k, &alpha, static_cast<const double*>(b), ldb,
                  static_cast<const double*>(a), lda, &beta, static_cast<double*>(c), n);
  } else {
    return NotFloat("MatMul");
  }
  if (s != CUBLAS_STATUS_SUCCESS) {
    return GpuError("cublasGemm [" + std::to_string(m) + "," + std::to_string(k) + "] x [" +
                    std::to_string(k) + "," + std::to_string(n) + "]: " + StatusText(s));
  }
  return GpuError();
}

GpuError StridedBatchedMatMul(GpuDevice* device, ElemType type, bool transpose_a,
                              bool transpose_b, int64_t m, int64_t n, int64_t k, const void* a,
                              int64_t stride_a, const void* b, int64_t stride_b, void* c,
                              int64_t count) {
  if (type != ElemType::kFloat32 && type != ElemType::kFloat64) {
    return NotFloat("StridedBatchedMatMul");
  }
  if (m == 0 || n == 0 || count == 0) return GpuError();
  if (k == 0) {  // empty sums: zeros, without asking cuBLAS about k = 0
    return ZeroDevice(device, c,
                      static_cast<size_t>(count * m * n) * (type == ElemType::kFloat64 ? 8 : 4));
  }
  const CublasApi& api = Api();
  if (!api.error.empty()) return GpuError(api.error);
  const int64_t lda = transpose_a ? m : k;
  const int64_t ldb = transpose_b ? k : n;
  const cublasOperation_t op_a = transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  std::lock_guard<std::mutex> lock(device->blas_mu);
  const cublasStatus_t s =
      type == ElemType::kFloat32
          ? GemmChunks(api.sgemm_strided_batched, device->blas, op_a, op_b, m, n, k,
                       static_cast<const float*>(a), lda, stride_a,
                       static_cast<const float*>(b), ldb, stride_b, static_cast<float*>(c),
                       count)
          : GemmChunks(api.dgemm_strided_batched, device->blas, op_a, op_b, m, n, k,
                       static_cast<const double*>(a), lda, stride_a,
                       static_cast<const double*>(b), ldb, stride_b, static_cast<double*>(c),
                       count);
  if (s != CUBLAS_STATUS_SUCCESS) {
    return GpuError("cublasGemmStridedBatched " + std::to_string(count) + " x [" +
                    std::to_string(m) + "," + std::to_string(k) + "] x [" + std::to_string(k) +
                    "," + std::to_string(n) + "]: " + StatusText(s));
  }
  return GpuError();
}

}  // namespace gpu
}  // namespace actorflow
