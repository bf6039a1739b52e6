// Reductions, softmax and the cross-entropy losses on the GPU (gpu_launch.h). One
// thread block per output element (per row for the row ops); its threads stride over
// the reduced elements and combine them in shared memory. Sums accumulate in double,
// as the CPU kernels do, so that float32 results match them closely.
#include <cfloat>
#include <cmath>

#include "kernels/cuda/cuda_internal.cuh"

namespace actorflow {
namespace gpu {
namespace {

// Reduces `v` over the block (blockDim.x a power of two) with `op`; every thread
// gets the result. `shared` holds blockDim.x values.
template <typename A, typename Op>
__device__ A BlockReduce(A v, Op op, A* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) shared[threadIdx.x] = op(shared[threadIdx.x], shared[threadIdx.x + s]);
    __syncthreads();
  }
  const A result = shared[0];
  __syncthreads();
  return result;
}

struct SumOp {
  template <typename A>
  __device__ A operator()(A a, A b) const { return a + b; }
};
// NaN propagates: once combined in, it stays (as in the CPU kernels).
struct MaxOp {
  template <typename A>
  __device__ A operator()(A a, A b) const { return (a > b || a != a) ? a : b; }
};
struct MinOp {
  template <typename A>
  __device__ A operator()(A a, A b) const { return (a < b || a != a) ? a : b; }
};

template <typename T, ReduceOp kOp>
__global__ void ReduceKernel(const T* __restrict__ x, StridedIndex kept, StridedIndex reduced,
                             int64_t reduced_count, T* __restrict__ y, int64_t out_count) {
  extern __shared__ unsigned char shared_bytes[];
  for (int64_t o = blockIdx.x; o < out_count; o += gridDim.x) {
    const T* base = x + OffsetOf(kept, o);
    if constexpr (kOp == ReduceOp::kSum || kOp == ReduceOp::kMean) {
      double acc = 0;
      for (int64_t r = threadIdx.x; r < reduced_count; r += blockDim.x) {
        acc += static_cast<double>(base[OffsetOf(reduced, r)]);
      }
      acc = BlockReduce(acc, SumOp(), reinterpret_cast<double*>(shared_bytes));
      if (threadIdx.x == 0) {
        y[o] = static_cast<T>(kOp == ReduceOp::kMean ? acc / static_cast<double>(reduced_count)
                                                     : acc);
      }
    } else {
      T acc = kOp == ReduceOp::kMax ? T(-INFINITY) : T(INFINITY);
      for (int64_t r = threadIdx.x; r < reduced_count; r += blockDim.x) {
        const T v = base[OffsetOf(reduced, r)];
        acc = kOp == ReduceOp::kMax ? MaxOp()(acc, v) : MinOp()(acc, v);
      }
      T* shared = reinterpret_cast<T*>(shared_bytes);
      acc = kOp == ReduceOp::kMax ? BlockReduce(acc, MaxOp(), shared)
                                  : BlockReduce(acc, MinOp(), shared);
      if (threadIdx.x == 0) y[o] = acc;
    }
  }
}

// The threads of a block for a reduction of n elements: a power of two in [32, 256].
unsigned int ThreadsFor(int64_t n) {
  unsigned int t = 32;
  while (t < kThreads && t < n) t *= 2;
  return t;
}

unsigned int BlocksFor(int64_t outputs) {
  return static_cast<unsigned int>(outputs < 65535 * 16 ? (outputs > 0 ? outputs : 1)
                                                        : 65535 * 16);
}

// For row r of logits [rows, cols]: the maximum and log(sum(exp(l - max))).
template <typename T>
__device__ void RowStats(const T* __restrict__ l, int64_t cols, double* shared, T* max_out,
                         double* lse_out) {
  T m = T(-INFINITY);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = MaxOp()(m, l[j]);
  m = static_cast<T>(BlockReduce(static_cast<double>(m), MaxOp(), shared));
  double sum = 0;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += exp(static_cast<double>(l[j] - m));
  sum = BlockReduce(sum, SumOp(), shared);
  *max_out = m;
  *lse_out = log(sum);
}

template <typename T>
__global__ void SoftmaxKernel(const T* __restrict__ logits, T* __restrict__ out, int64_t rows,
                              int64_t cols, bool log_softmax) {
  extern __shared__ unsigned char shared_bytes[];
  double* shared = reinterpret_cast<double*>(shared_bytes);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* l = logits + r * cols;
    T* o = out + r * cols;
    T m;
    double lse;
    RowStats(l, cols, shared, &m, &lse);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const double shifted = static_cast<double>(l[j] - m) - lse;
      o[j] = static_cast<T>(log_softmax ? shifted : exp(shifted));
    }
  }
}

