// LayerNorm and LayerNormGrad on the GPU (sequence_launch.h; Gelu is in gelu.cu).
//
// The row kernels give each row of a [rows, D] matrix to one block (a block takes
// several rows, striding by the grid, when there are more rows than blocks): its
// threads stride over the row and BlockSum adds their double partial sums, the same
// way every time. dgamma and dbeta of LayerNormGrad are sums over the rows, taken in
// two steps without atomics as norm.cu takes its per-channel sums: FeatureSumsKernel
// gives each block a tile of 32 features (a warp reads 32 neighbouring features of one
// row: coalesced) and a share of the rows, and writes the tile's partial sums;
// FeatureTotalsKernel adds the partials of each feature.
//
// Scratch layout of LayerNormGrad (doubles): partial [splits][2][features].
#include <algorithm>
#include <cmath>

#include "kernels/cuda/cuda_internal.cuh"
#include "kernels/cuda/sequence_launch.h"

namespace actorflow {
namespace gpu {
namespace {

constexpr int kWarp = 32;
constexpr int kMaxRowThreads = 256;
constexpr int kTileFeatures = 32;
constexpr int kRowLanes = 8;

// Threads per row: a power of two from one warp up to kMaxRowThreads, no more than
// the row needs.
int RowThreads(int64_t features) {
  int threads = kWarp;
  while (threads < kMaxRowThreads && threads < features) threads *= 2;
  return threads;
}

// Blocks for the row kernels: one per row, capped (each block loops over its rows).
unsigned int RowBlocks(int64_t rows) {
  return static_cast<unsigned int>(std::min<int64_t>(std::max<int64_t>(rows, 1), 65535 * 8));
}

// The row splits of FeatureSumsKernel: about 32 rows per thread, and no more blocks
// than a large GPU keeps busy.
int64_t RowSplits(int64_t rows, int64_t features) {
  const int64_t tiles = (features + kTileFeatures - 1) / kTileFeatures;
  int64_t splits = (rows + 32 * kRowLanes - 1) / (32 * kRowLanes);
  splits = std::min<int64_t>(splits, std::max<int64_t>(1, 2048 / std::max<int64_t>(tiles, 1)));
  return std::min<int64_t>(std::max<int64_t>(splits, 1), 65535);
}

// The sum of v over the block's threads, returned to every thread. Every thread of the
// block calls it (it synchronizes the block); blockDim.x is a multiple of kWarp and at
// most kWarp * kWarp. `shared` holds kWarp + 1 doubles.
__device__ double BlockSum(double v, double* shared) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    v += __shfl_down_sync(0xffffffffu, v, offset);
  }
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
  __syncthreads();  // the readers of the previous call's total are past it
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int warps = blockDim.x / kWarp;
    v = lane < warps ? shared[lane] : 0.0;
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {
      v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    if (lane == 0) shared[kWarp] = v;
  }
  __syncthreads();
  return shared[kWarp];
}

template <typename T>
__global__ void LayerNormKernel(const T* __restrict__ x, const T* __restrict__ gamma,
                                const T* __restrict__ beta, int64_t rows, int64_t features,
                                double epsilon, T* __restrict__ y, T* __restrict__ mean_out,
                                T* __restrict__ inv_std_out) {
  __shared__ double shared[kWarp + 1];
  const double count = static_cast<double>(features);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* in = x + r * features;
    T* out = y + r * features;
    double sum = 0.0;
    for (int64_t j = threadIdx.x; j < features; j += blockDim.x) {
      sum += static_cast<double>(in[j]);
    }
    const double mean = BlockSum(sum, shared) / count;
    double squares = 0.0;
    for (int64_t j = threadIdx.x; j < features; j += blockDim.x) {
      const double dev = static_cast<double>(in[j]) - mean;
      squares += dev * dev;
    }
    const double inv_std = 1.0 / sqrt(BlockSum(squares, shared) / count + epsilon);
    if (threadIdx.x == 0) {
      mean_out[r] = static_cast<T>(mean);
      inv_std_out[r] = static_cast<T>(inv_std);
    }
    for (int64_t j = threadIdx.x; j < features; j += blockDim.x) {
      out[j] = static_cast<T>((static_cast<double>(in[j]) - mean) * inv_std *
                                  static_cast<double>(gamma[j]) +
                              static_cast<double>(beta[j]));
    }
  }
}

// dx of LayerNormGrad, one row per block.
template <typename T>
__global__ void LayerNormInputGradKernel(const T* __restrict__ dy, const T* __restrict__ x,
                                         const T* __restrict__ mean,
                                         const T* __restrict__ inv_std,
                                         const T* __restrict__ gamma, int64_t rows,
                                         int64_t features, T* __restrict__ dx) {
  __shared__ double shared[kWarp + 1];
  const double inv_d = 1.0 / static_cast<double>(features);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* in = x + r * features;
    const T* grad = dy + r * features;
    T* out = dx + r * features;
    const double m = static_cast<double>(mean[r]);
    const double s = static_cast<double>(inv_std[r]);
    double s1 = 0.0, s2 = 0.0;
    for (int64_t j = threadIdx.x; j < features; j += blockDim.x) {
      const double xhat = (static_cast<double>(in[j]) - m) * s;
      const double scaled = static_cast<double>(grad[j]) * static_cast<double>(gamma[j]);
      s1 += scaled;
      s2 += scaled * xhat;
    }
    const double mean_term = BlockSum(s1, shared) * inv_d;
    const double xhat_term = BlockSum(s2, shared) * inv_d;
    for (int64_t j = threadIdx.x; j < features; j += blockDim.x) {
      const double xhat = (static_cast<double>(in[j]) - m) * s;
      const double scaled = static_cast<double>(grad[j]) * static_cast<double>(gamma[j]);
      out[j] = static_cast<T>(s * (scaled - mean_term - xhat * xhat_term));
    }
  }
}

