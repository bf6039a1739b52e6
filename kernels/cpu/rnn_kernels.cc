// CPU kernels of the fused recurrent cells (graph/rnn_ops.h): LSTMBlockCell,
// LSTMBlockCellGrad, GRUBlockCell and GRUBlockCellGrad, float32 and float64.
//
// The matrix products go to OpenBLAS gemm. A product with [x, h_prev] (or [x, r *
// h_prev]) is two GEMMs, one on each block of rows of the weights, the second
// accumulating (beta = 1), so the concatenation is never copied. Everything else is one
// element-wise pass over [B, H].
//
// The kernels check their inputs' shapes themselves (the graph may not know them), with
// rnn_shapes.h, which the GPU kernels share.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/rnn_shapes.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

// Row-major C[m,n] = A[m,k] op(B) + beta C with op(B) = B [k,n] or B^T (B [n,k]); lda,
// ldb, ldc are the stored row lengths, so blocks of rows or columns of a matrix can be
// operands. k = 0 leaves beta C (zeros for beta = 0); BLAS never sees a zero dim.
void StridedGemm(bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0f, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}
void StridedGemm(bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
                 const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}
template <typename T>
void Product(bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
             int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (beta == T(0)) {
      for (int64_t r = 0; r < m; ++r) std::fill(c + r * ldc, c + r * ldc + n, T(0));
    }
    return;
  }
  StridedGemm(tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
}

template <typename T>
T Sigmoid(T v) {
  return T(1) / (T(1) + std::exp(-v));
}

// The shapes of every input of the node, for CheckCellInputs.
std::vector<Shape> InputShapes(KernelContext* ctx) {
  std::vector<Shape> shapes;
  shapes.reserve(ctx->num_inputs());
  for (int k = 0; k < ctx->num_inputs(); ++k) shapes.push_back(ctx->input(k).shape());
  return shapes;
}

// CheckCellInputs for the node's inputs; false (the node failed) on an error.
bool CheckInputs(KernelContext* ctx, CellOp op, CellDims* dims) {
  StatusOr<CellDims> checked = CheckCellInputs(op, InputShapes(ctx));
  if (!checked.ok()) {
    ctx->Fail(checked.status().code(), checked.status().message());
    return false;
  }
  *dims = *checked;
  return true;
}

// Allocates outputs [first, first + n) of `shape`, all written in full; false (the
// node failed) when one cannot be had.
bool AllocateAll(KernelContext* ctx, int first, int n, const Shape& shape) {
  for (int k = first; k < first + n; ++k) {
    if (AllocateCheckedOutput(ctx, k, shape, /*overwrite=*/true) == nullptr) return false;
  }
  return true;
}

// Inputs x, cs_prev, h_prev, w, b; outputs i, cs, f, o, ci, co, h.
template <typename T>
class LstmBlockCellKernel : public Kernel {
 public:
  explicit LstmBlockCellKernel(const Node& node)
      : Kernel(node),
        forget_bias_(static_cast<T>(node.attr<double>("forget_bias"))),
        cell_clip_(static_cast<T>(node.attr<double>("cell_clip"))) {}

  void Compute(KernelContext* ctx) override {
    CellDims d;
    if (!CheckInputs(ctx, CellOp::kLstm, &d)) return;
    if (!AllocateAll(ctx, 0, 7, Shape{d.b, d.h})) return;
    const int64_t h = d.h, g = 4 * d.h;
    // z = x w[:I] + h_prev w[I:], [B, 4H].
    std::vector<T> z(static_cast<size_t>(d.b * g));
    const T* w = ctx->input(3).data<T>();
    Product<T>(false, d.b, g, d.i, ctx->input(0).data<T>(), d.i, w, g, T(0), z.data(), g);
    Product<T>(false, d.b, g, h, ctx->input(2).data<T>(), h, w + d.i * g, g, T(1), z.data(), g);
    const T* bias = ctx->input(4).data<T>();
    const T* cs_prev = ctx->input(1).data<T>();
    T* out[7];
    for (int k = 0; k < 7; ++k) out[k] = ctx->outputs()[k].data<T>();
    for (int64_t r = 0; r < d.b; ++r) {
      const T* zr = z.data() + r * g;
      for (int64_t j = 0; j < h; ++j) {
        const int64_t e = r * h + j;
        const T i = Sigmoid(zr[j] + bias[j]);
        const T ci = std::tanh(zr[h + j] + bias[h + j]);
        const T f = Sigmoid(zr[2 * h + j] + bias[2 * h + j] + forget_bias_);
        const T o = Sigmoid(zr[3 * h + j] + bias[3 * h + j]);
        T cs = ci * i + cs_prev[e] * f;
        if (cell_clip_ > T(0)) cs = std::min(std::max(cs, -cell_clip_), cell_clip_);
        const T co = std::tanh(cs);
        out[0][e] = i;
        out[1][e] = cs;
        out[2][e] = f;
        out[3][e] = o;
        out[4][e] = ci;
        out[5][e] = co;
        out[6][e] = co * o;
      }
    }
  }

