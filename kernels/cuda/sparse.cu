// The sparse kernels' GPU math (sparse_launch.h): id checks, the stable grouping of
// repeated ids (cub's radix sort of (id, position) pairs), and the row kernels that
// walk each distinct id's positions in input order.
//
// Every launcher queues, in this order: the id check (which writes bad_id), the
// grouping when rows are combined, then the row kernel. A row kernel reads bad_id[0]
// first and touches nothing when an id was bad, so a failed kernel leaves a variable
// as it was, like the CPU kernels that check every id before any write.
#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda/cuda_internal.cuh"
#include "kernels/cuda/sparse_launch.h"
#include "kernels/optimizer_rules.h"

namespace actorflow {
namespace gpu {
namespace {

#define AF_GRID_STRIDE(i, n)                                                \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += int64_t{blockDim.x} * gridDim.x)

// --- Id checks -----------------------------------------------------------------------

__global__ void ResetBadId(int64_t* bad) {
  bad[0] = static_cast<int64_t>(~0ULL);  // no bad position yet: atomicMin's identity
  bad[1] = 0;
}

// Records the first position whose id is outside [0, rows). With `keys`, also writes
// the sort's input: keys[i] = the id (0 for a bad one, so that the sort stays in
// range) and positions[i] = i.
template <typename I>
__global__ void CheckIdsKernel(const I* __restrict__ ids, int64_t n, int64_t rows,
                               int64_t* __restrict__ keys, int32_t* __restrict__ positions,
                               unsigned long long* first_bad) {
  AF_GRID_STRIDE(i, n) {
    const int64_t id = static_cast<int64_t>(ids[i]);
    const bool valid = id >= 0 && id < rows;
    if (!valid) atomicMin(first_bad, static_cast<unsigned long long>(i));
    if (keys != nullptr) {
      keys[i] = valid ? id : 0;
      positions[i] = static_cast<int32_t>(i);
    }
  }
}

// bad[0]: the first bad position or -1; bad[1]: its id.
template <typename I>
__global__ void FinishBadId(const I* __restrict__ ids, int64_t* bad) {
  const unsigned long long position = static_cast<unsigned long long>(bad[0]);
  if (position == ~0ULL) {
    bad[0] = -1;
    bad[1] = 0;
  } else {
    bad[1] = static_cast<int64_t>(ids[position]);
  }
}

// Queues the id check: ResetBadId, CheckIdsKernel (also writing the sort's input when
// `keys` is given), FinishBadId.
GpuError QueueIdCheck(GpuDevice* device, const DeviceRowIds& ids, int64_t* bad_id, int64_t* keys,
                      int32_t* positions) {
  if (ids.id_type != ElemType::kInt32 && ids.id_type != ElemType::kInt64) {
    return GpuError("sparse op: row ids must be int32 or int64");
  }
  ResetBadId<<<1, 1, 0, device->stream>>>(bad_id);
  auto queue = [&](auto zero) {
    using I = decltype(zero);
    const I* typed = static_cast<const I*>(ids.ids);
    if (ids.n > 0) {
      CheckIdsKernel<I><<<GridFor(ids.n), kThreads, 0, device->stream>>>(
          typed, ids.n, ids.rows, keys, positions, reinterpret_cast<unsigned long long*>(bad_id));
    }
    FinishBadId<I><<<1, 1, 0, device->stream>>>(typed, bad_id);
  };
  if (ids.id_type == ElemType::kInt32) {
    queue(int32_t{});
  } else {
    queue(int64_t{});
  }
  return LaunchError("CheckIdsKernel");
}

// --- Grouping of repeated ids --------------------------------------------------------

// The ids sorted stably: positions of one id are consecutive and in input order.
struct RowGroups {
  const int64_t* sorted_ids = nullptr;  // [n], ascending
  const int32_t* positions = nullptr;   // [n]
  int64_t n = 0;
  const int64_t* bad_id = nullptr;      // [0] >= 0: a bad id, touch nothing
  const int32_t* repeats = nullptr;     // != 0 when some id occurs twice
};

__global__ void MarkRepeats(const int64_t* __restrict__ sorted_ids, int64_t n, int32_t* repeats) {
  AF_GRID_STRIDE(k, n) {
    if (k > 0 && sorted_ids[k] == sorted_ids[k - 1]) *repeats = 1;
  }
}

// The scratch of one grouping, one block from the device's pool. It goes back to the
// pool when the launcher returns, while the queued kernels may still use it: the pool
// hands a block out again only to work queued later on the same stream (gpu_device.h).
class Grouping {
 public:
  explicit Grouping(GpuDevice* device) : device_(device) {}
  ~Grouping() {
    if (block_ != nullptr) FreeDevice(device_, block_, bytes_);
  }
  Grouping(const Grouping&) = delete;
  Grouping& operator=(const Grouping&) = delete;

