// Element-wise GPU math (gpu_launch.h): unary and broadcasting binary ops, gathers,
// fills and casts. Each kernel is a grid-stride loop over the output.
#include <cmath>
#include <type_traits>

#include "kernels/cuda/cuda_internal.cuh"

namespace actorflow {
namespace gpu {
namespace {

template <typename T>
__device__ __forceinline__ T ApplyUnary(UnaryOp op, T x) {
  switch (op) {
    case UnaryOp::kNeg: return -x;
    case UnaryOp::kExp: return exp(x);
    case UnaryOp::kLog: return log(x);
    case UnaryOp::kSqrt: return sqrt(x);
    case UnaryOp::kSquare: return x * x;
    case UnaryOp::kAbs: return fabs(x);
    case UnaryOp::kRelu: return x < T(0) ? T(0) : x;  // NaN passes through
    case UnaryOp::kSigmoid: return T(1) / (T(1) + exp(-x));
    case UnaryOp::kTanh: return tanh(x);
  }
  return x;
}

template <typename T>
__device__ __forceinline__ T ApplyBinary(BinaryOp op, T x, T y) {
  switch (op) {
    case BinaryOp::kAdd: return x + y;
    case BinaryOp::kSub: return x - y;
    case BinaryOp::kMul: return x * y;
    case BinaryOp::kDiv: return x / y;
    case BinaryOp::kPow: return pow(x, y);
    // NaN propagates, as in the CPU kernels and the reference.
    case BinaryOp::kMaximum: return (x != x || x > y) ? x : y;
    case BinaryOp::kMinimum: return (x != x || x < y) ? x : y;
    case BinaryOp::kReluGrad: return y > T(0) ? x : T(0);          // (dy, x)
    case BinaryOp::kSigmoidGrad: return y * x * (T(1) - x);        // (y, dy)
    case BinaryOp::kTanhGrad: return y * (T(1) - x * x);           // (y, dy)
  }
  return x;
}

// The op is a template parameter so that each kernel body is one straight loop.
template <typename T, UnaryOp kOp>
__global__ void UnaryKernel(const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    y[i] = ApplyUnary(kOp, x[i]);
  }
}

// Same-shape operands: no index arithmetic.
template <typename T, BinaryOp kOp>
__global__ void BinarySameKernel(const T* __restrict__ x, const T* __restrict__ y,
                                 T* __restrict__ z, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    z[i] = ApplyBinary(kOp, x[i], y[i]);
  }
}

template <typename T, BinaryOp kOp>
__global__ void BinaryBroadcastKernel(const T* __restrict__ x, StridedIndex xi,
                                      const T* __restrict__ y, StridedIndex yi,
                                      T* __restrict__ z, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    z[i] = ApplyBinary(kOp, x[OffsetOf(xi, i)], y[OffsetOf(yi, i)]);
  }
}

template <typename T>
__global__ void GatherKernel(const T* __restrict__ x, StridedIndex xi, T* __restrict__ y,
                             int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    y[i] = x[OffsetOf(xi, i)];
  }
}

template <typename T>
__global__ void FillKernel(T* __restrict__ y, int64_t n, T value) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    y[i] = value;
  }
}

template <typename From, typename To>
__global__ void CastKernel(const From* __restrict__ x, To* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    if constexpr (std::is_same_v<To, bool>) {
      y[i] = x[i] != From(0);
    } else {
      y[i] = static_cast<To>(x[i]);
    }
  }
}

bool IsIdentity(const StridedIndex& s, int64_t n) {
  // Contiguous in output order: strides are the row-major strides of the dims.
  int64_t expect = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    if (s.dims[d] != 1 && s.strides[d] != expect) return false;
    expect *= s.dims[d];
  }
  return expect == n;
}

template <typename T, UnaryOp kOp>
void LaunchUnary(GpuDevice* device, const void* x, void* y, int64_t n) {
  UnaryKernel<T, kOp><<<GridFor(n), kThreads, 0, device->stream>>>(
      static_cast<const T*>(x), static_cast<T*>(y), n);
}

template <typename T, BinaryOp kOp>
void LaunchBinary(GpuDevice* device, const void* x, const StridedIndex& xi, const void* y,
                  const StridedIndex& yi, void* z, int64_t n) {
  if (IsIdentity(xi, n) && IsIdentity(yi, n)) {
    BinarySameKernel<T, kOp><<<GridFor(n), kThreads, 0, device->stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(y), static_cast<T*>(z), n);
  } else {
    BinaryBroadcastKernel<T, kOp><<<GridFor(n), kThreads, 0, device->stream>>>(
        static_cast<const T*>(x), xi, static_cast<const T*>(y), yi, static_cast<T*>(z), n);
  }
}

}  // namespace

