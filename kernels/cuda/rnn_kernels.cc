// GPU kernels of the fused recurrent cells LSTMBlockCell, LSTMBlockCellGrad,
// GRUBlockCell and GRUBlockCellGrad (float32 and float64), with the CPU kernels'
// checks and messages (kernels/cpu/rnn_shapes.h) and semantics. The products go to
// cuBLAS through MatMul, with the concatenated operand [x, h_prev] (or [x, r * h_prev])
// built in device scratch; the gate math is in rnn.cu (rnn_launch.h).
#include <cstdint>
#include <vector>

#include "kernels/cpu/rnn_shapes.h"
#include "kernels/cuda/gpu_kernel.h"
#include "kernels/cuda/rnn_launch.h"

namespace actorflow {
namespace gpu {
namespace {

Status Queued(const GpuError& e) { return e.ok() ? Status::OK() : Internal(e.message()); }

// CheckCellInputs over every input of the launch.
StatusOr<cpu::CellDims> CheckInputs(const GpuLaunch& l, cpu::CellOp op) {
  std::vector<Shape> shapes;
  shapes.reserve(l.inputs.size());
  for (const Tensor& t : l.inputs) shapes.push_back(t.shape());
  return cpu::CheckCellInputs(op, shapes);
}

// Outputs [first, first + count) of `shape`.
Status AllocateOutputs(GpuLaunch* l, int first, int count, const Shape& shape,
                       std::vector<Tensor>* out) {
  for (int k = first; k < first + count; ++k) {
    AF_ASSIGN_OR_RETURN(Tensor t, l->AllocateCheckedOutput(k, shape));
    out->push_back(std::move(t));
  }
  return Status::OK();
}

template <typename T>
StatusOr<Tensor> Scratch(GpuLaunch* l, int64_t rows, int64_t cols) {
  return AllocateDeviceTensor(l->device, DTypeOf<T>::value, Shape{rows, cols});
}

// Inputs x, cs_prev, h_prev, w, b; outputs i, cs, f, o, ci, co, h [B, H].
template <typename T>
class LstmBlockCellGpu : public GpuKernel {
 public:
  explicit LstmBlockCellGpu(const Node& node)
      : GpuKernel(node),
        forget_bias_(node.attr<double>("forget_bias")),
        cell_clip_(node.attr<double>("cell_clip")) {}

  Status Launch(GpuLaunch* l) override {
    AF_ASSIGN_OR_RETURN(cpu::CellDims d, CheckInputs(*l, cpu::CellOp::kLstm));
    std::vector<Tensor> out;
    AF_RETURN_IF_ERROR(AllocateOutputs(l, 0, 7, Shape{d.b, d.h}, &out));
    if (d.b == 0 || d.h == 0) return Status::OK();
    const ElemType type = ElemTypeOf(DTypeOf<T>::value);
    const std::vector<Tensor>& in = l->inputs;
    // z = [x, h_prev] w, [B, 4H].
    AF_ASSIGN_OR_RETURN(Tensor xh, Scratch<T>(l, d.b, d.i + d.h));
    AF_ASSIGN_OR_RETURN(Tensor z, Scratch<T>(l, d.b, 4 * d.h));
    AF_RETURN_IF_ERROR(Queued(ConcatColumns(l->device, type, d.b, in[0].raw_data(), d.i,
                                            in[2].raw_data(), d.h, xh.raw_data())));
    AF_RETURN_IF_ERROR(Queued(MatMul(l->device, type, false, false, d.b, 4 * d.h, d.i + d.h,
                                     xh.raw_data(), in[3].raw_data(), z.raw_data())));
    const LstmCellOut cell{out[0].raw_data(), out[1].raw_data(), out[2].raw_data(),
                           out[3].raw_data(), out[4].raw_data(), out[5].raw_data(),
                           out[6].raw_data()};
    return Queued(LstmCellForward(l->device, type, d.b, d.h, forget_bias_, cell_clip_,
                                  z.raw_data(), in[4].raw_data(), in[1].raw_data(), cell));
  }

