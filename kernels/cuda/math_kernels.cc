// GPU kernels of the element-wise ops (unary, broadcasting binary, the activation
// gradients), BiasAdd, MatMul (cuBLAS), Cast, Fill, ZerosLike, OnesLike and
// Identity, for float32 and float64. Shapes are checked here, with the CPU kernels'
// messages; the math is queued through gpu_launch.h.
#include <cstdint>
#include <string>

#include "kernels/cpu/broadcast.h"
#include "kernels/cuda/gpu_kernel.h"

namespace actorflow {
namespace gpu {
namespace {

Status Queued(const GpuError& e) { return e.ok() ? Status::OK() : Internal(e.message()); }

// The index of `operand` (aligned with `out` at the trailing end, a dim of 1
// stretching) over out's dims.
StridedIndex BroadcastIndex(const Shape& operand, const Shape& out) {
  StridedIndex index;
  index.rank = out.rank();
  const int offset = out.rank() - operand.rank();
  int64_t stride = 1;
  for (int d = out.rank() - 1; d >= 0; --d) {
    index.dims[d] = out.dim(d);
    const int od = d - offset;
    const int64_t size = od >= 0 ? operand.dim(od) : 1;
    index.strides[d] = size == 1 ? 0 : stride;
    stride *= size;
  }
  return index;
}

template <typename T, UnaryOp kOp>
class UnaryGpuKernel : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;
  Status Launch(GpuLaunch* l) override {
    const Tensor& x = l->inputs[0];
    AF_ASSIGN_OR_RETURN(Tensor y, l->AllocateOutput(0, x.shape()));
    return Queued(Unary(l->device, kOp, ElemTypeOf(DTypeOf<T>::value), x.raw_data(),
                        y.raw_data(), x.NumElements()));
  }
};

template <typename T, BinaryOp kOp>
class BinaryGpuKernel : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;
  Status Launch(GpuLaunch* l) override {
    const Tensor& x = l->inputs[0];
    const Tensor& y = l->inputs[1];
    AF_ASSIGN_OR_RETURN(Shape out_shape, cpu::BroadcastShape(x.shape(), y.shape()));
    if (out_shape.rank() > kMaxDims) return ContiguousIndex(out_shape).status();
    AF_ASSIGN_OR_RETURN(Tensor z, l->AllocateOutput(0, out_shape));
    return Queued(Binary(l->device, kOp, ElemTypeOf(DTypeOf<T>::value), x.raw_data(),
                         BroadcastIndex(x.shape(), out_shape), y.raw_data(),
                         BroadcastIndex(y.shape(), out_shape), z.raw_data(), z.NumElements()));
  }
};

// Inputs: value [..., C], bias [C]. Output: value's shape, bias added along the last dim.
template <typename T>
class BiasAddGpuKernel : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;
  Status Launch(GpuLaunch* l) override {
    const Tensor& value = l->inputs[0];
    const Tensor& bias = l->inputs[1];
    if (value.rank() < 1 || bias.rank() != 1 || bias.dim(0) != value.dim(value.rank() - 1)) {
      return InvalidArgument("BiasAdd needs value [..., C] and bias [C], got " +
                             value.shape().ToString() + " and " + bias.shape().ToString());
    }
    AF_RETURN_IF_ERROR(ContiguousIndex(value.shape()).status());
    AF_ASSIGN_OR_RETURN(Tensor out, l->AllocateOutput(0, value.shape()));
    return Queued(Binary(l->device, BinaryOp::kAdd, ElemTypeOf(DTypeOf<T>::value),
                         value.raw_data(), BroadcastIndex(value.shape(), value.shape()),
                         bias.raw_data(), BroadcastIndex(bias.shape(), value.shape()),
                         out.raw_data(), out.NumElements()));
  }
};

// Inputs: a [M,K] ([K,M] if transpose_a), b [K,N] ([N,K] if transpose_b). Output [M,N].
template <typename T>
class MatMulGpuKernel : public GpuKernel {
 public:
  explicit MatMulGpuKernel(const Node& node)
      : GpuKernel(node),
        transpose_a_(node.attr<bool>("transpose_a")),
        transpose_b_(node.attr<bool>("transpose_b")) {}