 private:
  const T forget_bias_;
  const T cell_clip_;
};

// Inputs x, cs_prev, h_prev, w, b, i, cs, f, o, ci, co, cs_grad, h_grad; outputs
// cs_prev_grad [B, H], dgates [B, 4H] (graph/rnn_ops.h has the formulas).
template <typename T>
class LstmBlockCellGradKernel : public Kernel {
 public:
  explicit LstmBlockCellGradKernel(const Node& node)
      : Kernel(node), cell_clip_(static_cast<T>(node.attr<double>("cell_clip"))) {}

  void Compute(KernelContext* ctx) override {
    CellDims d;
    if (!CheckInputs(ctx, CellOp::kLstmGrad, &d)) return;
    const int64_t h = d.h;
    if (!AllocateAll(ctx, 0, 1, Shape{d.b, h}) || !AllocateAll(ctx, 1, 1, Shape{d.b, 4 * h})) {
      return;
    }
    auto in = [&](int k) { return ctx->input(k).data<T>(); };
    const T *cs_prev = in(1), *i = in(5), *cs = in(6), *f = in(7), *o = in(8), *ci = in(9),
            *co = in(10), *cs_grad = in(11), *h_grad = in(12);
    T* cs_prev_grad = ctx->outputs()[0].data<T>();
    T* dgates = ctx->outputs()[1].data<T>();
    for (int64_t r = 0; r < d.b; ++r) {
      T* dg = dgates + r * 4 * h;
      for (int64_t j = 0; j < h; ++j) {
        const int64_t e = r * h + j;
        T dcs = cs_grad[e] + h_grad[e] * o[e] * (T(1) - co[e] * co[e]);
        // A clipped cs does not move with its pre-clip value.
        if (cell_clip_ > T(0) && std::abs(cs[e]) >= cell_clip_) dcs = T(0);
        cs_prev_grad[e] = dcs * f[e];
        dg[j] = dcs * ci[e] * i[e] * (T(1) - i[e]);
        dg[h + j] = dcs * i[e] * (T(1) - ci[e] * ci[e]);
        dg[2 * h + j] = dcs * cs_prev[e] * f[e] * (T(1) - f[e]);
        dg[3 * h + j] = h_grad[e] * co[e] * o[e] * (T(1) - o[e]);
      }
    }
  }

 private:
  const T cell_clip_;
};

// Inputs x, h_prev, w_ru, w_c, b_ru, b_c; outputs r, u, c, h.
template <typename T>
class GruBlockCellKernel : public Kernel {
 public:
  explicit GruBlockCellKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    CellDims d;
    if (!CheckInputs(ctx, CellOp::kGru, &d)) return;
    if (!AllocateAll(ctx, 0, 4, Shape{d.b, d.h})) return;
    const int64_t h = d.h, bh = d.b * d.h;
    const T *x = ctx->input(0).data<T>(), *h_prev = ctx->input(1).data<T>(),
            *w_ru = ctx->input(2).data<T>(), *w_c = ctx->input(3).data<T>(),
            *b_ru = ctx->input(4).data<T>(), *b_c = ctx->input(5).data<T>();
    T *r = ctx->outputs()[0].data<T>(), *u = ctx->outputs()[1].data<T>(),
      *c = ctx->outputs()[2].data<T>(), *h_out = ctx->outputs()[3].data<T>();
    // [r, u] before the sigmoid, [B, 2H].
    std::vector<T> ru(static_cast<size_t>(2 * bh));
    Product<T>(false, d.b, 2 * h, d.i, x, d.i, w_ru, 2 * h, T(0), ru.data(), 2 * h);
    Product<T>(false, d.b, 2 * h, h, h_prev, h, w_ru + d.i * 2 * h, 2 * h, T(1), ru.data(),
               2 * h);
    std::vector<T> rh(static_cast<size_t>(bh));  // r * h_prev
    for (int64_t row = 0; row < d.b; ++row) {
      for (int64_t j = 0; j < h; ++j) {
        const int64_t e = row * h + j;
        r[e] = Sigmoid(ru[row * 2 * h + j] + b_ru[j]);
        u[e] = Sigmoid(ru[row * 2 * h + h + j] + b_ru[h + j]);
        rh[e] = r[e] * h_prev[e];
      }
    }
    // c before the tanh, accumulated in c.
    Product<T>(false, d.b, h, d.i, x, d.i, w_c, h, T(0), c, h);
    Product<T>(false, d.b, h, h, rh.data(), h, w_c + d.i * h, h, T(1), c, h);
    for (int64_t e = 0; e < bh; ++e) {
      c[e] = std::tanh(c[e] + b_c[e % h]);
      h_out[e] = u[e] * h_prev[e] + (T(1) - u[e]) * c[e];
    }
  }
};

