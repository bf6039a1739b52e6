// The run-time input checks of the fused recurrent cells (graph/rnn_ops.h), shared by
// the CPU kernels (rnn_kernels.cc) and the GPU kernels (kernels/cuda/rnn_kernels.cc;
// plain host C++), so that both refuse the same inputs with the same messages.
//
// B and I come from x (input 0), H from h_prev, and every other input must have the
// shape they give, else InvalidArgument naming the input, its shape and the shape it
// needs (without the node's name: the caller adds it). B, I + H and 4H must also fit
// the 32-bit dims of the BLAS interface.
//
// Thread safety: pure functions.
#ifndef ACTORFLOW_KERNELS_CPU_RNN_SHAPES_H_
#define ACTORFLOW_KERNELS_CPU_RNN_SHAPES_H_

#include <cstdint>
#include <vector>

#include "graph/shape.h"
#include "graph/status.h"

namespace actorflow {
namespace cpu {

struct CellDims {
  int64_t b = 0;  // batch
  int64_t i = 0;  // input features
  int64_t h = 0;  // units
};

// The ops whose inputs CheckCellInputs knows:
//   kLstm      x, cs_prev, h_prev, w [I + H, 4H], b [4H]
//   kLstmGrad  kLstm's, then i, cs, f, o, ci, co, cs_grad, h_grad [B, H]
//   kGru       x, h_prev, w_ru [I + H, 2H], w_c [I + H, H], b_ru [2H], b_c [H]
//   kGruGrad   kGru's, then r, u, c, d_h, and optionally d_r, d_u, d_c [B, H]
//              (10 or 13 inputs)
enum class CellOp { kLstm, kLstmGrad, kGru, kGruGrad };

// The dims of the step whose input shapes are `inputs` (all of the node's inputs).
StatusOr<CellDims> CheckCellInputs(CellOp op, const std::vector<Shape>& inputs);

}  // namespace cpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CPU_RNN_SHAPES_H_
