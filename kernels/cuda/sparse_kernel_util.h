// What the GPU sparse kernels (sparse_kernels.cc, sparse_update_kernels.cc) share:
// describing a row-id tensor to sparse_launch.h and turning the device's bad-id
// report into the CPU kernels' InvalidArgument (kernels/cpu/row_ids.h, CheckRowIds).
//
// Ids are checked on the device because they may live there (a _Recv on the GPU
// copies them over); reading them back before the launch would block the executor.
//
// Thread safety: pure functions; the returned check runs once, on the executor's
// thread.
#ifndef ACTORFLOW_KERNELS_CUDA_SPARSE_KERNEL_UTIL_H_
#define ACTORFLOW_KERNELS_CUDA_SPARSE_KERNEL_UTIL_H_

#include <cstdint>
#include <functional>
#include <string>

#include "kernels/cuda/gpu_kernel.h"
#include "kernels/cuda/sparse_launch.h"

namespace actorflow {
namespace gpu {

// The status of a queued launch: Internal naming the CUDA call when it failed.
inline Status FromLaunch(const GpuError& e) {
  return e.ok() ? Status::OK() : Internal(e.message());
}

// `ids` (a device int32/int64 tensor, any shape, flattened) into a table of `rows` rows.
// InvalidArgument, naming `what`, for another dtype or too many ids.
inline StatusOr<DeviceRowIds> RowIdsOf(const Tensor& ids, int64_t rows, const std::string& what) {
  if (ids.dtype() != DType::kInt32 && ids.dtype() != DType::kInt64) {
    return InvalidArgument(what + " must be int32 or int64, got " + ids.DebugString());
  }
  if (ids.NumElements() > kMaxSparseIds) {
    return InvalidArgument(what + " has " + std::to_string(ids.NumElements()) +
                           " ids; the GPU kernels take at most 2^31 - 1");
  }
  DeviceRowIds out;
  out.id_type = ElemTypeOf(ids.dtype());
  out.ids = ids.raw_data();
  out.n = ids.NumElements();
  out.rows = rows;
  return out;
}

// A device int64 [2] for sparse_launch.h's bad_id.
inline StatusOr<Tensor> AllocateBadId(GpuDevice* device) {
  return AllocateDeviceTensor(device, DType::kInt64, Shape{2});
}

// Queues bad_id's copy to the host and returns the check to run once the stream has
// passed it (as GpuLaunch::after): it fails `ctx` with InvalidArgument
// "<what>[3] = 12 is not in [0, 10)", the CPU kernels' message, when an id was bad.
inline StatusOr<std::function<void()>> CheckBadIdLater(KernelContext* ctx, GpuDevice* device,
                                                       const Tensor& bad_id,
                                                       const std::string& what, int64_t rows) {
  AF_ASSIGN_OR_RETURN(Tensor host, QueueCopyToHost(device, bad_id));
  return std::function<void()>([ctx, host, what, rows] {
    const int64_t position = host.data<int64_t>()[0];
    if (position < 0) return;
    ctx->Fail(Code::kInvalidArgument, what + "[" + std::to_string(position) + "] = " +
                                          std::to_string(host.data<int64_t>()[1]) +
                                          " is not in [0, " + std::to_string(rows) + ")");
  });
}

// ElemType of a float T (float32 or float64).
template <typename T>
constexpr ElemType FloatElemType() {
  return DTypeOf<T>::value == DType::kFloat32 ? ElemType::kFloat32 : ElemType::kFloat64;
}

}  // namespace gpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CUDA_SPARSE_KERNEL_UTIL_H_
