// The GPU math of the sparse kernels (sparse_kernels.cc), without CUDA types: row
// gathers, segment sums, scatters into a variable and the optimizers' row updates.
// As in gpu_launch.h, every function checks nothing about shapes (the kernel classes
// did), queues its work on the device's stream and returns at once; pointers are device
// memory and hyper-parameters are device pointers to one element.
//
// Row ids: `ids` points to n int32 or int64 ids that must lie in [0, rows). Every
// function first checks them on the device and writes the outcome to `bad_id`, two
// device int64s: [0] = the first position whose id is outside [0, rows) (-1 when
// none), [1] = that id. The caller reads them back after the stream reaches this work
// (GpuLaunch::after) and fails the kernel then. A bad id is never used as an address:
// with one, nothing is written to a variable or its slots, and an output holds
// unspecified values.
//
// Repeated ids: the functions that combine rows (all but GatherRows) sort the
// (id, position) pairs stably on the device, then one thread per (distinct id,
// element of the row) walks that id's positions in input order. Each row therefore
// sees exactly the CPU kernels' sequence of operations (kernels/cpu/
// sparse_kernels.cc, sparse_update_kernels.cc), and the results do not depend on
// thread timing (no atomics on the data).
//
// Element types: float32 and float64 data (NotFloat otherwise).
//
// Thread safety: as gpu_device.h: any thread, work ordered by the device's stream.
#ifndef ACTORFLOW_KERNELS_CUDA_SPARSE_LAUNCH_H_
#define ACTORFLOW_KERNELS_CUDA_SPARSE_LAUNCH_H_

#include <cstdint>

#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/gpu_launch.h"

namespace actorflow {
namespace gpu {

// n row ids of id_type (kInt32 or kInt64) into a table of `rows` rows.
struct DeviceRowIds {
  ElemType id_type = ElemType::kInt64;
  const void* ids = nullptr;
  int64_t n = 0;
  int64_t rows = 0;
};

// The most ids one call takes: positions are sorted as int32.
inline constexpr int64_t kMaxSparseIds = (int64_t{1} << 31) - 1;

// out [n, row] = params [rows, row] at the ids' rows.
GpuError GatherRows(GpuDevice* device, ElemType type, const void* params, int64_t row,
                    const DeviceRowIds& ids, void* out, int64_t* bad_id);

// out [rows, row] = for each segment s < rows, 0 + the data [n, row] rows whose id is s,
// added in input order (zeros where none is).
GpuError UnsortedSegmentSum(GpuDevice* device, ElemType type, const void* data, int64_t row,
                            const DeviceRowIds& segment_ids, void* out, int64_t* bad_id);

// var [rows, row] at each id's row: += (kAdd), -= (kSub) or = (kUpdate) each updates
// [n, row] row, in input order (so the last of a repeated id wins an update).
enum class ScatterOp { kAdd, kSub, kUpdate };
GpuError ScatterRows(GpuDevice* device, ScatterOp op, ElemType type, void* var, int64_t row,
                     const DeviceRowIds& ids, const void* updates, int64_t* bad_id);

// The SparseApply* updates of var [rows, row] and its slots (same shape) with grad
// [n, row]: the grad rows of a repeated id are summed first (from 0, in input order,
// when any id repeats; as given otherwise, as the CPU kernel), then each touched row
// gets the dense rule of kernels/optimizer_rules.h once. Other rows stay unchanged.
GpuError SparseApplyGradientDescent(GpuDevice* device, ElemType type, void* var,
                                    const void* alpha, const void* grad, int64_t row,
                                    const DeviceRowIds& ids, int64_t* bad_id);
GpuError SparseApplyAdagrad(GpuDevice* device, ElemType type, void* var, void* accum,
                            const void* lr, const void* grad, int64_t row,
                            const DeviceRowIds& ids, int64_t* bad_id);
GpuError SparseApplyAdam(GpuDevice* device, ElemType type, void* var, void* m, void* v,
                         const void* beta1_power, const void* beta2_power, const void* lr,
                         const void* beta1, const void* beta2, const void* epsilon,
                         const void* grad, int64_t row, const DeviceRowIds& ids,
                         int64_t* bad_id);
GpuError SparseApplyFtrl(GpuDevice* device, ElemType type, void* var, void* accum, void* linear,
                         const void* lr, const void* l1, const void* l2, const void* lr_power,
                         const void* grad, int64_t row, const DeviceRowIds& ids,
                         int64_t* bad_id);

}  // namespace gpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CUDA_SPARSE_LAUNCH_H_