 private:
  const double forget_bias_;
  const double cell_clip_;
};

// Inputs x, cs_prev, h_prev, w, b, i, cs, f, o, ci, co, cs_grad, h_grad; outputs
// cs_prev_grad [B, H], dgates [B, 4H].
template <typename T>
class LstmBlockCellGradGpu : public GpuKernel {
 public:
  explicit LstmBlockCellGradGpu(const Node& node)
      : GpuKernel(node), cell_clip_(node.attr<double>("cell_clip")) {}

  Status Launch(GpuLaunch* l) override {
    AF_ASSIGN_OR_RETURN(cpu::CellDims d, CheckInputs(*l, cpu::CellOp::kLstmGrad));
    std::vector<Tensor> out;
    AF_RETURN_IF_ERROR(AllocateOutputs(l, 0, 1, Shape{d.b, d.h}, &out));
    AF_RETURN_IF_ERROR(AllocateOutputs(l, 1, 1, Shape{d.b, 4 * d.h}, &out));
    auto in = [&](int k) { return l->inputs[k].raw_data(); };
    const LstmCellGradIn grad_in{in(1), in(5), in(6),  in(7), in(8),
                                 in(9), in(10), in(11), in(12)};
    return Queued(LstmCellBackward(l->device, ElemTypeOf(DTypeOf<T>::value), d.b, d.h,
                                   cell_clip_, grad_in, out[0].raw_data(), out[1].raw_data()));
  }

 private:
  const double cell_clip_;
};

// Inputs x, h_prev, w_ru, w_c, b_ru, b_c; outputs r, u, c, h [B, H].
template <typename T>
class GruBlockCellGpu : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;

  Status Launch(GpuLaunch* l) override {
    AF_ASSIGN_OR_RETURN(cpu::CellDims d, CheckInputs(*l, cpu::CellOp::kGru));
    std::vector<Tensor> out;
    AF_RETURN_IF_ERROR(AllocateOutputs(l, 0, 4, Shape{d.b, d.h}, &out));
    if (d.b == 0 || d.h == 0) return Status::OK();
    const ElemType type = ElemTypeOf(DTypeOf<T>::value);
    const std::vector<Tensor>& in = l->inputs;
    void* r = out[0].raw_data();
    void* u = out[1].raw_data();
    void* c = out[2].raw_data();
    // [r, u] before the sigmoid = [x, h_prev] w_ru, [B, 2H].
    AF_ASSIGN_OR_RETURN(Tensor xh, Scratch<T>(l, d.b, d.i + d.h));
    AF_ASSIGN_OR_RETURN(Tensor ru, Scratch<T>(l, d.b, 2 * d.h));
    AF_ASSIGN_OR_RETURN(Tensor x_rh, Scratch<T>(l, d.b, d.i + d.h));
    AF_RETURN_IF_ERROR(Queued(ConcatColumns(l->device, type, d.b, in[0].raw_data(), d.i,
                                            in[1].raw_data(), d.h, xh.raw_data())));
    AF_RETURN_IF_ERROR(Queued(MatMul(l->device, type, false, false, d.b, 2 * d.h, d.i + d.h,
                                     xh.raw_data(), in[2].raw_data(), ru.raw_data())));
    AF_RETURN_IF_ERROR(Queued(GruGates(l->device, type, d.b, d.i, d.h, ru.raw_data(),
                                       in[4].raw_data(), in[0].raw_data(), in[1].raw_data(), r,
                                       u, x_rh.raw_data())));
    // c before the tanh = [x, r * h_prev] w_c, written into c.
    AF_RETURN_IF_ERROR(Queued(MatMul(l->device, type, false, false, d.b, d.h, d.i + d.h,
                                     x_rh.raw_data(), in[3].raw_data(), c)));
    return Queued(GruOutput(l->device, type, d.b, d.h, in[5].raw_data(), in[1].raw_data(), u,
                            c, out[3].raw_data()));
  }
};

// Inputs x, h_prev, w_ru, w_c, b_ru, b_c, r, u, c, d_h[, d_r, d_u, d_c]; outputs d_x
// [B, I], d_h_prev [B, H], d_c_bar [B, H], d_r_bar_u_bar [B, 2H].
template <typename T>
class GruBlockCellGradGpu : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;

