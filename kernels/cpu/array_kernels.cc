// CPU kernels that make or reinterpret whole tensors: Cast, Reshape (shares the input
// buffer), Shape, Fill, ZerosLike, OnesLike.
//
// Cast is registered under its source dtype and handles every destination dtype:
// float -> int truncates toward zero, bool -> number is 0/1, number -> bool is x != 0.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/kernel_util.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

template <typename From, typename To>
void CastLoop(const From* __restrict in, To* __restrict out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<To>(in[i]);
}

// Input: x of dtype T. Output: x's shape, dtype attr.
template <typename T>
class CastKernel : public Kernel {
 public:
  explicit CastKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const DType to = node().output_dtype(0);
    if (to == x.dtype()) {  // tensors are immutable: the same buffer will do
      ctx->set_output(0, x);
      return;
    }
    Tensor& y = ctx->allocate_output(0, x.shape());
    VisitDType(to, [&](auto zero) {
      using To = decltype(zero);
      CastLoop(x.data<T>(), y.data<To>(), x.NumElements());
    });
  }
};

// Inputs: x [any shape], shape (int32 or int64, 1-D; at most one -1). Output: x's
// elements, same buffer, in the requested shape.
template <typename T>
class ReshapeKernel : public Kernel {
 public:
  explicit ReshapeKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& shape = ctx->input(1);
    if (shape.rank() != 1 || (shape.dtype() != DType::kInt32 && shape.dtype() != DType::kInt64)) {
      ctx->Fail(Code::kInvalidArgument, "Reshape's shape input must be a 1-D int32 or int64 "
                                        "tensor, got " + shape.DebugString());
      return;
    }
    std::vector<int64_t> dims(shape.NumElements());
    for (int64_t i = 0; i < shape.NumElements(); ++i) {
      dims[i] = shape.dtype() == DType::kInt32 ? shape.data<int32_t>()[i]
                                               : shape.data<int64_t>()[i];
    }
    int unknown = -1;
    int64_t known = 1;
    for (int i = 0; i < static_cast<int>(dims.size()); ++i) {
      if (dims[i] == -1 && unknown < 0) {
        unknown = i;
      } else if (dims[i] < 0) {
        ctx->Fail(Code::kInvalidArgument,
                  "Reshape's shape " + IntListToString(dims) +
                      " has more than one -1 or a negative dimension");
        return;
      } else if (!CheckedMul(known, dims[i], &known)) {
        // Wrapping around could match x's count and make a view past its buffer.
        bool has_zero = false;
        for (int64_t d : dims) has_zero = has_zero || d == 0;
        if (!has_zero) {
          ctx->Fail(Code::kInvalidArgument,
                    "Reshape's shape " + IntListToString(dims) +
                        " has more elements than an int64 can count (the input " +
                        x.shape().ToString() + " has " + std::to_string(x.NumElements()) + ")");
          return;
        }
        known = 0;  // a 0 dim makes the product 0, overflow or not
      }
    }
    const int64_t n = x.NumElements();
    if (unknown >= 0) {
      if (known == 0 || n % known != 0) {
        ctx->Fail(Code::kInvalidArgument,
                  "cannot reshape " + x.shape().ToString() + " (" + std::to_string(n) +
                      " elements) to " + IntListToString(dims) + ": the -1 cannot be resolved");
        return;
      }
      dims[unknown] = n / known;
      known = n;
    }
    if (known != n) {
      ctx->Fail(Code::kInvalidArgument, "cannot reshape " + x.shape().ToString() + " (" +
                                            std::to_string(n) + " elements) to " +
                                            IntListToString(dims) + " (" +
                                            std::to_string(known) + " elements)");
      return;
    }
    auto reshaped = x.Reshaped(Shape(std::move(dims)));
    if (!reshaped.ok()) {
      ctx->Fail(Code::kInvalidArgument, reshaped.status().message());
      return;
    }
    ctx->set_output(0, std::move(reshaped).value());
  }
};

// Input: x (only its shape is read). Output: int32 or int64 (out_type) [rank].
template <typename T>
class ShapeKernel : public Kernel {
 public:
  explicit ShapeKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor& out = ctx->allocate_output(0, Shape{x.rank()});
    for (int i = 0; i < x.rank(); ++i) {
      if (out.dtype() == DType::kInt32) {
        out.data<int32_t>()[i] = static_cast<int32_t>(x.dim(i));
      } else {
        out.data<int64_t>()[i] = x.dim(i);
      }
    }
  }
};

template <typename T>
void FillWith(Tensor& t, T value) {
  T* __restrict out = t.data<T>();
  const int64_t n = t.NumElements();
  for (int64_t i = 0; i < n; ++i) out[i] = value;
}

// No inputs. Output: `shape` attr filled with the scalar `value` attr (dtype T).
template <typename T>
class FillKernel : public Kernel {
 public:
  explicit FillKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Shape& shape = node().attr<Shape>("shape");
    const Tensor& value = node().attr<Tensor>("value");
    if (!shape.IsFullyDefined()) {
      ctx->Fail(Code::kInvalidArgument,
                "Fill needs a fully defined shape, got " + shape.ToString());
      return;
    }
    if (value.dtype() != DTypeOf<T>::value || value.NumElements() != 1) {
      ctx->Fail(Code::kInvalidArgument, "Fill's value must be a " +
                                            std::string(DTypeName(DTypeOf<T>::value)) +
                                            " scalar, got " + value.DebugString());
      return;
    }
    Tensor* out = AllocateCheckedOutput(ctx, 0, shape);
    if (out == nullptr) return;
    FillWith(*out, value.data<T>()[0]);
  }
};

// Input: x. Output: x's shape and dtype, every element `kValue` (0 or 1).
template <typename T, int kValue>
class ConstantLikeKernel : public Kernel {
 public:
  explicit ConstantLikeKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    Tensor& out = ctx->allocate_output(0, ctx->input(0).shape());  // zero-filled
    if (kValue != 0) FillWith(out, static_cast<T>(kValue));
  }
};
template <typename T> using ZerosLikeKernel = ConstantLikeKernel<T, 0>;
template <typename T> using OnesLikeKernel = ConstantLikeKernel<T, 1>;

const CpuKernelRegistrations<CastKernel, float, double, int32_t, int64_t, bool> reg_cast("Cast");
const CpuKernelRegistrations<ReshapeKernel, float, double, int32_t, int64_t, bool> reg_reshape(
    "Reshape");
const CpuKernelRegistrations<ShapeKernel, float, double, int32_t, int64_t, bool> reg_shape(
    "Shape");
const CpuKernelRegistrations<FillKernel, float, double, int32_t, int64_t, bool> reg_fill("Fill");
const CpuKernelRegistrations<ZerosLikeKernel, float, double, int32_t, int64_t, bool>
    reg_zeros_like("ZerosLike");
const CpuKernelRegistrations<OnesLikeKernel, float, double, int32_t, int64_t, bool>
    reg_ones_like("OnesLike");

}  // namespace
}  // namespace cpu
}  // namespace actorflow
