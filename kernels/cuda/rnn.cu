// The element-wise math of the fused recurrent cells on the GPU (rnn_launch.h): each
// kernel is a grid-stride loop over one [B, H] (or [B, I + H]) matrix, with the CPU
// kernels' expressions (kernels/cpu/rnn_kernels.cc) in the element type.
#include "kernels/cuda/cuda_internal.cuh"
#include "kernels/cuda/rnn_launch.h"

namespace actorflow {
namespace gpu {
namespace {

#define AF_GRID_STRIDE(i, n)                                                \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += int64_t{blockDim.x} * gridDim.x)

template <typename T>
__device__ __forceinline__ T Sigmoid(T v) {
  return T(1) / (T(1) + exp(-v));
}

// std::min(std::max(v, -clip), clip) as the CPU kernel writes it: a NaN stays NaN
// (fmin/fmax would drop it).
template <typename T>
__device__ __forceinline__ T Clip(T v, T clip) {
  const T floored = v < -clip ? -clip : v;
  return clip < floored ? clip : floored;
}

template <typename T>
__global__ void ConcatColumnsKernel(const T* __restrict__ left, int64_t left_cols,
                                    const T* __restrict__ right, int64_t right_cols,
                                    T* __restrict__ out, int64_t n) {
  const int64_t cols = left_cols + right_cols;
  AF_GRID_STRIDE(e, n) {
    const int64_t row = e / cols, col = e % cols;
    out[e] = col < left_cols ? left[row * left_cols + col]
                             : right[row * right_cols + (col - left_cols)];
  }
}

template <typename T>
__global__ void LstmForwardKernel(int64_t units, T forget_bias, T cell_clip,
                                  const T* __restrict__ z, const T* __restrict__ bias,
                                  const T* __restrict__ cs_prev, T* __restrict__ i_out,
                                  T* __restrict__ cs_out, T* __restrict__ f_out,
                                  T* __restrict__ o_out, T* __restrict__ ci_out,
                                  T* __restrict__ co_out, T* __restrict__ h_out, int64_t n) {
  const int64_t h = units;
  AF_GRID_STRIDE(e, n) {
    const int64_t row = e / h, j = e % h;
    const T* zr = z + row * 4 * h;
    const T i = Sigmoid(zr[j] + bias[j]);
    const T ci = tanh(zr[h + j] + bias[h + j]);
    const T f = Sigmoid(zr[2 * h + j] + bias[2 * h + j] + forget_bias);
    const T o = Sigmoid(zr[3 * h + j] + bias[3 * h + j]);
    T cs = ci * i + cs_prev[e] * f;
    if (cell_clip > T(0)) cs = Clip(cs, cell_clip);
    const T co = tanh(cs);
    i_out[e] = i;
    cs_out[e] = cs;
    f_out[e] = f;
    o_out[e] = o;
    ci_out[e] = ci;
    co_out[e] = co;
    h_out[e] = co * o;
  }
}

// LstmCellGradIn with typed pointers.
template <typename T>
struct LstmGradInputs {
  const T *cs_prev, *i, *cs, *f, *o, *ci, *co, *cs_grad, *h_grad;
};

template <typename T>
__global__ void LstmBackwardKernel(int64_t units, T cell_clip, LstmGradInputs<T> in,
                                   T* __restrict__ cs_prev_grad, T* __restrict__ dgates,
                                   int64_t n) {
  const int64_t h = units;
  AF_GRID_STRIDE(e, n) {
    const int64_t row = e / h, j = e % h;
    const T i = in.i[e], f = in.f[e], o = in.o[e], ci = in.ci[e], co = in.co[e];
    T dcs = in.cs_grad[e] + in.h_grad[e] * o * (T(1) - co * co);
    // A clipped cs does not move with its pre-clip value.
    if (cell_clip > T(0) && fabs(in.cs[e]) >= cell_clip) dcs = T(0);
    cs_prev_grad[e] = dcs * f;
    T* dg = dgates + row * 4 * h;
    dg[j] = dcs * ci * i * (T(1) - i);
    dg[h + j] = dcs * i * (T(1) - ci * ci);
    dg[2 * h + j] = dcs * in.cs_prev[e] * f * (T(1) - f);
    dg[3 * h + j] = in.h_grad[e] * co * o * (T(1) - o);
  }
}

// Over [B, I + H]: the first I columns copy x into x_rh, the others compute r and u of
// unit col - I and write r * h_prev.
template <typename T>
__global__ void GruGatesKernel(int64_t inputs, int64_t units, const T* __restrict__ ru,
                               const T* __restrict__ b_ru, const T* __restrict__ x,
                               const T* __restrict__ h_prev, T* __restrict__ r,
                               T* __restrict__ u, T* __restrict__ x_rh, int64_t n) {
  const int64_t h = units, cols = inputs + units;
  AF_GRID_STRIDE(k, n) {
    const int64_t row = k / cols, col = k % cols;
    if (col < inputs) {
      x_rh[k] = x[row * inputs + col];
      continue;
    }
    const int64_t j = col - inputs, e = row * h + j;
    const T reset = Sigmoid(ru[row * 2 * h + j] + b_ru[j]);
    r[e] = reset;
    u[e] = Sigmoid(ru[row * 2 * h + h + j] + b_ru[h + j]);
    x_rh[k] = reset * h_prev[e];
  }
}

template <typename T>
__global__ void GruOutputKernel(int64_t units, const T* __restrict__ b_c,
                                const T* __restrict__ h_prev, const T* __restrict__ u,
                                T* __restrict__ c, T* __restrict__ h, int64_t n) {
  AF_GRID_STRIDE(e, n) {
    const T candidate = tanh(c[e] + b_c[e % units]);
    c[e] = candidate;
    h[e] = u[e] * h_prev[e] + (T(1) - u[e]) * candidate;
  }
}

// GruCellGradIn with typed pointers; d_r, d_u, d_c may be null (zeros).
template <typename T>
struct GruGradInputs {
  const T *h_prev, *r, *u, *c, *d_h, *d_r, *d_u, *d_c;
};

template <typename T>
__global__ void GruCandidateGradKernel(int64_t units, GruGradInputs<T> in,
                                       T* __restrict__ d_c_bar, T* __restrict__ d_ru,
                                       int64_t n) {
  const int64_t h = units;
  AF_GRID_STRIDE(e, n) {
    const int64_t row = e / h, j = e % h;
    const T u = in.u[e], c = in.c[e];
    const T dc = in.d_h[e] * (T(1) - u) + (in.d_c ? in.d_c[e] : T(0));
    d_c_bar[e] = dc * (T(1) - c * c);
    const T du = in.d_h[e] * (in.h_prev[e] - c) + (in.d_u ? in.d_u[e] : T(0));
    d_ru[row * 2 * h + h + j] = du * u * (T(1) - u);
  }
}

template <typename T>
__global__ void GruResetGradKernel(int64_t inputs, int64_t units, GruGradInputs<T> in,
                                   const T* __restrict__ d_xrh, T* __restrict__ d_ru,
                                   T* __restrict__ d_h_prev, int64_t n) {
  const int64_t h = units;
  AF_GRID_STRIDE(e, n) {
    const int64_t row = e / h, j = e % h;
    const T d_hr = d_xrh[row * (inputs + h) + inputs + j];
    const T r = in.r[e];
    const T dr = d_hr * in.h_prev[e] + (in.d_r ? in.d_r[e] : T(0));
    d_ru[row * 2 * h + j] = dr * r * (T(1) - r);
    d_h_prev[e] = d_hr * r + in.d_h[e] * in.u[e];
  }
}

// Over [B, I + H]: the first I columns give d_x, the others add to d_h_prev.
template <typename T>
__global__ void GruInputGradKernel(int64_t inputs, int64_t units, const T* __restrict__ d_xrh,
                                   const T* __restrict__ d_xh, T* __restrict__ d_x,
                                   T* __restrict__ d_h_prev, int64_t n) {
  const int64_t cols = inputs + units;
  AF_GRID_STRIDE(k, n) {
    const int64_t row = k / cols, col = k % cols;
    if (col < inputs) {
      d_x[row * inputs + col] = d_xrh[k] + d_xh[k];
    } else {
      d_h_prev[row * units + (col - inputs)] += d_xh[k];
    }
  }
}

#undef AF_GRID_STRIDE

// Runs launch(T{}) for a float `type` when n > 0; the first launch error, or NotFloat.
template <typename Launch>
GpuError ForFloat(const char* what, ElemType type, int64_t n, Launch launch) {
  GpuError e;
  if (!VisitFloat(type, [&](auto zero) {
        if (n == 0) return;
        launch(zero);
        e = LaunchError(what);
      })) {
    return NotFloat(what);
  }
  return e;
}

template <typename T>
const T* As(const void* p) {
  return static_cast<const T*>(p);
}
template <typename T>
T* As(void* p) {
  return static_cast<T*>(p);
}

template <typename T>
GruGradInputs<T> Typed(const GruCellGradIn& in) {
  return {As<T>(in.h_prev), As<T>(in.r),   As<T>(in.u),   As<T>(in.c),
          As<T>(in.d_h),    As<T>(in.d_r), As<T>(in.d_u), As<T>(in.d_c)};
}

}  // namespace

GpuError ConcatColumns(GpuDevice* device, ElemType type, int64_t rows, const void* left,
                       int64_t left_cols, const void* right, int64_t right_cols, void* out) {
  const int64_t n = rows * (left_cols + right_cols);
  return ForFloat("ConcatColumns", type, n, [&](auto zero) {
    using T = decltype(zero);
    ConcatColumnsKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
        As<T>(left), left_cols, As<T>(right), right_cols, As<T>(out), n);
  });
}

GpuError LstmCellForward(GpuDevice* device, ElemType type, int64_t batch, int64_t units,
                         double forget_bias, double cell_clip, const void* z, const void* bias,
                         const void* cs_prev, const LstmCellOut& out) {
  const int64_t n = batch * units;
  return ForFloat("LstmCellForward", type, n, [&](auto zero) {
    using T = decltype(zero);
    LstmForwardKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
        units, static_cast<T>(forget_bias), static_cast<T>(cell_clip), As<T>(z), As<T>(bias),
        As<T>(cs_prev), As<T>(out.i), As<T>(out.cs), As<T>(out.f), As<T>(out.o), As<T>(out.ci),
        As<T>(out.co), As<T>(out.h), n);
  });
}