GpuError Unary(GpuDevice* device, UnaryOp op, ElemType type, const void* x, void* y, int64_t n) {
  if (n == 0) return GpuError();
  const bool known = VisitFloat(type, [&](auto zero) {
    using T = decltype(zero);
    switch (op) {
      case UnaryOp::kNeg: LaunchUnary<T, UnaryOp::kNeg>(device, x, y, n); break;
      case UnaryOp::kExp: LaunchUnary<T, UnaryOp::kExp>(device, x, y, n); break;
      case UnaryOp::kLog: LaunchUnary<T, UnaryOp::kLog>(device, x, y, n); break;
      case UnaryOp::kSqrt: LaunchUnary<T, UnaryOp::kSqrt>(device, x, y, n); break;
      case UnaryOp::kSquare: LaunchUnary<T, UnaryOp::kSquare>(device, x, y, n); break;
      case UnaryOp::kAbs: LaunchUnary<T, UnaryOp::kAbs>(device, x, y, n); break;
      case UnaryOp::kRelu: LaunchUnary<T, UnaryOp::kRelu>(device, x, y, n); break;
      case UnaryOp::kSigmoid: LaunchUnary<T, UnaryOp::kSigmoid>(device, x, y, n); break;
      case UnaryOp::kTanh: LaunchUnary<T, UnaryOp::kTanh>(device, x, y, n); break;
    }
  });
  if (!known) return NotFloat("Unary");
  return LaunchError("UnaryKernel");
}

GpuError Binary(GpuDevice* device, BinaryOp op, ElemType type, const void* x,
                const StridedIndex& xi, const void* y, const StridedIndex& yi, void* z,
                int64_t n) {
  if (n == 0) return GpuError();
  const bool known = VisitFloat(type, [&](auto zero) {
    using T = decltype(zero);
#define AF_BINARY_CASE(name) \
  case BinaryOp::name: LaunchBinary<T, BinaryOp::name>(device, x, xi, y, yi, z, n); break;
    switch (op) {
      AF_BINARY_CASE(kAdd)
      AF_BINARY_CASE(kSub)
      AF_BINARY_CASE(kMul)
      AF_BINARY_CASE(kDiv)
      AF_BINARY_CASE(kPow)
      AF_BINARY_CASE(kMaximum)
      AF_BINARY_CASE(kMinimum)
      AF_BINARY_CASE(kReluGrad)
      AF_BINARY_CASE(kSigmoidGrad)
      AF_BINARY_CASE(kTanhGrad)
    }
#undef AF_BINARY_CASE
  });
  if (!known) return NotFloat("Binary");
  return LaunchError("BinaryKernel");
}

GpuError Gather(GpuDevice* device, ElemType type, const void* x, const StridedIndex& xi,
                void* y, int64_t n) {
  if (n == 0) return GpuError();
  VisitAny(type, [&](auto zero) {
    using T = decltype(zero);
    GatherKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(static_cast<const T*>(x), xi,
                                                                 static_cast<T*>(y), n);
  });
  return LaunchError("GatherKernel");
}

GpuError Fill(GpuDevice* device, ElemType type, void* y, int64_t n, double value) {
  if (n == 0) return GpuError();
  VisitAny(type, [&](auto zero) {
    using T = decltype(zero);
    T v;
    if constexpr (std::is_same_v<T, bool>) {
      v = value != 0.0;
    } else {
      v = static_cast<T>(value);
    }
    FillKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(static_cast<T*>(y), n, v);
  });
  return LaunchError("FillKernel");
}

GpuError Cast(GpuDevice* device, ElemType from, const void* x, ElemType to, void* y, int64_t n) {
  if (n == 0) return GpuError();
  const bool known = VisitFloat(from, [&](auto from_zero) {
    using From = decltype(from_zero);
    VisitAny(to, [&](auto to_zero) {
      using To = decltype(to_zero);
      CastKernel<From, To><<<GridFor(n), kThreads, 0, device->stream>>>(
          static_cast<const From*>(x), static_cast<To*>(y), n);
    });
  });
  if (!known) return NotFloat("Cast");
  return LaunchError("CastKernel");
}

}  // namespace gpu
}  // namespace actorflow
