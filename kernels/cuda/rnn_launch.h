// The element-wise GPU math of the fused recurrent cells (rnn.cu), without CUDA types,
// in the manner of gpu_launch.h: each function checks nothing about shapes (the kernel
// classes in rnn_kernels.cc did, with kernels/cpu/rnn_shapes.h), queues its work on the
// device's stream and returns at once. Pointers are device memory; matrices are
// row-major. Element types: float32 and float64.
//
// The matrix products of the cells are MatMul calls (gpu_launch.h) on concatenated
// operands: [x, h_prev] w for the LSTM's gates instead of the CPU kernel's two
// products, one per block of rows of w. The gate math is the CPU kernels'
// (kernels/cpu/rnn_kernels.cc), operation for operation in the element type, so
// results agree within rounding (the products sum in another order).
//
// B = batch, I = input features, H = units.
//
// Thread safety: as gpu_device.h: any thread, work ordered by the device's stream.
#ifndef ACTORFLOW_KERNELS_CUDA_RNN_LAUNCH_H_
#define ACTORFLOW_KERNELS_CUDA_RNN_LAUNCH_H_

#include <cstdint>

#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/gpu_launch.h"

namespace actorflow {
namespace gpu {

// out [rows, left_cols + right_cols] = [left [rows, left_cols], right [rows, right_cols]].
GpuError ConcatColumns(GpuDevice* device, ElemType type, int64_t rows, const void* left,
                       int64_t left_cols, const void* right, int64_t right_cols, void* out);

// The LSTM step after z = [x, h_prev] w [B, 4H] (blocks of columns i, ci, f, o):
// i = sigmoid(z_i + b_i), ci = tanh(z_ci + b_ci), f = sigmoid(z_f + b_f +
// forget_bias), o = sigmoid(z_o + b_o), cs = ci * i + cs_prev * f clipped to
// [-cell_clip, cell_clip] when cell_clip > 0, co = tanh(cs), h = co * o. forget_bias
// and cell_clip are rounded to the element type first, as the CPU kernel's attrs are.
// Outputs [B, H].
struct LstmCellOut {
  void* i;
  void* cs;
  void* f;
  void* o;
  void* ci;
  void* co;
  void* h;
};
GpuError LstmCellForward(GpuDevice* device, ElemType type, int64_t batch, int64_t units,
                         double forget_bias, double cell_clip, const void* z, const void* bias,
                         const void* cs_prev, const LstmCellOut& out);

// LSTMBlockCellGrad's cs_prev_grad [B, H] and dgates [B, 4H] (graph/rnn_ops.h has the
// formulas; dcs is zeroed where |cs| >= cell_clip > 0). Inputs [B, H].
struct LstmCellGradIn {
  const void* cs_prev;
  const void* i;
  const void* cs;
  const void* f;
  const void* o;
  const void* ci;
  const void* co;
  const void* cs_grad;
  const void* h_grad;
};
GpuError LstmCellBackward(GpuDevice* device, ElemType type, int64_t batch, int64_t units,
                          double cell_clip, const LstmCellGradIn& in, void* cs_prev_grad,
                          void* dgates);

// The GRU gates after ru = [x, h_prev] w_ru [B, 2H]: r = sigmoid(ru_r + b_ru[:H]),
// u = sigmoid(ru_u + b_ru[H:]) into r and u [B, H], and the next product's left
// operand x_rh [B, I + H] = [x, r * h_prev].
GpuError GruGates(GpuDevice* device, ElemType type, int64_t batch, int64_t inputs,
                  int64_t units, const void* ru, const void* b_ru, const void* x,
                  const void* h_prev, void* r, void* u, void* x_rh);

// The GRU output: c = tanh(c + b_c) in place (c holds [x, r * h_prev] w_c on entry) and
// h = u * h_prev + (1 - u) * c. All [B, H] but b_c [H].
GpuError GruOutput(GpuDevice* device, ElemType type, int64_t batch, int64_t units,
                   const void* b_c, const void* h_prev, const void* u, void* c, void* h);

// GRUBlockCellGrad's inputs past the weights; d_r, d_u and d_c are null when the op
// has only 10 inputs (they count as zeros). All [B, H].
struct GruCellGradIn {
  const void* h_prev;
  const void* r;
  const void* u;
  const void* c;
  const void* d_h;
  const void* d_r;
  const void* d_u;
  const void* d_c;
};

// d_c_bar [B, H] = (d_h (1 - u) + d_c) (1 - c^2) and the u half of d_ru [B, 2H]:
// (d_h (h_prev - c) + d_u) u (1 - u).
GpuError GruCandidateGrad(GpuDevice* device, ElemType type, int64_t batch, int64_t units,
                          const GruCellGradIn& in, void* d_c_bar, void* d_ru);

// With d_hr = the last H columns of d_xrh = d_c_bar w_c^T [B, I + H]: the r half of
// d_ru, (d_hr h_prev + d_r) r (1 - r), and d_h_prev = d_hr r + d_h u (the part that
// does not go through w_ru).
GpuError GruResetGrad(GpuDevice* device, ElemType type, int64_t batch, int64_t inputs,
                      int64_t units, const GruCellGradIn& in, const void* d_xrh, void* d_ru,
                      void* d_h_prev);

// d_x [B, I] = d_xrh[:, :I] + d_xh[:, :I] and d_h_prev += d_xh[:, I:], with d_xh =
// d_ru w_ru^T [B, I + H].
GpuError GruInputGrad(GpuDevice* device, ElemType type, int64_t batch, int64_t inputs,
                      int64_t units, const void* d_xrh, const void* d_xh, void* d_x,
                      void* d_h_prev);

}  // namespace gpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CUDA_RNN_LAUNCH_H_