  Status Launch(GpuLaunch* l) override {
    const Tensor& a = l->inputs[0];
    const Tensor& b = l->inputs[1];
    if (a.rank() != 2 || b.rank() != 2) {
      return InvalidArgument("MatMul needs rank-2 inputs, got " + a.shape().ToString() + " and " +
                             b.shape().ToString());
    }
    const int64_t m = transpose_a_ ? a.dim(1) : a.dim(0);
    const int64_t k = transpose_a_ ? a.dim(0) : a.dim(1);
    const int64_t kb = transpose_b_ ? b.dim(1) : b.dim(0);
    const int64_t n = transpose_b_ ? b.dim(0) : b.dim(1);
    if (k != kb) {
      return InvalidArgument("MatMul shape mismatch: a " + a.shape().ToString() +
                             (transpose_a_ ? " (transposed)" : "") + " and b " +
                             b.shape().ToString() + (transpose_b_ ? " (transposed)" : "") +
                             " have inner dimensions " + std::to_string(k) + " and " +
                             std::to_string(kb));
    }
    AF_ASSIGN_OR_RETURN(Tensor c, l->AllocateOutput(0, Shape{m, n}));
    return Queued(MatMul(l->device, ElemTypeOf(DTypeOf<T>::value), transpose_a_, transpose_b_, m,
                         n, k, a.raw_data(), b.raw_data(), c.raw_data()));
  }

 private:
  const bool transpose_a_;
  const bool transpose_b_;
};

// Input: x (a float type). Output: x converted to the dtype attr.
template <typename T>
class CastGpuKernel : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;
  Status Launch(GpuLaunch* l) override {
    const Tensor& x = l->inputs[0];
    const DType to = node().output_dtype(0);
    if (to == x.dtype()) {  // tensors are immutable: the same buffer will do
      l->ctx->set_output(0, x);
      return Status::OK();
    }
    AF_ASSIGN_OR_RETURN(Tensor y, l->AllocateOutput(0, x.shape()));
    return Queued(Cast(l->device, ElemTypeOf(x.dtype()), x.raw_data(), ElemTypeOf(to),
                       y.raw_data(), x.NumElements()));
  }
};

// Attrs: shape (fully defined), value (a scalar of the output dtype).
template <typename T>
class FillGpuKernel : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;
  Status Launch(GpuLaunch* l) override {
    const Shape& shape = node().attr<Shape>("shape");
    const Tensor& value = node().attr<Tensor>("value");
    if (!shape.IsFullyDefined()) {
      return InvalidArgument("Fill needs a fully defined shape, got " + shape.ToString());
    }
    if (value.dtype() != DTypeOf<T>::value || value.NumElements() != 1 || value.IsOnDevice()) {
      return InvalidArgument("Fill's value must be a " + std::string(DTypeName(DTypeOf<T>::value)) +
                             " scalar, got " + value.DebugString());
    }
    AF_ASSIGN_OR_RETURN(Tensor y, l->AllocateOutput(0, shape));
    return Queued(Fill(l->device, ElemTypeOf(DTypeOf<T>::value), y.raw_data(), y.NumElements(),
                       static_cast<double>(value.data<T>()[0])));
  }
};

// Input: x (only its shape). Output: x's shape filled with kValue.
template <typename T, int kValue>
class ConstantLikeGpuKernel : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;
  bool ShapeOnlyInput(int) const override { return true; }
  Status Launch(GpuLaunch* l) override {
    AF_ASSIGN_OR_RETURN(Tensor y, l->AllocateOutput(0, l->inputs[0].shape()));
    return Queued(Fill(l->device, ElemTypeOf(DTypeOf<T>::value), y.raw_data(), y.NumElements(),
                       kValue));
  }
};

template <typename T>
class IdentityGpuKernel : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;
  Status Launch(GpuLaunch* l) override {
    l->ctx->set_output(0, l->inputs[0]);  // on the device after staging
    return Status::OK();
  }
};

