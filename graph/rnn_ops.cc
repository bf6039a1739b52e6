#include "graph/rnn_ops.h"

#include <vector>

#include "graph/ops.h"

namespace actorflow {

LstmCellOutputs LSTMBlockCell(const Scope& scope, const Input& x, const Input& cs_prev,
                              const Input& h_prev, const Input& w, const Input& b,
                              float forget_bias, float cell_clip) {
  const Node* node = scope.AddNode("LSTMBlockCell", {x, cs_prev, h_prev, w, b},
                                   {{"forget_bias", static_cast<double>(forget_bias)},
                                    {"cell_clip", static_cast<double>(cell_clip)}});
  if (node == nullptr) return {};
  return {Output(node, 0), Output(node, 1), Output(node, 2), Output(node, 3),
          Output(node, 4), Output(node, 5), Output(node, 6)};
}

LstmCellGradOutputs LSTMBlockCellGrad(const Scope& scope, const Input& x, const Input& cs_prev,
                                      const Input& h_prev, const Input& w, const Input& b,
                                      const LstmCellOutputs& cell, const Input& cs_grad,
                                      const Input& h_grad, float cell_clip) {
  const Node* node = scope.AddNode(
      "LSTMBlockCellGrad",
      {x, cs_prev, h_prev, w, b, cell.i, cell.cs, cell.f, cell.o, cell.ci, cell.co, cs_grad,
       h_grad},
      {{"cell_clip", static_cast<double>(cell_clip)}});
  if (node == nullptr) return {};
  return {Output(node, 0), Output(node, 1)};
}

GruCellOutputs GRUBlockCell(const Scope& scope, const Input& x, const Input& h_prev,
                            const Input& w_ru, const Input& w_c, const Input& b_ru,
                            const Input& b_c) {
  const Node* node = scope.AddNode("GRUBlockCell", {x, h_prev, w_ru, w_c, b_ru, b_c});
  if (node == nullptr) return {};
  return {Output(node, 0), Output(node, 1), Output(node, 2), Output(node, 3)};
}

GruCellGradOutputs GRUBlockCellGrad(const Scope& scope, const Input& x, const Input& h_prev,
                                    const Input& w_ru, const Input& w_c, const Input& b_ru,
                                    const Input& b_c, const GruCellOutputs& cell,
                                    const Input& d_h, const Output& d_r, const Output& d_u,
                                    const Output& d_c) {
  std::vector<Input> inputs = {x, h_prev, w_ru, w_c, b_ru, b_c, cell.r, cell.u, cell.c, d_h};
  // The gate gradients travel only when one exists: the 10-input form is TensorFlow's.
  if (d_r.valid() || d_u.valid() || d_c.valid()) {
    inputs.push_back(d_r.valid() ? d_r : ZerosLike(scope, cell.r));
    inputs.push_back(d_u.valid() ? d_u : ZerosLike(scope, cell.u));
    inputs.push_back(d_c.valid() ? d_c : ZerosLike(scope, cell.c));
  }
  const Node* node = scope.AddNode("GRUBlockCellGrad", inputs);
  if (node == nullptr) return {};
  return {Output(node, 0), Output(node, 1), Output(node, 2), Output(node, 3)};
}

}  // namespace actorflow