  // Queues the id check and, for n > 0, the sort; groups() is valid afterwards.
  GpuError Queue(const DeviceRowIds& ids, int64_t* bad_id) {
    groups_.n = ids.n;
    groups_.bad_id = bad_id;
    if (ids.n > kMaxSparseIds) return GpuError("sparse op: more than 2^31 - 1 ids");
    if (ids.n == 0) return QueueIdCheck(device_, ids, bad_id, nullptr, nullptr);
    const int n = static_cast<int>(ids.n);
    int end_bit = 1;  // ids (bad ones as 0) are in [0, max(rows, 1)): sort only those bits
    while (end_bit < 63 && (int64_t{1} << end_bit) < ids.rows) ++end_bit;
    size_t sort_bytes = 0;
    cudaError_t e = cub::DeviceRadixSort::SortPairs(
        nullptr, sort_bytes, static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr),
        static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), n, 0, end_bit,
        device_->stream);
    if (e != cudaSuccess) return CudaError("cub::DeviceRadixSort::SortPairs (size query)", e);
    const size_t id_bytes = Aligned(ids.n * sizeof(int64_t));
    const size_t position_bytes = Aligned(ids.n * sizeof(int32_t));
    bytes_ = 2 * id_bytes + 2 * position_bytes + Aligned(sizeof(int32_t)) + sort_bytes;
    GpuError allocated = AllocateDevice(device_, bytes_, &block_);
    if (!allocated.ok()) return allocated;
    char* p = static_cast<char*>(block_);
    int64_t* keys_in = reinterpret_cast<int64_t*>(p);
    int64_t* keys_out = reinterpret_cast<int64_t*>(p + id_bytes);
    int32_t* positions_in = reinterpret_cast<int32_t*>(p + 2 * id_bytes);
    int32_t* positions_out = reinterpret_cast<int32_t*>(p + 2 * id_bytes + position_bytes);
    int32_t* repeats = reinterpret_cast<int32_t*>(p + 2 * id_bytes + 2 * position_bytes);
    void* sort_scratch = p + 2 * id_bytes + 2 * position_bytes + Aligned(sizeof(int32_t));

    GpuError checked = QueueIdCheck(device_, ids, bad_id, keys_in, positions_in);
    if (!checked.ok()) return checked;
    e = cub::DeviceRadixSort::SortPairs(sort_scratch, sort_bytes,
                                        static_cast<const int64_t*>(keys_in), keys_out,
                                        static_cast<const int32_t*>(positions_in), positions_out,
                                        n, 0, end_bit, device_->stream);
    if (e != cudaSuccess) return CudaError("cub::DeviceRadixSort::SortPairs", e);
    GpuError zeroed = ZeroDevice(device_, repeats, sizeof(int32_t));
    if (!zeroed.ok()) return zeroed;
    MarkRepeats<<<GridFor(ids.n), kThreads, 0, device_->stream>>>(keys_out, ids.n, repeats);
    groups_.sorted_ids = keys_out;
    groups_.positions = positions_out;
    groups_.repeats = repeats;
    return LaunchError("MarkRepeats");
  }

  const RowGroups& groups() const { return groups_; }

 private:
  static size_t Aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