// Inputs x, h_prev, w_ru, w_c, b_ru, b_c, r, u, c, d_h[, d_r, d_u, d_c]; outputs d_x
// [B, I], d_h_prev [B, H], d_c_bar [B, H], d_r_bar_u_bar [B, 2H] (graph/rnn_ops.h has
// the formulas).
template <typename T>
class GruBlockCellGradKernel : public Kernel {
 public:
  explicit GruBlockCellGradKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    CellDims d;
    if (!CheckInputs(ctx, CellOp::kGruGrad, &d)) return;
    const bool gate_grads = ctx->num_inputs() == 13;
    const int64_t h = d.h, bh = d.b * d.h;
    if (!AllocateAll(ctx, 0, 1, Shape{d.b, d.i}) || !AllocateAll(ctx, 1, 2, Shape{d.b, h}) ||
        !AllocateAll(ctx, 3, 1, Shape{d.b, 2 * h})) {
      return;
    }
    auto in = [&](int k) { return ctx->input(k).data<T>(); };
    const T *h_prev = in(1), *w_ru = in(2), *w_c = in(3), *r = in(6), *u = in(7), *c = in(8),
            *d_h = in(9);
    const T* d_r = gate_grads ? in(10) : nullptr;
    const T* d_u = gate_grads ? in(11) : nullptr;
    const T* d_c = gate_grads ? in(12) : nullptr;
    T *d_x = ctx->outputs()[0].data<T>(), *d_h_prev = ctx->outputs()[1].data<T>(),
      *d_c_bar = ctx->outputs()[2].data<T>(),
      *d_ru = ctx->outputs()[3].data<T>();
    for (int64_t e = 0; e < bh; ++e) {
      const int64_t row = e / h, j = e % h;
      const T dc = d_h[e] * (T(1) - u[e]) + (d_c ? d_c[e] : T(0));
      d_c_bar[e] = dc * (T(1) - c[e] * c[e]);
      const T du = d_h[e] * (h_prev[e] - c[e]) + (d_u ? d_u[e] : T(0));
      d_ru[row * 2 * h + h + j] = du * u[e] * (T(1) - u[e]);
    }
    // [d_x, d_hr] = d_c_bar w_c^T: w_c's first I rows give d_x, the rest d_hr.
    std::vector<T> d_hr(static_cast<size_t>(bh));
    Product<T>(true, d.b, d.i, h, d_c_bar, h, w_c, h, T(0), d_x, d.i);
    Product<T>(true, d.b, h, h, d_c_bar, h, w_c + d.i * h, h, T(0), d_hr.data(), h);
    for (int64_t e = 0; e < bh; ++e) {
      const int64_t row = e / h, j = e % h;
      const T dr = d_hr[e] * h_prev[e] + (d_r ? d_r[e] : T(0));
      d_ru[row * 2 * h + j] = dr * r[e] * (T(1) - r[e]);
      d_h_prev[e] = d_hr[e] * r[e] + d_h[e] * u[e];
    }
    // + d_r_bar_u_bar w_ru^T, split the same way.
    Product<T>(true, d.b, d.i, 2 * h, d_ru, 2 * h, w_ru, 2 * h, T(1), d_x, d.i);
    Product<T>(true, d.b, h, 2 * h, d_ru, 2 * h, w_ru + d.i * 2 * h, 2 * h, T(1), d_h_prev, h);
  }
};

const CpuKernelRegistrations<LstmBlockCellKernel, float, double> reg_lstm("LSTMBlockCell");
const CpuKernelRegistrations<LstmBlockCellGradKernel, float, double> reg_lstm_grad(
    "LSTMBlockCellGrad");
const CpuKernelRegistrations<GruBlockCellKernel, float, double> reg_gru("GRUBlockCell");
const CpuKernelRegistrations<GruBlockCellGradKernel, float, double> reg_gru_grad(
    "GRUBlockCellGrad");

}  // namespace
}  // namespace cpu
}  // namespace actorflow