template <typename T>
__global__ void XentKernel(const T* __restrict__ logits, const T* __restrict__ labels,
                           T* __restrict__ loss, T* __restrict__ backprop, int64_t rows,
                           int64_t cols) {
  extern __shared__ unsigned char shared_bytes[];
  double* shared = reinterpret_cast<double*>(shared_bytes);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* l = logits + r * cols;
    const T* y = labels + r * cols;
    T* g = backprop + r * cols;
    T m;
    double lse;
    RowStats(l, cols, shared, &m, &lse);
    double total = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const double log_p = static_cast<double>(l[j] - m) - lse;
      total += static_cast<double>(y[j]) * -log_p;
      g[j] = static_cast<T>(exp(log_p) - static_cast<double>(y[j]));
    }
    total = BlockReduce(total, SumOp(), shared);
    if (threadIdx.x == 0) loss[r] = static_cast<T>(total);
  }
}

template <typename T, typename L>
__global__ void SparseXentKernel(const T* __restrict__ logits, const L* __restrict__ labels,
                                 T* __restrict__ loss, T* __restrict__ backprop, int64_t rows,
                                 int64_t cols, unsigned long long* bad_row) {
  extern __shared__ unsigned char shared_bytes[];
  double* shared = reinterpret_cast<double*>(shared_bytes);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* l = logits + r * cols;
    T* g = backprop + r * cols;
    const int64_t label = static_cast<int64_t>(labels[r]);
    const bool valid = label >= 0 && label < cols;
    if (!valid && threadIdx.x == 0) atomicMin(bad_row, static_cast<unsigned long long>(r));
    T m;
    double lse;
    RowStats(l, cols, shared, &m, &lse);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const double p = exp(static_cast<double>(l[j] - m) - lse);
      g[j] = static_cast<T>(valid ? p - (j == label ? 1.0 : 0.0) : NAN);
    }
    if (threadIdx.x == 0) {
      loss[r] = static_cast<T>(valid ? lse - static_cast<double>(l[label] - m) : NAN);
    }
  }
}

// bad[0] holds the first bad row as an unsigned minimum (all ones = none); turns it
// into the signed row (-1 = none) and bad[1] into that row's label.
template <typename L>
__global__ void FinishBadLabel(const L* __restrict__ labels, int64_t* bad) {
  const unsigned long long row = static_cast<unsigned long long>(bad[0]);
  if (row == ~0ULL) {
    bad[0] = -1;
    bad[1] = 0;
  } else {
    bad[1] = static_cast<int64_t>(labels[row]);
  }
}

__global__ void ResetBadLabel(int64_t* bad) {
  bad[0] = static_cast<int64_t>(~0ULL);
  bad[1] = 0;
}

}  // namespace

