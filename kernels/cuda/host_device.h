// AF_HOST_DEVICE: marks a function that compiles both as host C++ and as CUDA device
// code (under nvcc). Header-only code shared by the CPU kernels and the CUDA kernels
// (kernels/optimizer_rules.h) uses it, so that one definition serves both; this is the
// only place outside kernels/cuda's sources that knows about CUDA compilation.
#ifndef ACTORFLOW_KERNELS_CUDA_HOST_DEVICE_H_
#define ACTORFLOW_KERNELS_CUDA_HOST_DEVICE_H_

#include <cmath>

#if defined(__CUDACC__)
#define AF_HOST_DEVICE __host__ __device__
#else
#define AF_HOST_DEVICE
#endif

namespace actorflow {

// sqrt for float and double on the host (std::sqrt) and on a device (CUDA's
// overloads), with the same rounding as each side's own sqrt.
template <typename T>
AF_HOST_DEVICE inline T HostDeviceSqrt(T x) {
#if defined(__CUDA_ARCH__)
  return sqrt(x);
#else
  return std::sqrt(x);
#endif
}

// pow for float and double on the host (std::pow) and on a device (CUDA's overloads);
// the two sides' pow may differ in the last bit.
template <typename T>
AF_HOST_DEVICE inline T HostDevicePow(T x, T y) {
#if defined(__CUDA_ARCH__)
  return pow(x, y);
#else
  return std::pow(x, y);
#endif
}

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CUDA_HOST_DEVICE_H_