GpuError LstmCellBackward(GpuDevice* device, ElemType type, int64_t batch, int64_t units,
                          double cell_clip, const LstmCellGradIn& in, void* cs_prev_grad,
                          void* dgates) {
  const int64_t n = batch * units;
  return ForFloat("LstmCellBackward", type, n, [&](auto zero) {
    using T = decltype(zero);
    const LstmGradInputs<T> typed{As<T>(in.cs_prev), As<T>(in.i),  As<T>(in.cs),
                                  As<T>(in.f),       As<T>(in.o),  As<T>(in.ci),
                                  As<T>(in.co),      As<T>(in.cs_grad), As<T>(in.h_grad)};
    LstmBackwardKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
        units, static_cast<T>(cell_clip), typed, As<T>(cs_prev_grad), As<T>(dgates), n);
  });
}

GpuError GruGates(GpuDevice* device, ElemType type, int64_t batch, int64_t inputs,
                  int64_t units, const void* ru, const void* b_ru, const void* x,
                  const void* h_prev, void* r, void* u, void* x_rh) {
  const int64_t n = batch * (inputs + units);
  return ForFloat("GruGates", type, n, [&](auto zero) {
    using T = decltype(zero);
    GruGatesKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
        inputs, units, As<T>(ru), As<T>(b_ru), As<T>(x), As<T>(h_prev), As<T>(r), As<T>(u),
        As<T>(x_rh), n);
  });
}

