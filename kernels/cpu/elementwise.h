// Kernel templates for element-wise ops: a unary kernel maps each element through a
// functor; a binary kernel broadcasts its two operands (see broadcast.h) and combines
// them with a functor. Functors are small structs with `R operator()(T...)` so that
// the loops inline and vectorize; integer arithmetic wraps (computed in the unsigned
// type) instead of overflowing.
//
// Thread safety: kernels are stateless; Compute may run concurrently.
#ifndef ACTORFLOW_KERNELS_CPU_ELEMENTWISE_H_
#define ACTORFLOW_KERNELS_CPU_ELEMENTWISE_H_

#include <cstdint>
#include <type_traits>

#include "graph/tensor.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {

// Two's-complement wrapping arithmetic for integers; plain arithmetic otherwise.
template <typename T>
inline T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <typename T>
inline T WrapSub(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return a - b;
  }
}
template <typename T>
inline T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}
template <typename T>
inline T WrapNeg(T a) {
  return WrapSub(T(0), a);
}

// y = op(x), same shape and dtype. Input 0: x [any shape].
template <typename T, typename Op>
class UnaryKernel : public Kernel {
 public:
  explicit UnaryKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const int64_t n = x.NumElements();
    Op op;
    bool in_place = false;
    Tensor* y = ForwardInputOrAllocateOutput(ctx, 0, 0, x.shape(), &in_place);
    if (y == nullptr) return;
    if (in_place) {
      T* xy = y->data<T>();
      for (int64_t i = 0; i < n; ++i) xy[i] = op(xy[i]);
      return;
    }
    const T* __restrict in = x.data<T>();
    T* __restrict out = y->data<T>();
    for (int64_t i = 0; i < n; ++i) out[i] = op(in[i]);
  }
};

// z = op(x, y) with NumPy broadcasting; z's element type is R (bool for comparisons).
// Inputs: x, y of dtype T. Output: broadcast shape.
template <typename T, typename R, typename Op>
class BinaryKernel : public Kernel {
 public:
  explicit BinaryKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    auto plan = PlanBroadcast(x.shape(), y.shape());
    if (!plan.ok()) {
      ctx->Fail(Code::kInvalidArgument, plan.status().message());
      return;
    }
    Op op;
    // An operand of the output's shape and type may take the output (kernel_util.h):
    // x when y is as large or a scalar, y when x is a scalar.
    if constexpr (std::is_same_v<T, R>) {
      const bool x_full = plan->kind == BroadcastPlan::Kind::kSame ||
                          plan->kind == BroadcastPlan::Kind::kScalarY;
      if (x_full || plan->kind == BroadcastPlan::Kind::kScalarX) {
        bool in_place = false;
        Tensor* z = ForwardInputOrAllocateOutput(ctx, x_full ? 0 : 1, 0, plan->out_shape,
                                                 &in_place);
        if (z == nullptr) return;
        if (in_place) {
          BinaryInPlace(*plan, x_full, z->data<T>(), x_full ? y.data<T>() : x.data<T>(), op);
        } else {
          BinaryLoop(*plan, x.data<T>(), y.data<T>(), z->data<R>(), op);
        }
        return;
      }
    }
    Tensor* z = AllocateCheckedOutput(ctx, 0, plan->out_shape, /*overwrite=*/true);
    if (z == nullptr) return;
    BinaryLoop(*plan, x.data<T>(), y.data<T>(), z->data<R>(), op);
  }
};

}  // namespace cpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CPU_ELEMENTWISE_H_