GpuError Reduce(GpuDevice* device, ReduceOp op, ElemType type, const void* x,
                const StridedIndex& kept, const StridedIndex& reduced, int64_t reduced_count,
                void* y, int64_t out_count) {
  if (out_count == 0) return GpuError();
  const unsigned int threads = ThreadsFor(reduced_count);
  const bool known = VisitFloat(type, [&](auto zero) {
    using T = decltype(zero);
    const auto* in = static_cast<const T*>(x);
    auto* out = static_cast<T*>(y);
    const size_t shared = threads * sizeof(double);
    const unsigned int blocks = BlocksFor(out_count);
    switch (op) {
      case ReduceOp::kSum:
        ReduceKernel<T, ReduceOp::kSum><<<blocks, threads, shared, device->stream>>>(
            in, kept, reduced, reduced_count, out, out_count);
        break;
      case ReduceOp::kMean:
        ReduceKernel<T, ReduceOp::kMean><<<blocks, threads, shared, device->stream>>>(
            in, kept, reduced, reduced_count, out, out_count);
        break;
      case ReduceOp::kMax:
        ReduceKernel<T, ReduceOp::kMax><<<blocks, threads, shared, device->stream>>>(
            in, kept, reduced, reduced_count, out, out_count);
        break;
      case ReduceOp::kMin:
        ReduceKernel<T, ReduceOp::kMin><<<blocks, threads, shared, device->stream>>>(
            in, kept, reduced, reduced_count, out, out_count);
        break;
    }
  });
  if (!known) return NotFloat("Reduce");
  return LaunchError("ReduceKernel");
}

GpuError Softmax(GpuDevice* device, ElemType type, bool log, const void* logits, void* out,
                 int64_t rows, int64_t cols) {
  if (rows == 0 || cols == 0) return GpuError();
  const unsigned int threads = ThreadsFor(cols);
  const bool known = VisitFloat(type, [&](auto zero) {
    using T = decltype(zero);
    SoftmaxKernel<T><<<BlocksFor(rows), threads, threads * sizeof(double), device->stream>>>(
        static_cast<const T*>(logits), static_cast<T*>(out), rows, cols, log);
  });
  if (!known) return NotFloat("Softmax");
  return LaunchError("SoftmaxKernel");
}

GpuError SoftmaxCrossEntropy(GpuDevice* device, ElemType type, const void* logits,
                             const void* labels, void* loss, void* backprop, int64_t rows,
                             int64_t cols) {
  if (rows == 0) return GpuError();
  const unsigned int threads = ThreadsFor(cols);
  const bool known = VisitFloat(type, [&](auto zero) {
    using T = decltype(zero);
    XentKernel<T><<<BlocksFor(rows), threads, threads * sizeof(double), device->stream>>>(
        static_cast<const T*>(logits), static_cast<const T*>(labels), static_cast<T*>(loss),
        static_cast<T*>(backprop), rows, cols);
  });
  if (!known) return NotFloat("SoftmaxCrossEntropy");
  return LaunchError("XentKernel");
}

GpuError SparseSoftmaxCrossEntropy(GpuDevice* device, ElemType type, const void* logits,
                                   const void* labels, ElemType label_type, void* loss,
                                   void* backprop, int64_t rows, int64_t cols,
                                   int64_t* bad_label) {
  if (label_type != ElemType::kInt32 && label_type != ElemType::kInt64) {
    return GpuError("SparseSoftmaxCrossEntropy: labels must be int32 or int64");
  }
  ResetBadLabel<<<1, 1, 0, device->stream>>>(bad_label);
  if (rows > 0) {
    const unsigned int threads = ThreadsFor(cols);
    const bool known = VisitFloat(type, [&](auto zero) {
      using T = decltype(zero);
      auto launch = [&](auto label_zero) {
        using L = decltype(label_zero);
        SparseXentKernel<T, L>
            <<<BlocksFor(rows), threads, threads * sizeof(double), device->stream>>>(
                static_cast<const T*>(logits), static_cast<const L*>(labels),
                static_cast<T*>(loss), static_cast<T*>(backprop), rows, cols,
                reinterpret_cast<unsigned long long*>(bad_label));
      };
      if (label_type == ElemType::kInt32) {
        launch(int32_t{});
      } else {
        launch(int64_t{});
      }
    });
    if (!known) return NotFloat("SparseSoftmaxCrossEntropy");
  }
  if (label_type == ElemType::kInt32) {
    FinishBadLabel<int32_t><<<1, 1, 0, device->stream>>>(static_cast<const int32_t*>(labels),
                                                         bad_label);
  } else {
    FinishBadLabel<int64_t><<<1, 1, 0, device->stream>>>(static_cast<const int64_t*>(labels),
                                                         bad_label);
  }
  return LaunchError("SparseXentKernel");
}

}  // namespace gpu
}  // namespace actorflow