GpuError GruOutput(GpuDevice* device, ElemType type, int64_t batch, int64_t units,
                   const void* b_c, const void* h_prev, const void* u, void* c, void* h) {
  const int64_t n = batch * units;
  return ForFloat("GruOutput", type, n, [&](auto zero) {
    using T = decltype(zero);
    GruOutputKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
        units, As<T>(b_c), As<T>(h_prev), As<T>(u), As<T>(c), As<T>(h), n);
  });
}

GpuError GruCandidateGrad(GpuDevice* device, ElemType type, int64_t batch, int64_t units,
                          const GruCellGradIn& in, void* d_c_bar, void* d_ru) {
  const int64_t n = batch * units;
  return ForFloat("GruCandidateGrad", type, n, [&](auto zero) {
    using T = decltype(zero);
    GruCandidateGradKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
        units, Typed<T>(in), As<T>(d_c_bar), As<T>(d_ru), n);
  });
}

GpuError GruResetGrad(GpuDevice* device, ElemType type, int64_t batch, int64_t inputs,
                      int64_t units, const GruCellGradIn& in, const void* d_xrh, void* d_ru,
                      void* d_h_prev) {
  const int64_t n = batch * units;
  return ForFloat("GruResetGrad", type, n, [&](auto zero) {
    using T = decltype(zero);
    GruResetGradKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
        inputs, units, Typed<T>(in), As<T>(d_xrh), As<T>(d_ru), As<T>(d_h_prev), n);
  });
}

GpuError GruInputGrad(GpuDevice* device, ElemType type, int64_t batch, int64_t inputs,
                      int64_t units, const void* d_xrh, const void* d_xh, void* d_x,
                      void* d_h_prev) {
  const int64_t n = batch * (inputs + units);
  return ForFloat("GruInputGrad", type, n, [&](auto zero) {
    using T = decltype(zero);
    GruInputGradKernel<T><<<GridFor(n), kThreads, 0, device->stream>>>(
        inputs, units, As<T>(d_xrh), As<T>(d_xh), As<T>(d_x), As<T>(d_h_prev), n);
  });
}

}  // namespace gpu
}  // namespace actorflow
