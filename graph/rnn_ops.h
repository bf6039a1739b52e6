// Fused recurrent cells: one LSTM or GRU step as a single op whose kernel computes
// every gate at once (TensorFlow 1.x's LSTMBlockCell and GRUBlockCell, without
// peepholes), and their backward ops, which Gradients() uses (graph/gradients.h).
//
//   auto w = Variable(root.WithOpName("w"), Shape{I + H, 4 * H}, DType::kFloat32);
//   auto b = Variable(root.WithOpName("b"), Shape{4 * H}, DType::kFloat32);
//   LstmCellOutputs step = LSTMBlockCell(root, x_t, cs, h, w, b);  // cs, h: [B, H]
//   cs = step.cs; h = step.h;                                     // the next step's state
//
// Shapes: x [B, I], states [B, H]. Every input and output has one float dtype (float32
// or float64). Inference and the kernels reject inputs whose dims disagree (B, I or
// H, w not [I + H, k * H], a bias not [k * H]) or that are not floats with
// InvalidArgument naming the input and its shape.
//
// Gradients flow to every input from every output: the backward rules fold the
// gradients of the gate outputs (i, f, o, ci, co; r, u, c) in, not only those of the
// state outputs as TensorFlow's rules do. The weight and bias gradients are built
// from MatMul, ConcatV2 and Sum around the fused backward op (as TensorFlow's Python
// rules do), so the backward ops output only what needs the cell's element-wise math.
// The backward ops themselves have no gradient (no second derivatives).
//
// Thread safety: as Scope (one building thread per graph).
#ifndef ACTORFLOW_GRAPH_RNN_OPS_H_
#define ACTORFLOW_GRAPH_RNN_OPS_H_

#include "graph/graph.h"
#include "graph/scope.h"

namespace actorflow {

// One LSTM step, in TensorFlow's output order; every output is [B, H].
struct LstmCellOutputs {
  Output i;   // input gate
  Output cs;  // the new cell state (clipped)
  Output f;   // forget gate
  Output o;   // output gate
  Output ci;  // cell input
  Output co;  // tanh(cs)
  Output h;   // the new hidden state
};

// x [B, I], cs_prev [B, H], h_prev [B, H], w [I + H, 4H], b [4H]. With z = [x,
// h_prev] w + b cut into four [B, H] blocks of columns in TensorFlow's order [i, ci, f,
// o]: i = sigmoid(z_i), ci = tanh(z_ci), f = sigmoid(z_f + forget_bias), o =
// sigmoid(z_o), cs = ci * i + cs_prev * f, clipped to [-cell_clip, cell_clip] when
// cell_clip > 0 (any other value: no clip), co = tanh(cs), h = co * o. All outputs
// invalid when the scope fails.
LstmCellOutputs LSTMBlockCell(const Scope& scope, const Input& x, const Input& cs_prev,
                              const Input& h_prev, const Input& w, const Input& b,
                              float forget_bias = 1.0f, float cell_clip = -1.0f);

// The backward pass of LSTMBlockCell given the gradients of its cs and h outputs
// (cs_grad, h_grad [B, H]; pass zeros for one that gets none):
//   dcs = cs_grad + h_grad * o * (1 - co^2), zeroed where the clip held cs (|cs| >=
//         cell_clip > 0; TensorFlow's kernel lets it through),
//   cs_prev_grad = dcs * f [B, H],
//   dgates [B, 4H] = d loss / d z in the [i, ci, f, o] layout: dcs * ci * i (1 - i),
//         dcs * i (1 - ci^2), dcs * cs_prev * f (1 - f), h_grad * co * o (1 - o).
// The rest is linear in dgates: d[x, h_prev] = dgates w^T, dw = [x, h_prev]^T dgates,
// db = the column sums of dgates. `cell` is the forward step (its h is not read);
// cell_clip must be the forward's.
struct LstmCellGradOutputs {
  Output cs_prev_grad;
  Output dgates;
};
LstmCellGradOutputs LSTMBlockCellGrad(const Scope& scope, const Input& x, const Input& cs_prev,
                                      const Input& h_prev, const Input& w, const Input& b,
                                      const LstmCellOutputs& cell, const Input& cs_grad,
                                      const Input& h_grad, float cell_clip = -1.0f);

// One GRU step; every output is [B, H].
struct GruCellOutputs {
  Output r;  // reset gate
  Output u;  // update gate
  Output c;  // candidate state
  Output h;  // the new hidden state
};

// x [B, I], h_prev [B, H], w_ru [I + H, 2H], w_c [I + H, H], b_ru [2H], b_c [H]:
// [r, u] = sigmoid([x, h_prev] w_ru + b_ru) (r the first H columns), c = tanh([x, r *
// h_prev] w_c + b_c), h = u * h_prev + (1 - u) * c.
GruCellOutputs GRUBlockCell(const Scope& scope, const Input& x, const Input& h_prev,
                            const Input& w_ru, const Input& w_c, const Input& b_ru,
                            const Input& b_c);

// The backward pass of GRUBlockCell given d_h, the gradient of h [B, H], and
// optionally those of r, u and c (d_r, d_u, d_c; invalid Outputs = none; when one is
// valid the op gets all three, zeros for the others, as inputs 10..12; TensorFlow's op
// has only the first ten inputs):
//   d_c_bar [B, H] = (d_h (1 - u) + d_c) (1 - c^2)           (d loss / d c's pre-tanh),
//   d_u_bar        = (d_h (h_prev - c) + d_u) u (1 - u),
//   [d_x1, d_hr]   = d_c_bar w_c^T, split at I,
//   d_r_bar        = (d_hr h_prev + d_r) r (1 - r),
//   d_r_bar_u_bar [B, 2H] = [d_r_bar, d_u_bar],
//   [d_x2, d_h2]   = d_r_bar_u_bar w_ru^T, split at I,
//   d_x [B, I] = d_x1 + d_x2,  d_h_prev [B, H] = d_hr r + d_h u + d_h2.
// Then dw_ru = [x, h_prev]^T d_r_bar_u_bar, dw_c = [x, r h_prev]^T d_c_bar and the
// biases' gradients are column sums. `cell` is the forward step (its h is not read).
struct GruCellGradOutputs {
  Output d_x;
  Output d_h_prev;
  Output d_c_bar;
  Output d_r_bar_u_bar;
};
GruCellGradOutputs GRUBlockCellGrad(const Scope& scope, const Input& x, const Input& h_prev,
                                    const Input& w_ru, const Input& w_c, const Input& b_ru,
                                    const Input& b_c, const GruCellOutputs& cell,
                                    const Input& d_h, const Output& d_r = Output(),
                                    const Output& d_u = Output(), const Output& d_c = Output());

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_RNN_OPS_H_
