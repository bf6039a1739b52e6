// The optimizers' in-place updates on the GPU (gpu_launch.h): one thread per element
// runs the rule of kernels/optimizer_rules.h, the CPU kernels' and the parameter
// shards' arithmetic. Hyper-parameters are read from device memory by every thread
// (one cached load each).
#include "kernels/cuda/cuda_internal.cuh"
#include "kernels/optimizer_rules.h"

namespace actorflow {
namespace gpu {
namespace {

#define AF_GRID_STRIDE(i, n)                                                \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += int64_t{blockDim.x} * gridDim.x)

template <typename T>
__global__ void GradientDescentKernel(T* __restrict__ var, const T* __restrict__ alpha,
                                      const T* __restrict__ delta, int64_t n) {
  const T a = *alpha;
  AF_GRID_STRIDE(i, n) { GradientDescentUpdate(var[i], delta[i], a); }
}

template <typename T>
__global__ void MomentumKernel(T* __restrict__ var, T* __restrict__ accum,
                               const T* __restrict__ lr_p, const T* __restrict__ grad,
                               const T* __restrict__ momentum_p, bool nesterov, int64_t n) {
  const MomentumParams<T> params{*lr_p, *momentum_p, nesterov};
  AF_GRID_STRIDE(i, n) { MomentumUpdate(var[i], accum[i], grad[i], params); }
}

template <typename T>
__global__ void AdamKernel(T* __restrict__ var, T* __restrict__ m, T* __restrict__ v,
                           const T* beta1_power_p, const T* beta2_power_p, const T* lr_p,
                           const T* beta1_p, const T* beta2_p, const T* epsilon_p,
                           const T* __restrict__ grad, int64_t n) {
  const AdamParams<T> params{AdamStepSize(*lr_p, *beta1_power_p, *beta2_power_p), *beta1_p,
                             *beta2_p, *epsilon_p};
  AF_GRID_STRIDE(i, n) { AdamUpdate(var[i], m[i], v[i], grad[i], params); }
}

template <typename T>
__global__ void AdagradKernel(T* __restrict__ var, T* __restrict__ accum,
                              const T* __restrict__ lr_p, const T* __restrict__ grad, int64_t n) {
  const T lr = *lr_p;
  AF_GRID_STRIDE(i, n) { AdagradUpdate(var[i], accum[i], grad[i], lr); }
}

#undef AF_GRID_STRIDE

}  // namespace

GpuError ApplyGradientDescent(GpuDevice* device, ElemType type, void* var, const void* alpha,
                              const void* delta, int64_t n) {
  if (n == 0) return GpuError();
  const bool known = VisitFloat(type, [&](auto zero) {
    using T = decltype(zero);
    GradientDescentKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
        static_cast<T*>(var), static_cast<const T*>(alpha), static_cast<const T*>(delta), n);
  });
  if (!known) return NotFloat("ApplyGradientDescent");
  return LaunchError("GradientDescentKernel");
}

GpuError ApplyMomentum(GpuDevice* device, ElemType type, void* var, void* accum, const void* lr,
                       const void* grad, const void* momentum, bool use_nesterov, int64_t n) {
  if (n == 0) return GpuError();
  const bool known = VisitFloat(type, [&](auto zero) {
    using T = decltype(zero);
    MomentumKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
        static_cast<T*>(var), static_cast<T*>(accum), static_cast<const T*>(lr),
        static_cast<const T*>(grad), static_cast<const T*>(momentum), use_nesterov, n);
  });
  if (!known) return NotFloat("ApplyMomentum");
  return LaunchError("MomentumKernel");
}

GpuError ApplyAdam(GpuDevice* device, ElemType type, void* var, void* m, void* v,
                   const void* beta1_power, const void* beta2_power, const void* lr,
                   const void* beta1, const void* beta2, const void* epsilon, const void* grad,
                   int64_t n) {
  if (n == 0) return GpuError();
  const bool known = VisitFloat(type, [&](auto zero) {
    using T = decltype(zero);
    AdamKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
        static_cast<T*>(var), static_cast<T*>(m), static_cast<T*>(v),
        static_cast<const T*>(beta1_power), static_cast<const T*>(beta2_power),
        static_cast<const T*>(lr), static_cast<const T*>(beta1), static_cast<const T*>(beta2),
        static_cast<const T*>(epsilon), static_cast<const T*>(grad), n);
  });
  if (!known) return NotFloat("ApplyAdam");
  return LaunchError("AdamKernel");
}

GpuError ApplyAdagrad(GpuDevice* device, ElemType type, void* var, void* accum, const void* lr,
                      const void* grad, int64_t n) {
  if (n == 0) return GpuError();
  const bool known = VisitFloat(type, [&](auto zero) {
    using T = decltype(zero);
    AdagradKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
        static_cast<T*>(var), static_cast<T*>(accum), static_cast<const T*>(lr),
        static_cast<const T*>(grad), n);
  });
  if (!known) return NotFloat("ApplyAdagrad");
  return LaunchError("AdagradKernel");
}

}  // namespace gpu
}  // namespace actorflow
