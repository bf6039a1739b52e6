// Gelu and GeluGrad on the GPU (sequence_launch.h): grid-stride loops over the
// elements, the form (erf or tanh) a template parameter.
#include "kernels/cuda/cuda_internal.cuh"
#include "kernels/cuda/sequence_launch.h"

namespace actorflow {
namespace gpu {
namespace {

// The CPU kernel's forms (kernels/cpu/math_kernels.cc, GeluMath), in the element type:
// Phi(x) = 0.5 * erfc(-x / sqrt(2)), and the tanh form's 0.5 * (1 + tanh(u)) as
// sigmoid(2u), which keep their relative precision for negative x.

constexpr double kSqrtHalf = 0.70710678118654752440;     // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1 / sqrt(2 pi)
constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kCubic = 0.044715;

// sigmoid(2u), u = sqrt(2 / pi) (x + 0.044715 x^3).
template <typename T>
__device__ __forceinline__ T HalfOnePlusTanh(T x) {
  const T u = T(kSqrt2OverPi) * (x + T(kCubic) * x * x * x);
  return T(1) / (T(1) + exp(T(-2) * u));
}

template <typename T, bool kApproximate>
__device__ __forceinline__ T GeluValue(T x) {
  if constexpr (kApproximate) {
    return x * HalfOnePlusTanh(x);
  } else {
    return x * (T(0.5) * erfc(-x * T(kSqrtHalf)));
  }
}

// Phi(x) + x phi(x) exactly; s + 2 x s (1 - s) u' for the tanh form, s = sigmoid(2u).
template <typename T, bool kApproximate>
__device__ __forceinline__ T GeluDerivative(T x) {
  if constexpr (kApproximate) {
    const T s = HalfOnePlusTanh(x);
    const T slope = s * (T(1) - s);
    // Where s saturates, x^2 may be inf (float32): the product is 0, not inf * 0.
    if (slope == T(0)) return s;
    const T du = T(kSqrt2OverPi) * (T(1) + T(3 * kCubic) * x * x);
    return s + T(2) * x * slope * du;
  } else {
    return T(0.5) * erfc(-x * T(kSqrtHalf)) + x * T(kInvSqrt2Pi) * exp(T(-0.5) * x * x);
  }
}

template <typename T, bool kApproximate>
__global__ void GeluKernel(const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    y[i] = GeluValue<T, kApproximate>(x[i]);
  }
}

template <typename T, bool kApproximate>
__global__ void GeluGradKernel(const T* __restrict__ dy, const T* __restrict__ x,
                               T* __restrict__ dx, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    dx[i] = dy[i] * GeluDerivative<T, kApproximate>(x[i]);
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

GpuError Gelu(GpuDevice* device, ElemType type, bool approximate, const void* x, void* y,
              int64_t n) {
  if (n == 0) return GpuError();
  return ForFloat("Gelu", type, [&](auto zero) {
    using T = decltype(zero);
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    if (approximate) {
      GeluKernel<T, true><<<GridFor(n), kThreads, 0, device->stream>>>(in, out, n);
    } else {
      GeluKernel<T, false><<<GridFor(n), kThreads, 0, device->stream>>>(in, out, n);
    }
  });
}

GpuError GeluGrad(GpuDevice* device, ElemType type, bool approximate, const void* dy,
                  const void* x, void* dx, int64_t n) {
  if (n == 0) return GpuError();
  return ForFloat("GeluGrad", type, [&](auto zero) {
    using T = decltype(zero);
    const T* grad = static_cast<const T*>(dy);
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(dx);
    if (approximate) {
      GeluGradKernel<T, true><<<GridFor(n), kThreads, 0, device->stream>>>(grad, in, out, n);
    } else {
      GeluGradKernel<T, false><<<GridFor(n), kThreads, 0, device->stream>>>(grad, in, out, n);
    }
  });
}

}  // namespace gpu
}  // namespace actorflow