// The partial sums of dy * x_hat (for dgamma) and dy (for dbeta) of each feature over
// this block's rows.
template <typename T>
__global__ void FeatureSumsKernel(const T* __restrict__ dy, const T* __restrict__ x,
                                  const T* __restrict__ mean, const T* __restrict__ inv_std,
                                  int64_t rows, int64_t features, int64_t splits,
                                  double* __restrict__ partial) {
  __shared__ double sums[2][kRowLanes][kTileFeatures];
  const int64_t j = blockIdx.x * int64_t{kTileFeatures} + threadIdx.x;
  double acc_gamma = 0.0, acc_beta = 0.0;
  if (j < features) {
    for (int64_t r = blockIdx.y * int64_t{kRowLanes} + threadIdx.y; r < rows;
         r += splits * kRowLanes) {
      const double g = static_cast<double>(dy[r * features + j]);
      const double xhat = (static_cast<double>(x[r * features + j]) -
                           static_cast<double>(mean[r])) *
                          static_cast<double>(inv_std[r]);
      acc_gamma += g * xhat;
      acc_beta += g;
    }
  }
  sums[0][threadIdx.y][threadIdx.x] = acc_gamma;
  sums[1][threadIdx.y][threadIdx.x] = acc_beta;
  __syncthreads();
  if (threadIdx.y == 0 && j < features) {
    for (int lane = 1; lane < kRowLanes; ++lane) {
      acc_gamma += sums[0][lane][threadIdx.x];
      acc_beta += sums[1][lane][threadIdx.x];
    }
    partial[(blockIdx.y * 2) * features + j] = acc_gamma;
    partial[(blockIdx.y * 2 + 1) * features + j] = acc_beta;
  }
}

template <typename T>
__global__ void FeatureTotalsKernel(const double* __restrict__ partial, int64_t features,
                                    int64_t splits, T* __restrict__ dgamma,
                                    T* __restrict__ dbeta) {
  for (int64_t j = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; j < features;
       j += int64_t{blockDim.x} * gridDim.x) {
    double total_gamma = 0.0, total_beta = 0.0;
    for (int64_t s = 0; s < splits; ++s) {
      total_gamma += partial[(s * 2) * features + j];
      total_beta += partial[(s * 2 + 1) * features + j];
    }
    dgamma[j] = static_cast<T>(total_gamma);
    dbeta[j] = static_cast<T>(total_beta);
  }
}

// Runs launch(T{}) for a float `type`; the first launch error, or NotFloat.
template <typename Launch>
GpuError ForFloat(const char* what, ElemType type, Launch launch) {
  GpuError e;
  if (!VisitFloat(type, [&](auto zero) {
        launch(zero);
        e = LaunchError(what);
      })) {
    return NotFloat(what);
  }
  return e;
}

}  // namespace

GpuError LayerNorm(GpuDevice* device, ElemType type, int64_t rows, int64_t features,
                   double epsilon, const void* x, const void* gamma, const void* beta, void* y,
                   void* mean, void* inv_std) {
  if (rows == 0 || features == 0) return GpuError();
  return ForFloat("LayerNorm", type, [&](auto zero) {
    using T = decltype(zero);
    LayerNormKernel<T><<<RowBlocks(rows), RowThreads(features), 0, device->stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(gamma), static_cast<const T*>(beta),
        rows, features, epsilon, static_cast<T*>(y), static_cast<T*>(mean),
        static_cast<T*>(inv_std));
  });
}

int64_t LayerNormGradScratchDoubles(int64_t rows, int64_t features) {
  return RowSplits(rows, features) * 2 * features;
}

GpuError LayerNormGrad(GpuDevice* device, ElemType type, int64_t rows, int64_t features,
                       const void* dy, const void* x, const void* mean, const void* inv_std,
                       const void* gamma, void* dx, void* dgamma, void* dbeta,
                       double* scratch) {
  if (features == 0) return GpuError();
  const int64_t splits = RowSplits(rows, features);
  return ForFloat("LayerNormGrad", type, [&](auto zero) {
    using T = decltype(zero);
    const T* grad = static_cast<const T*>(dy);
    const T* in = static_cast<const T*>(x);
    const T* row_mean = static_cast<const T*>(mean);
    const T* row_inv_std = static_cast<const T*>(inv_std);
    if (rows > 0) {
      LayerNormInputGradKernel<T><<<RowBlocks(rows), RowThreads(features), 0, device->stream>>>(
          grad, in, row_mean, row_inv_std, static_cast<const T*>(gamma), rows, features,
          static_cast<T*>(dx));
    }
    const dim3 block(kTileFeatures, kRowLanes);
    const dim3 grid(static_cast<unsigned int>((features + kTileFeatures - 1) / kTileFeatures),
                    static_cast<unsigned int>(splits));
    FeatureSumsKernel<T><<<grid, block, 0, device->stream>>>(grad, in, row_mean, row_inv_std,
                                                             rows, features, splits, scratch);
    FeatureTotalsKernel<T><<<GridFor(features), kThreads, 0, device->stream>>>(
        scratch, features, splits, static_cast<T*>(dgamma), static_cast<T*>(dbeta));
  });
}

}  // namespace gpu
}  // namespace actorflow