  GpuDevice* device_;
  void* block_ = nullptr;
  size_t bytes_ = 0;
  RowGroups groups_;
};

// Calls f(at, k, column) once per element of each distinct id's row: k is the id's
// first index in sorted order and at = id * row + column the element's offset in the
// table. Nothing when an id was bad.
template <typename F>
__device__ void ForEachTouchedElement(const RowGroups& g, int64_t row, F f) {
  if (*g.bad_id >= 0) return;
  AF_GRID_STRIDE(e, g.n * row) {
    const int64_t k = e / row;
    if (k > 0 && g.sorted_ids[k] == g.sorted_ids[k - 1]) continue;  // not the first
    const int64_t column = e - k * row;
    f(g.sorted_ids[k] * row + column, k, column);
  }
}

// The summed gradient of the id first at sorted index k, as the CPU SparseApply
// kernel sums: from 0 in input order when any id repeats; else the row itself
// (-0.0 is the identity of +, so a lone -0.0 stays -0.0 as there).
template <typename T>
__device__ T SummedRow(const RowGroups& g, const T* __restrict__ rows, int64_t k, int64_t row,
                       int64_t column) {
  T sum = *g.repeats != 0 ? T(0) : T(-0.0);
  const int64_t id = g.sorted_ids[k];
  for (; k < g.n && g.sorted_ids[k] == id; ++k) sum += rows[g.positions[k] * row + column];
  return sum;
}

// --- Row kernels ---------------------------------------------------------------------

template <typename T, typename I>
__global__ void GatherRowsKernel(const T* __restrict__ params, const I* __restrict__ ids,
                                 int64_t n, int64_t rows, int64_t row, T* __restrict__ out) {
  AF_GRID_STRIDE(e, n * row) {
    const int64_t i = e / row;
    const int64_t id = static_cast<int64_t>(ids[i]);
    // A bad id fails the kernel afterwards; its row is never read.
    out[e] = (id >= 0 && id < rows) ? params[id * row + (e - i * row)] : T(0);
  }
}

// out was zeroed; each touched segment gets 0 + its rows in input order.
template <typename T>
__global__ void SegmentSumKernel(const T* __restrict__ data, RowGroups g, int64_t row,
                                 T* __restrict__ out) {
  ForEachTouchedElement(g, row, [&](int64_t at, int64_t k, int64_t column) {
    T sum = T(0);
    const int64_t id = g.sorted_ids[k];
    for (; k < g.n && g.sorted_ids[k] == id; ++k) sum += data[g.positions[k] * row + column];
    out[at] = sum;
  });
}

template <typename T>
__global__ void ScatterKernel(ScatterOp op, T* __restrict__ var, const T* __restrict__ updates,
                              RowGroups g, int64_t row) {
  ForEachTouchedElement(g, row, [&](int64_t at, int64_t k, int64_t column) {
    T value = var[at];
    const int64_t id = g.sorted_ids[k];
    for (; k < g.n && g.sorted_ids[k] == id; ++k) {
      const T u = updates[g.positions[k] * row + column];
      value = op == ScatterOp::kAdd ? value + u : op == ScatterOp::kSub ? value - u : u;
    }
    var[at] = value;
  });
}

template <typename T>
__global__ void SparseGradientDescentKernel(T* __restrict__ var, const T* alpha_p,
                                            const T* __restrict__ grad, RowGroups g,
                                            int64_t row) {
  const T alpha = *alpha_p;
  ForEachTouchedElement(g, row, [&](int64_t at, int64_t k, int64_t column) {
    GradientDescentUpdate(var[at], SummedRow(g, grad, k, row, column), alpha);
  });
}

template <typename T>
__global__ void SparseAdagradKernel(T* __restrict__ var, T* __restrict__ accum, const T* lr_p,
                                    const T* __restrict__ grad, RowGroups g, int64_t row) {
  const T lr = *lr_p;
  ForEachTouchedElement(g, row, [&](int64_t at, int64_t k, int64_t column) {
    AdagradUpdate(var[at], accum[at], SummedRow(g, grad, k, row, column), lr);
  });
}

template <typename T>
__global__ void SparseAdamKernel(T* __restrict__ var, T* __restrict__ m, T* __restrict__ v,
                                 const T* beta1_power_p, const T* beta2_power_p, const T* lr_p,
                                 const T* beta1_p, const T* beta2_p, const T* epsilon_p,
                                 const T* __restrict__ grad, RowGroups g, int64_t row) {
  const AdamParams<T> params{AdamStepSize(*lr_p, *beta1_power_p, *beta2_power_p), *beta1_p,
                             *beta2_p, *epsilon_p};
  ForEachTouchedElement(g, row, [&](int64_t at, int64_t k, int64_t column) {
    AdamUpdate(var[at], m[at], v[at], SummedRow(g, grad, k, row, column), params);
  });
}

template <typename T>
__global__ void SparseFtrlKernel(T* __restrict__ var, T* __restrict__ accum,
                                 T* __restrict__ linear, const T* lr_p, const T* l1_p,
                                 const T* l2_p, const T* lr_power_p, const T* __restrict__ grad,
                                 RowGroups g, int64_t row) {
  const FtrlParams<T> params{*lr_p, *l1_p, *l2_p, *lr_power_p};
  ForEachTouchedElement(g, row, [&](int64_t at, int64_t k, int64_t column) {
    FtrlUpdate(var[at], accum[at], linear[at], SummedRow(g, grad, k, row, column), params);
  });
}

#undef AF_GRID_STRIDE

// Queues the grouping of `ids`, then launch(T{}, groups) for a float `type` when
// there are elements to walk.
template <typename Launch>
GpuError Grouped(GpuDevice* device, const char* what, ElemType type, int64_t row,
                 const DeviceRowIds& ids, int64_t* bad_id, Launch launch) {
  if (type != ElemType::kFloat32 && type != ElemType::kFloat64) return NotFloat(what);
  Grouping grouping(device);
  GpuError e = grouping.Queue(ids, bad_id);
  if (!e.ok() || ids.n == 0 || row == 0) return e;
  VisitFloat(type, [&](auto zero) { launch(zero, grouping.groups()); });
  return LaunchError(what);
}

}  // namespace

