// The GPU math of batch normalization and dropout (norm.cu), without CUDA types, in
// the manner of gpu_launch.h: each function checks nothing about shapes (the kernel
// classes in norm_kernels.cc did, with kernels/cpu/batch_norm_shapes.h), queues its
// work on the device's stream and returns at once. Pointers are device memory.
// Element types: float32 and float64.
//
// x is the row-major matrix [rows, channels] (an NHWC image batch with rows = N*H*W);
// per-channel vectors are [channels]. The arithmetic is the CPU kernels'
// (kernels/cpu/batch_norm_kernels.cc): per-channel sums in double, two passes for the
// statistics, the element-wise passes in the element type. The sums are taken in
// another order (row blocks, then their totals), so results agree within rounding.
//
// Thread safety: as gpu_device.h: any thread, work ordered by the device's stream.
#ifndef ACTORFLOW_KERNELS_CUDA_NORM_LAUNCH_H_
#define ACTORFLOW_KERNELS_CUDA_NORM_LAUNCH_H_

#include <cstdint>

#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/gpu_launch.h"

namespace actorflow {
namespace gpu {

// The doubles of device scratch memory that FusedBatchNorm / FusedBatchNormGrad need
// for a [rows, channels] input: the per-block partial sums and the per-channel
// coefficients.
int64_t BatchNormScratchDoubles(int64_t rows, int64_t channels);

// y = (x - mean) * scale / sqrt(variance + epsilon) + offset per channel. Training:
// mean and the biased variance are the batch's (mean and variance are not read);
// batch_mean gets the mean, batch_variance the Bessel-corrected variance (NaN both
// when rows = 0). Inference: the given mean and variance, copied to batch_mean and
// batch_variance.
GpuError FusedBatchNorm(GpuDevice* device, ElemType type, int64_t rows, int64_t channels,
                        double epsilon, bool is_training, const void* x, const void* scale,
                        const void* offset, const void* mean, const void* variance, void* y,
                        void* batch_mean, void* batch_variance, double* scratch);

// The gradients of FusedBatchNorm's y for dy [rows, channels]: dx, dscale, doffset.
// Training: mean and variance are the forward's batch_mean and Bessel-corrected
// batch_variance, and dx includes the dependence of the statistics on x.
GpuError FusedBatchNormGrad(GpuDevice* device, ElemType type, int64_t rows, int64_t channels,
                            double epsilon, bool is_training, const void* dy, const void* x,
                            const void* scale, const void* mean, const void* variance,
                            void* dx, void* dscale, void* doffset, double* scratch);

// mask[i] = 1 / keep_prob where kernels/random_bits.h's DropoutKeeps(key, i,
// keep_prob), else 0; y[i] = x[i] * mask[i], for i < n.
GpuError Dropout(GpuDevice* device, ElemType type, uint64_t key, double keep_prob,
                 const void* x, void* y, void* mask, int64_t n);

}  // namespace gpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CUDA_NORM_LAUNCH_H_
