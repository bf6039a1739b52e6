// The backward rules of the fused recurrent cells (graph/rnn_ops.h). Each builds the
// cell's fused backward op for the element-wise part and, as TensorFlow's Python
// rules do, MatMul/ConcatV2/Sum for the parts linear in the pre-activation gradients.
// Gradients of any output may be absent (invalid Outputs): they count as zeros, and
// the gate outputs' gradients are folded in so that every output's gradient reaches
// the inputs (TensorFlow's rules drop all but the state outputs').
#include <map>
#include <string>
#include <vector>

#include "graph/gradient_rules_internal.h"
#include "graph/ops.h"
#include "graph/rnn_ops.h"

namespace actorflow {
namespace gradient_rules_internal {
namespace {

Output OrZeros(const Scope& s, const Output& g, const Output& like) {
  return g.valid() ? g : ZerosLike(s, like);
}

// dx, dh_prev = the parts of dxh = d[x, h_prev] (or d[x, r h_prev]) split at I, read
// from x's runtime shape so that unknown shapes work.
void SplitXh(const Scope& s, const Output& dxh, const Output& x, const Output& h_prev,
             Output* dx, Output* dh_prev) {
  *dx = SliceConcatPart(s, dxh, {x, h_prev}, 1, 0);
  *dh_prev = SliceConcatPart(s, dxh, {x, h_prev}, 1, 1);
}

// Outputs i, cs, f, o, ci, co, h; inputs x, cs_prev, h_prev, w, b.
Status LstmBlockCellGradRule(const Scope& s, const Node& op, const std::vector<Output>& dy,
                             std::vector<Output>* dx) {
  const Output x = In(op, 0), cs_prev = In(op, 1), h_prev = In(op, 2), w = In(op, 3),
               b = In(op, 4);
  const LstmCellOutputs cell = {Out(op, 0), Out(op, 1), Out(op, 2), Out(op, 3),
                                Out(op, 4), Out(op, 5), Out(op, 6)};
  // co = tanh(cs) of the clipped cs, so co's gradient joins cs's before the clip mask.
  Output cs_grad = OrZeros(s, dy[1], cell.cs);
  if (dy[5].valid()) cs_grad = Add(s, cs_grad, TanhGrad(s, cell.co, dy[5]));
  const Output h_grad = OrZeros(s, dy[6], cell.h);
  // Built here rather than with LSTMBlockCellGrad() so that the forward's cell_clip
  // reaches the mask exactly (the builder takes a float).
  const Node* grad = s.AddNode("LSTMBlockCellGrad",
                               {x, cs_prev, h_prev, w, b, cell.i, cell.cs, cell.f, cell.o,
                                cell.ci, cell.co, cs_grad, h_grad},
                               {{"cell_clip", op.attr<double>("cell_clip")}});
  if (grad == nullptr) return s.status();
  Output dgates = Out(*grad, 1);
  // The gates' own gradients, through their activations, in the [i, ci, f, o] layout.
  if (dy[0].valid() || dy[4].valid() || dy[2].valid() || dy[3].valid()) {
    const Output di = dy[0].valid() ? SigmoidGrad(s, cell.i, dy[0]) : ZerosLike(s, cell.i);
    const Output dci = dy[4].valid() ? TanhGrad(s, cell.ci, dy[4]) : ZerosLike(s, cell.ci);
    const Output df = dy[2].valid() ? SigmoidGrad(s, cell.f, dy[2]) : ZerosLike(s, cell.f);
    const Output d_o = dy[3].valid() ? SigmoidGrad(s, cell.o, dy[3]) : ZerosLike(s, cell.o);
    dgates = Add(s, dgates, ConcatV2(s, {di, dci, df, d_o}, 1));
  }
  SplitXh(s, MatMul(s, dgates, w, false, true), x, h_prev, &(*dx)[0], &(*dx)[2]);
  (*dx)[1] = Out(*grad, 0);
  (*dx)[3] = MatMul(s, ConcatV2(s, {x, h_prev}, 1), dgates, true, false);
  (*dx)[4] = Sum(s, dgates, 0);
  return Status::OK();
}

// Outputs r, u, c, h; inputs x, h_prev, w_ru, w_c, b_ru, b_c.
Status GruBlockCellGradRule(const Scope& s, const Node& op, const std::vector<Output>& dy,
                            std::vector<Output>* dx) {
  const Output x = In(op, 0), h_prev = In(op, 1);
  const GruCellOutputs cell = {Out(op, 0), Out(op, 1), Out(op, 2), Out(op, 3)};
  const GruCellGradOutputs grad =
      GRUBlockCellGrad(s, x, h_prev, In(op, 2), In(op, 3), In(op, 4), In(op, 5), cell,
                       OrZeros(s, dy[3], cell.h), dy[0], dy[1], dy[2]);
  (*dx)[0] = grad.d_x;
  (*dx)[1] = grad.d_h_prev;
  (*dx)[2] = MatMul(s, ConcatV2(s, {x, h_prev}, 1), grad.d_r_bar_u_bar, true, false);
  (*dx)[3] = MatMul(s, ConcatV2(s, {x, Mul(s, cell.r, h_prev)}, 1), grad.d_c_bar, true, false);
  (*dx)[4] = Sum(s, grad.d_r_bar_u_bar, 0);
  (*dx)[5] = Sum(s, grad.d_c_bar, 0);
  return Status::OK();
}

}  // namespace

void AddRnnGradientRules(std::map<std::string, GradientFn>* table) {
  (*table)["LSTMBlockCell"] = LstmBlockCellGradRule;
  (*table)["GRUBlockCell"] = GruBlockCellGradRule;
}

}  // namespace gradient_rules_internal
}  // namespace actorflow