GpuError GatherRows(GpuDevice* device, ElemType type, const void* params, int64_t row,
                    const DeviceRowIds& ids, void* out, int64_t* bad_id) {
  if (type != ElemType::kFloat32 && type != ElemType::kFloat64) return NotFloat("GatherRows");
  GpuError e = QueueIdCheck(device, ids, bad_id, nullptr, nullptr);
  if (!e.ok() || ids.n == 0 || row == 0) return e;
  VisitFloat(type, [&](auto zero) {
    using T = decltype(zero);
    auto launch = [&](auto id_zero) {
      using I = decltype(id_zero);
      GatherRowsKernel<T, I><<<GridFor(ids.n * row), kThreads, 0, device->stream>>>(
          static_cast<const T*>(params), static_cast<const I*>(ids.ids), ids.n, ids.rows, row,
          static_cast<T*>(out));
    };
    if (ids.id_type == ElemType::kInt32) {
      launch(int32_t{});
    } else {
      launch(int64_t{});
    }
  });
  return LaunchError("GatherRowsKernel");
}

GpuError UnsortedSegmentSum(GpuDevice* device, ElemType type, const void* data, int64_t row,
                            const DeviceRowIds& segment_ids, void* out, int64_t* bad_id) {
  if (type != ElemType::kFloat32 && type != ElemType::kFloat64) {
    return NotFloat("UnsortedSegmentSum");
  }
  const size_t elem = type == ElemType::kFloat64 ? sizeof(double) : sizeof(float);
  GpuError zeroed = ZeroDevice(device, out, static_cast<size_t>(segment_ids.rows * row) * elem);
  if (!zeroed.ok()) return zeroed;
  return Grouped(device, "SegmentSumKernel", type, row, segment_ids, bad_id,
                 [&](auto zero, const RowGroups& g) {
                   using T = decltype(zero);
                   SegmentSumKernel<T><<<GridFor(g.n * row), kThreads, 0, device->stream>>>(
                       static_cast<const T*>(data), g, row, static_cast<T*>(out));
                 });
}