  Status Launch(GpuLaunch* l) override {
    AF_ASSIGN_OR_RETURN(cpu::CellDims d, CheckInputs(*l, cpu::CellOp::kGruGrad));
    std::vector<Tensor> out;
    AF_RETURN_IF_ERROR(AllocateOutputs(l, 0, 1, Shape{d.b, d.i}, &out));
    AF_RETURN_IF_ERROR(AllocateOutputs(l, 1, 2, Shape{d.b, d.h}, &out));
    AF_RETURN_IF_ERROR(AllocateOutputs(l, 3, 1, Shape{d.b, 2 * d.h}, &out));
    if (d.b == 0 || d.i + d.h == 0) return Status::OK();
    const ElemType type = ElemTypeOf(DTypeOf<T>::value);
    auto in = [&](int k) { return l->inputs[k].raw_data(); };
    const bool gate_grads = l->inputs.size() == 13;
    const GruCellGradIn grad_in{in(1), in(6), in(7), in(8), in(9),
                                gate_grads ? in(10) : nullptr, gate_grads ? in(11) : nullptr,
                                gate_grads ? in(12) : nullptr};
    void* d_x = out[0].raw_data();
    void* d_h_prev = out[1].raw_data();
    void* d_c_bar = out[2].raw_data();
    void* d_ru = out[3].raw_data();
    AF_RETURN_IF_ERROR(
        Queued(GruCandidateGrad(l->device, type, d.b, d.h, grad_in, d_c_bar, d_ru)));
    // d[x, r * h_prev] = d_c_bar w_c^T, [B, I + H].
    AF_ASSIGN_OR_RETURN(Tensor d_xrh, Scratch<T>(l, d.b, d.i + d.h));
    AF_RETURN_IF_ERROR(Queued(MatMul(l->device, type, false, true, d.b, d.i + d.h, d.h,
                                     d_c_bar, in(3), d_xrh.raw_data())));
    AF_RETURN_IF_ERROR(Queued(GruResetGrad(l->device, type, d.b, d.i, d.h, grad_in,
                                           d_xrh.raw_data(), d_ru, d_h_prev)));
    // d[x, h_prev] through [r, u] = d_r_bar_u_bar w_ru^T, [B, I + H].
    AF_ASSIGN_OR_RETURN(Tensor d_xh, Scratch<T>(l, d.b, d.i + d.h));
    AF_RETURN_IF_ERROR(Queued(MatMul(l->device, type, false, true, d.b, d.i + d.h, 2 * d.h,
                                     d_ru, in(2), d_xh.raw_data())));
    return Queued(GruInputGrad(l->device, type, d.b, d.i, d.h, d_xrh.raw_data(),
                               d_xh.raw_data(), d_x, d_h_prev));
  }
};

const GpuKernelRegistrations<LstmBlockCellGpu, float, double> reg_lstm("LSTMBlockCell");
const GpuKernelRegistrations<LstmBlockCellGradGpu, float, double> reg_lstm_grad(
    "LSTMBlockCellGrad");
const GpuKernelRegistrations<GruBlockCellGpu, float, double> reg_gru("GRUBlockCell");
const GpuKernelRegistrations<GruBlockCellGradGpu, float, double> reg_gru_grad(
    "GRUBlockCellGrad");

}  // namespace
}  // namespace gpu
}  // namespace actorflow
