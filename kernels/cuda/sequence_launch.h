// The GPU math of the sequence models' ops LayerNorm, LayerNormGrad (sequence.cu),
// Gelu and GeluGrad (gelu.cu), without CUDA types, in the manner of gpu_launch.h: each
// function checks nothing about shapes (the kernel classes in sequence_kernels.cc did,
// with kernels/cpu/math_op_shapes.h), queues its work on the device's stream and
// returns at once. Pointers are device memory. Element types: float32 and float64.
// BatchMatMul needs no math of its own: it is MatMul and StridedBatchedMatMul
// (gpu_launch.h).
//
// The arithmetic is the CPU kernels' (kernels/cpu/layer_norm_kernels.cc,
// kernels/cpu/math_kernels.cc): LayerNorm's row statistics and sums in double, two
// passes for the variance, the normalization in double; Gelu in the element type.
// Sums are taken in another order (a block's threads, then their totals), so results
// agree within rounding; the order is fixed (no atomics), so a run is repeatable.
//
// Thread safety: as gpu_device.h: any thread, work ordered by the device's stream.
#ifndef ACTORFLOW_KERNELS_CUDA_SEQUENCE_LAUNCH_H_
#define ACTORFLOW_KERNELS_CUDA_SEQUENCE_LAUNCH_H_

#include <cstdint>

#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/gpu_launch.h"

namespace actorflow {
namespace gpu {

// x is the row-major matrix [rows, features] (x [..., D] with D = features >= 1), gamma
// and beta [features], mean and inv_std [rows]:
//   mean = the row's mean, inv_std = 1 / sqrt(biased variance + epsilon),
//   y = (x - mean) * inv_std * gamma + beta.
GpuError LayerNorm(GpuDevice* device, ElemType type, int64_t rows, int64_t features,
                   double epsilon, const void* x, const void* gamma, const void* beta, void* y,
                   void* mean, void* inv_std);

// The doubles of device scratch memory that LayerNormGrad needs: the per-block partial
// sums of dgamma and dbeta.
int64_t LayerNormGradScratchDoubles(int64_t rows, int64_t features);

// With x_hat = (x - mean) * inv_std and g = dy * gamma per row (dy, x [rows, features]):
//   dx = inv_std * (g - sum(g) / D - x_hat * sum(g * x_hat) / D),
//   dgamma = sum over rows of dy * x_hat, dbeta = sum over rows of dy (zeros for no rows).
GpuError LayerNormGrad(GpuDevice* device, ElemType type, int64_t rows, int64_t features,
                       const void* dy, const void* x, const void* mean, const void* inv_std,
                       const void* gamma, void* dx, void* dgamma, void* dbeta, double* scratch);

// y[i] = Gelu(x[i]) for i < n: x * Phi(x), or with `approximate` the tanh form.
GpuError Gelu(GpuDevice* device, ElemType type, bool approximate, const void* x, void* y,
              int64_t n);

// dx[i] = dy[i] * Gelu'(x[i]) for i < n, the derivative of the same form.
GpuError GeluGrad(GpuDevice* device, ElemType type, bool approximate, const void* dy,
                  const void* x, void* dx, int64_t n);

}  // namespace gpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CUDA_SEQUENCE_LAUNCH_H_