GpuError ScatterRows(GpuDevice* device, ScatterOp op, ElemType type, void* var, int64_t row,
                     const DeviceRowIds& ids, const void* updates, int64_t* bad_id) {
  return Grouped(device, "ScatterKernel", type, row, ids, bad_id,
                 [&](auto zero, const RowGroups& g) {
                   using T = decltype(zero);
                   ScatterKernel<T><<<GridFor(g.n * row), kThreads, 0, device->stream>>>(
                       op, static_cast<T*>(var), static_cast<const T*>(updates), g, row);
                 });
}

GpuError SparseApplyGradientDescent(GpuDevice* device, ElemType type, void* var,
                                    const void* alpha, const void* grad, int64_t row,
                                    const DeviceRowIds& ids, int64_t* bad_id) {
  return Grouped(device, "SparseGradientDescentKernel", type, row, ids, bad_id,
                 [&](auto zero, const RowGroups& g) {
                   using T = decltype(zero);
                   SparseGradientDescentKernel<T>
                       <<<GridFor(g.n * row), kThreads, 0, device->stream>>>(
                           static_cast<T*>(var), static_cast<const T*>(alpha),
                           static_cast<const T*>(grad), g, row);
                 });
}

GpuError SparseApplyAdagrad(GpuDevice* device, ElemType type, void* var, void* accum,
                            const void* lr, const void* grad, int64_t row,
                            const DeviceRowIds& ids, int64_t* bad_id) {
  return Grouped(device, "SparseAdagradKernel", type, row, ids, bad_id,
                 [&](auto zero, const RowGroups& g) {
                   using T = decltype(zero);
                   SparseAdagradKernel<T><<<GridFor(g.n * row), kThreads, 0, device->stream>>>(
                       static_cast<T*>(var), static_cast<T*>(accum), static_cast<const T*>(lr),
                       static_cast<const T*>(grad), g, row);
                 });
}

GpuError SparseApplyAdam(GpuDevice* device, ElemType type, void* var, void* m, void* v,
                         const void* beta1_power, const void* beta2_power, const void* lr,
                         const void* beta1, const void* beta2, const void* epsilon,
                         const void* grad, int64_t row, const DeviceRowIds& ids,
                         int64_t* bad_id) {
  return Grouped(device, "SparseAdamKernel", type, row, ids, bad_id,
                 [&](auto zero, const RowGroups& g) {
                   using T = decltype(zero);
                   SparseAdamKernel<T><<<GridFor(g.n * row), kThreads, 0, device->stream>>>(
                       static_cast<T*>(var), static_cast<T*>(m), static_cast<T*>(v),
                       static_cast<const T*>(beta1_power), static_cast<const T*>(beta2_power),
                       static_cast<const T*>(lr), static_cast<const T*>(beta1),
                       static_cast<const T*>(beta2), static_cast<const T*>(epsilon),
                       static_cast<const T*>(grad), g, row);
                 });
}

GpuError SparseApplyFtrl(GpuDevice* device, ElemType type, void* var, void* accum, void* linear,
                         const void* lr, const void* l1, const void* l2, const void* lr_power,
                         const void* grad, int64_t row, const DeviceRowIds& ids,
                         int64_t* bad_id) {
  return Grouped(device, "SparseFtrlKernel", type, row, ids, bad_id,
                 [&](auto zero, const RowGroups& g) {
                   using T = decltype(zero);
                   SparseFtrlKernel<T><<<GridFor(g.n * row), kThreads, 0, device->stream>>>(
                       static_cast<T*>(var), static_cast<T*>(accum), static_cast<T*>(linear),
                       static_cast<const T*>(lr), static_cast<const T*>(l1),
                       static_cast<const T*>(l2), static_cast<const T*>(lr_power),
                       static_cast<const T*>(grad), g, row);
                 });
}

}  // namespace gpu
}  // namespace actorflow
