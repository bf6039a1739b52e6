// Batch normalization and dropout on the GPU (norm_launch.h).
//
// Per-channel sums over the rows of x [rows, channels] run in two steps, with no
// atomics (so a run is repeatable): ColumnSumsKernel gives each block a tile of 32
// channels (the 32 threads of a warp read 32 neighbouring channels of one row:
// coalesced) and a share of the rows (8 row lanes striding by `splits` blocks), and
// writes the tile's two partial sums per channel; a per-channel kernel then adds the
// `splits` partials and turns them into statistics and coefficients. The element-wise
// passes are grid-stride loops over the matrix.
//
// Scratch layout (doubles): partial [splits][2][channels], then four [channels]
// vectors: the mean and three coefficients a, b, d.
#include <algorithm>
#include <cmath>

#include "kernels/cuda/cuda_internal.cuh"
#include "kernels/cuda/norm_launch.h"
#include "kernels/random_bits.h"

namespace actorflow {
namespace gpu {
namespace {

#define AF_GRID_STRIDE(i, n)                                                \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += int64_t{blockDim.x} * gridDim.x)

constexpr int kTileChannels = 32;
constexpr int kRowLanes = 8;

// What ColumnSumsKernel adds up per channel c: sum(x); sum((x - mean)^2); or, for the
// gradient, sum(dy) and sum(dy * (x - mean)).
enum class SumMode { kX, kSquaredDeviation, kGradient };

int64_t RowSplits(int64_t rows, int64_t channels) {
  const int64_t tiles = (channels + kTileChannels - 1) / kTileChannels;
  // About 32 rows per thread, and no more blocks than a large GPU keeps busy.
  int64_t splits = (rows + 32 * kRowLanes - 1) / (32 * kRowLanes);
  splits = std::min<int64_t>(splits, std::max<int64_t>(1, 2048 / std::max<int64_t>(tiles, 1)));
  return std::min<int64_t>(std::max<int64_t>(splits, 1), 65535);
}

struct Scratch {
  double* partial;
  double* mean;
  double* a;
  double* b;
  double* d;
};

Scratch ScratchOf(double* base, int64_t splits, int64_t channels) {
  double* stats = base + splits * 2 * channels;
  return Scratch{base, stats, stats + channels, stats + 2 * channels, stats + 3 * channels};
}

template <typename T, SumMode kMode>
__global__ void ColumnSumsKernel(const T* __restrict__ x, const T* __restrict__ dy,
                                 const double* __restrict__ mean, int64_t rows,
                                 int64_t channels, int64_t splits, double* __restrict__ partial) {
  __shared__ double sums[2][kRowLanes][kTileChannels];
  const int64_t c = blockIdx.x * int64_t{kTileChannels} + threadIdx.x;
  double acc0 = 0, acc1 = 0;
  if (c < channels) {
    const double center = kMode == SumMode::kX ? 0.0 : mean[c];
    for (int64_t m = blockIdx.y * int64_t{kRowLanes} + threadIdx.y; m < rows;
         m += splits * kRowLanes) {
      const double v = static_cast<double>(x[m * channels + c]);
      if constexpr (kMode == SumMode::kX) {
        acc0 += v;
      } else if constexpr (kMode == SumMode::kSquaredDeviation) {
        acc0 += (v - center) * (v - center);
      } else {
        const double g = static_cast<double>(dy[m * channels + c]);
        acc0 += g;
        acc1 += g * (v - center);
      }
    }
  }
  sums[0][threadIdx.y][threadIdx.x] = acc0;
  sums[1][threadIdx.y][threadIdx.x] = acc1;
  __syncthreads();
  if (threadIdx.y == 0 && c < channels) {
    for (int lane = 1; lane < kRowLanes; ++lane) {
      acc0 += sums[0][lane][threadIdx.x];
      acc1 += sums[1][lane][threadIdx.x];
    }
    partial[(blockIdx.y * 2) * channels + c] = acc0;
    partial[(blockIdx.y * 2 + 1) * channels + c] = acc1;
  }
}

// The totals of channel c over the row splits.
__device__ __forceinline__ void Totals(const double* partial, int64_t splits, int64_t channels,
                                       int64_t c, double* total0, double* total1) {
  double t0 = 0, t1 = 0;
  for (int64_t s = 0; s < splits; ++s) {
    t0 += partial[(s * 2) * channels + c];
    t1 += partial[(s * 2 + 1) * channels + c];
  }
  *total0 = t0;
  *total1 = t1;
}

__global__ void MeanKernel(Scratch s, int64_t rows, int64_t channels, int64_t splits) {
  AF_GRID_STRIDE(c, channels) {
    double sum, unused;
    Totals(s.partial, splits, channels, c, &sum, &unused);
    s.mean[c] = sum / static_cast<double>(rows);  // NaN for no rows, as on the CPU
  }
}

// Training: the biased variance from the squared deviations; inference: the given
// statistics. Sets mean and a = scale / sqrt(variance + epsilon), and the outputs.
template <typename T>
__global__ void ForwardStatisticsKernel(Scratch s, int64_t rows, int64_t channels,
                                        int64_t splits, double epsilon, bool training,
                                        const T* __restrict__ scale, const T* __restrict__ mean_in,
                                        const T* __restrict__ variance_in, T* batch_mean,
                                        T* batch_variance) {
  AF_GRID_STRIDE(c, channels) {
    double mean, variance;
    if (training) {
      double squares, unused;
      Totals(s.partial, splits, channels, c, &squares, &unused);
      mean = s.mean[c];
      variance = squares / static_cast<double>(rows);
      const double corrected =
          rows > 1 ? variance * static_cast<double>(rows) / static_cast<double>(rows - 1)
                   : variance;
      batch_variance[c] = static_cast<T>(corrected);
    } else {
      mean = static_cast<double>(mean_in[c]);
      variance = static_cast<double>(variance_in[c]);
      batch_variance[c] = variance_in[c];
    }
    s.mean[c] = mean;
    s.a[c] = static_cast<double>(scale[c]) / sqrt(variance + epsilon);
    batch_mean[c] = static_cast<T>(mean);
  }
}

template <typename T>
__global__ void NormalizeKernel(Scratch s, int64_t channels, const T* __restrict__ x,
                                const T* __restrict__ offset, T* __restrict__ y, int64_t n) {
  AF_GRID_STRIDE(i, n) {
    const int64_t c = i % channels;
    y[i] = (x[i] - static_cast<T>(s.mean[c])) * static_cast<T>(s.a[c]) + offset[c];
  }
}

// The mean as double, for the gradient's sums.
template <typename T>
__global__ void LoadMeanKernel(Scratch s, int64_t channels, const T* __restrict__ mean_in) {
  AF_GRID_STRIDE(c, channels) { s.mean[c] = static_cast<double>(mean_in[c]); }
}

// dscale, doffset and dx = a * dy + b * (x - mean) + d per channel (b = d = 0 in
// inference), r = 1 / sqrt(biased variance + epsilon).
template <typename T>
__global__ void GradientCoefficientsKernel(Scratch s, int64_t rows, int64_t channels,
                                           int64_t splits, double epsilon, bool training,
                                           const T* __restrict__ scale,
                                           const T* __restrict__ variance_in, T* dscale,
                                           T* doffset) {
  AF_GRID_STRIDE(c, channels) {
    double sum_dy, sum_dyx;
    Totals(s.partial, splits, channels, c, &sum_dy, &sum_dyx);
    double variance = static_cast<double>(variance_in[c]);
    if (training && rows > 1) {
      variance = variance * static_cast<double>(rows - 1) / static_cast<double>(rows);
    }
    const double r = 1.0 / sqrt(variance + epsilon);
    const double a = static_cast<double>(scale[c]) * r;
    dscale[c] = static_cast<T>(sum_dyx * r);
    doffset[c] = static_cast<T>(sum_dy);
    s.a[c] = a;
    s.b[c] = training && rows > 0 ? -a * r * r * sum_dyx / static_cast<double>(rows) : 0.0;
    s.d[c] = training && rows > 0 ? -a * sum_dy / static_cast<double>(rows) : 0.0;
  }
}

template <typename T>
__global__ void InputGradientKernel(Scratch s, int64_t channels, bool training,
                                    const T* __restrict__ dy, const T* __restrict__ x,
                                    T* __restrict__ dx, int64_t n) {
  AF_GRID_STRIDE(i, n) {
    const int64_t c = i % channels;
    const T a = static_cast<T>(s.a[c]);
    dx[i] = training ? a * dy[i] + static_cast<T>(s.b[c]) * (x[i] - static_cast<T>(s.mean[c])) +
                           static_cast<T>(s.d[c])
                     : a * dy[i];
  }
}

template <typename T>
__global__ void DropoutKernel(uint64_t key, uint64_t threshold, T scale,
                              const T* __restrict__ x, T* __restrict__ y, T* __restrict__ mask,
                              int64_t n) {
  AF_GRID_STRIDE(i, n) {
    const T m = DropoutKeeps(key, static_cast<uint64_t>(i), threshold) ? scale : T(0);
    mask[i] = m;
    y[i] = x[i] * m;
  }
}

#undef AF_GRID_STRIDE

// Queues ColumnSumsKernel<T, kMode> over x [rows, channels].
template <typename T, SumMode kMode>
void LaunchColumnSums(GpuDevice* device, const T* x, const T* dy, const Scratch& s,
                      int64_t rows, int64_t channels, int64_t splits) {
  const dim3 block(kTileChannels, kRowLanes);
  const dim3 grid(static_cast<unsigned int>((channels + kTileChannels - 1) / kTileChannels),
                  static_cast<unsigned int>(splits));
  ColumnSumsKernel<T, kMode><<<grid, block, 0, device->stream>>>(x, dy, s.mean, rows, channels,
                                                                 splits, s.partial);
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

int64_t BatchNormScratchDoubles(int64_t rows, int64_t channels) {
  return RowSplits(rows, channels) * 2 * channels + 4 * channels;
}

GpuError FusedBatchNorm(GpuDevice* device, ElemType type, int64_t rows, int64_t channels,
                        double epsilon, bool is_training, const void* x, const void* scale,
                        const void* offset, const void* mean, const void* variance, void* y,
                        void* batch_mean, void* batch_variance, double* scratch) {
  if (channels == 0) return GpuError();
  const int64_t splits = RowSplits(rows, channels);
  const Scratch s = ScratchOf(scratch, splits, channels);
  const int64_t n = rows * channels;
  return ForFloat("FusedBatchNorm", type, [&](auto zero) {
    using T = decltype(zero);
    const T* in = static_cast<const T*>(x);
    if (is_training) {
      LaunchColumnSums<T, SumMode::kX>(device, in, nullptr, s, rows, channels, splits);
      MeanKernel<<<GridFor(channels), kThreads, 0, device->stream>>>(s, rows, channels, splits);
      LaunchColumnSums<T, SumMode::kSquaredDeviation>(device, in, nullptr, s, rows, channels,
                                                      splits);
    }
    ForwardStatisticsKernel<T><<<GridFor(channels), kThreads, 0, device->stream>>>(
        s, rows, channels, splits, epsilon, is_training, static_cast<const T*>(scale),
        static_cast<const T*>(mean), static_cast<const T*>(variance),
        static_cast<T*>(batch_mean), static_cast<T*>(batch_variance));
    if (n > 0) {
      NormalizeKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
          s, channels, in, static_cast<const T*>(offset), static_cast<T*>(y), n);
    }
  });
}

GpuError FusedBatchNormGrad(GpuDevice* device, ElemType type, int64_t rows, int64_t channels,
                            double epsilon, bool is_training, const void* dy, const void* x,
                            const void* scale, const void* mean, const void* variance,
                            void* dx, void* dscale, void* doffset, double* scratch) {
  if (channels == 0) return GpuError();
  const int64_t splits = RowSplits(rows, channels);
  const Scratch s = ScratchOf(scratch, splits, channels);
  const int64_t n = rows * channels;
  return ForFloat("FusedBatchNormGrad", type, [&](auto zero) {
    using T = decltype(zero);
    const T* in = static_cast<const T*>(x);
    const T* grad = static_cast<const T*>(dy);
    LoadMeanKernel<T><<<GridFor(channels), kThreads, 0, device->stream>>>(
        s, channels, static_cast<const T*>(mean));
    LaunchColumnSums<T, SumMode::kGradient>(device, in, grad, s, rows, channels, splits);
    GradientCoefficientsKernel<T><<<GridFor(channels), kThreads, 0, device->stream>>>(
        s, rows, channels, splits, epsilon, is_training, static_cast<const T*>(scale),
        static_cast<const T*>(variance), static_cast<T*>(dscale), static_cast<T*>(doffset));
    if (n > 0) {
      InputGradientKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
          s, channels, is_training, grad, in, static_cast<T*>(dx), n);
    }
  });
}

GpuError Dropout(GpuDevice* device, ElemType type, uint64_t key, double keep_prob,
                 const void* x, void* y, void* mask, int64_t n) {
  if (n == 0) return GpuError();
  return ForFloat("Dropout", type, [&](auto zero) {
    using T = decltype(zero);
    DropoutKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
        key, KeepThreshold(keep_prob), static_cast<T>(1.0 / keep_prob), static_cast<const T*>(x),
        static_cast<T*>(y), static_cast<T*>(mask), n);
  });
}

}  // namespace gpu
}  // namespace actorflow