template <typename T> using NegGpu = UnaryGpuKernel<T, UnaryOp::kNeg>;
template <typename T> using ExpGpu = UnaryGpuKernel<T, UnaryOp::kExp>;
template <typename T> using LogGpu = UnaryGpuKernel<T, UnaryOp::kLog>;
template <typename T> using SqrtGpu = UnaryGpuKernel<T, UnaryOp::kSqrt>;
template <typename T> using SquareGpu = UnaryGpuKernel<T, UnaryOp::kSquare>;
template <typename T> using AbsGpu = UnaryGpuKernel<T, UnaryOp::kAbs>;
template <typename T> using ReluGpu = UnaryGpuKernel<T, UnaryOp::kRelu>;
template <typename T> using SigmoidGpu = UnaryGpuKernel<T, UnaryOp::kSigmoid>;
template <typename T> using TanhGpu = UnaryGpuKernel<T, UnaryOp::kTanh>;
template <typename T> using AddGpu = BinaryGpuKernel<T, BinaryOp::kAdd>;
template <typename T> using SubGpu = BinaryGpuKernel<T, BinaryOp::kSub>;
template <typename T> using MulGpu = BinaryGpuKernel<T, BinaryOp::kMul>;
template <typename T> using DivGpu = BinaryGpuKernel<T, BinaryOp::kDiv>;
template <typename T> using PowGpu = BinaryGpuKernel<T, BinaryOp::kPow>;
template <typename T> using MaximumGpu = BinaryGpuKernel<T, BinaryOp::kMaximum>;
template <typename T> using MinimumGpu = BinaryGpuKernel<T, BinaryOp::kMinimum>;
template <typename T> using ReluGradGpu = BinaryGpuKernel<T, BinaryOp::kReluGrad>;
template <typename T> using SigmoidGradGpu = BinaryGpuKernel<T, BinaryOp::kSigmoidGrad>;
template <typename T> using TanhGradGpu = BinaryGpuKernel<T, BinaryOp::kTanhGrad>;
template <typename T> using ZerosLikeGpu = ConstantLikeGpuKernel<T, 0>;
template <typename T> using OnesLikeGpu = ConstantLikeGpuKernel<T, 1>;

const GpuKernelRegistrations<NegGpu, float, double> reg_neg("Neg");
const GpuKernelRegistrations<ExpGpu, float, double> reg_exp("Exp");
const GpuKernelRegistrations<LogGpu, float, double> reg_log("Log");
const GpuKernelRegistrations<SqrtGpu, float, double> reg_sqrt("Sqrt");
const GpuKernelRegistrations<SquareGpu, float, double> reg_square("Square");
const GpuKernelRegistrations<AbsGpu, float, double> reg_abs("Abs");
const GpuKernelRegistrations<ReluGpu, float, double> reg_relu("Relu");
const GpuKernelRegistrations<SigmoidGpu, float, double> reg_sigmoid("Sigmoid");
const GpuKernelRegistrations<TanhGpu, float, double> reg_tanh("Tanh");
const GpuKernelRegistrations<AddGpu, float, double> reg_add("Add");
const GpuKernelRegistrations<SubGpu, float, double> reg_sub("Sub");
const GpuKernelRegistrations<MulGpu, float, double> reg_mul("Mul");
const GpuKernelRegistrations<DivGpu, float, double> reg_div("Div");
const GpuKernelRegistrations<PowGpu, float, double> reg_pow("Pow");
const GpuKernelRegistrations<MaximumGpu, float, double> reg_maximum("Maximum");
const GpuKernelRegistrations<MinimumGpu, float, double> reg_minimum("Minimum");
const GpuKernelRegistrations<ReluGradGpu, float, double> reg_relu_grad("ReluGrad");
const GpuKernelRegistrations<SigmoidGradGpu, float, double> reg_sigmoid_grad("SigmoidGrad");
const GpuKernelRegistrations<TanhGradGpu, float, double> reg_tanh_grad("TanhGrad");
const GpuKernelRegistrations<BiasAddGpuKernel, float, double> reg_bias_add("BiasAdd");
const GpuKernelRegistrations<MatMulGpuKernel, float, double> reg_matmul("MatMul");
const GpuKernelRegistrations<CastGpuKernel, float, double> reg_cast("Cast");
const GpuKernelRegistrations<FillGpuKernel, float, double> reg_fill("Fill");
const GpuKernelRegistrations<ZerosLikeGpu, float, double> reg_zeros_like("ZerosLike");
const GpuKernelRegistrations<OnesLikeGpu, float, double> reg_ones_like("OnesLike");
const GpuKernelRegistrations<IdentityGpuKernel, float, double> reg_identity("Identity");

}  // namespace
}  // namespace gpu
}  // namespace actorflow
