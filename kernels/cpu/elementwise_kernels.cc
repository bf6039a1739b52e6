// CPU kernels of the element-wise arithmetic ops: Neg Exp Log Sqrt Square Abs, and the
// broadcasting binary ops Add Sub Mul Div Pow Maximum Minimum Equal Less Greater.
//
// Integer Div truncates toward zero and fails on a zero divisor; integer Pow squares
// and multiplies, and fails on a negative exponent unless the base is 1 or -1.
// Maximum/Minimum on floats propagate NaN (like NumPy's maximum/minimum). float32 Exp
// uses the vectorizable FastExp.
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/fast_math.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

// ---- unary functors ----

template <typename T>
struct NegOp {
  T operator()(T a) const { return WrapNeg(a); }
};
template <typename T>
struct ExpOp {
  T operator()(T a) const {
    if constexpr (std::is_same_v<T, float>) {
      return FastExp(a);
    } else {
      return std::exp(a);
    }
  }
};
template <typename T>
struct LogOp {
  T operator()(T a) const { return std::log(a); }
};
template <typename T>
struct SqrtOp {
  T operator()(T a) const { return std::sqrt(a); }
};
template <typename T>
struct SquareOp {
  T operator()(T a) const { return WrapMul(a, a); }
};
template <typename T>
struct AbsOp {
  T operator()(T a) const {
    if constexpr (std::is_integral_v<T>) {
      return a < 0 ? WrapNeg(a) : a;
    } else {
      return std::fabs(a);
    }
  }
};

template <typename T> using NegKernel = UnaryKernel<T, NegOp<T>>;
template <typename T> using ExpKernel = UnaryKernel<T, ExpOp<T>>;
template <typename T> using LogKernel = UnaryKernel<T, LogOp<T>>;
template <typename T> using SqrtKernel = UnaryKernel<T, SqrtOp<T>>;
template <typename T> using SquareKernel = UnaryKernel<T, SquareOp<T>>;
template <typename T> using AbsKernel = UnaryKernel<T, AbsOp<T>>;

// ---- binary functors ----

template <typename T>
struct AddOp {
  T operator()(T a, T b) const { return WrapAdd(a, b); }
};
template <typename T>
struct SubOp {
  T operator()(T a, T b) const { return WrapSub(a, b); }
};
template <typename T>
struct MulOp {
  T operator()(T a, T b) const { return WrapMul(a, b); }
};
template <typename T>
struct FloatDivOp {
  T operator()(T a, T b) const { return a / b; }
};
// Precondition: b != 0 (checked by IntDivKernel). C++ division truncates toward zero;
// only lowest / -1 overflows, and it wraps to lowest like negation does.
template <typename T>
struct IntDivOp {
  T operator()(T a, T b) const { return b == -1 ? WrapNeg(a) : a / b; }
};
template <typename T>
struct FloatPowOp {
  T operator()(T a, T b) const { return std::pow(a, b); }
};
template <typename T>
struct MaximumOp {
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return (a > b || a != a) ? a : b;  // a NaN in either operand wins
    } else {
      return a > b ? a : b;
    }
  }
};
template <typename T>
struct MinimumOp {
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return (a < b || a != a) ? a : b;
    } else {
      return a < b ? a : b;
    }
  }
};
template <typename T>
struct EqualOp {
  bool operator()(T a, T b) const { return a == b; }
};
template <typename T>
struct LessOp {
  bool operator()(T a, T b) const { return a < b; }
};
template <typename T>
struct GreaterOp {
  bool operator()(T a, T b) const { return a > b; }
};

template <typename T> using AddKernel = BinaryKernel<T, T, AddOp<T>>;
template <typename T> using SubKernel = BinaryKernel<T, T, SubOp<T>>;
template <typename T> using MulKernel = BinaryKernel<T, T, MulOp<T>>;
template <typename T> using FloatDivKernel = BinaryKernel<T, T, FloatDivOp<T>>;
template <typename T> using FloatPowKernel = BinaryKernel<T, T, FloatPowOp<T>>;
template <typename T> using MaximumKernel = BinaryKernel<T, T, MaximumOp<T>>;
template <typename T> using MinimumKernel = BinaryKernel<T, T, MinimumOp<T>>;
template <typename T> using EqualKernel = BinaryKernel<T, bool, EqualOp<T>>;
template <typename T> using LessKernel = BinaryKernel<T, bool, LessOp<T>>;
template <typename T> using GreaterKernel = BinaryKernel<T, bool, GreaterOp<T>>;

// Integer Div: every element of y takes part in a non-empty broadcast, so a zero
// anywhere in y is an error before any work is done.
template <typename T>
class IntDivKernel : public Kernel {
 public:
  explicit IntDivKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    auto plan = PlanBroadcast(x.shape(), y.shape());
    if (!plan.ok()) {
      ctx->Fail(Code::kInvalidArgument, plan.status().message());
      return;
    }
    if (plan->num_elements > 0) {
      const T* yv = y.data<T>();
      bool has_zero = false;
      for (int64_t i = 0; i < y.NumElements(); ++i) has_zero |= (yv[i] == 0);
      if (has_zero) {
        ctx->Fail(Code::kInvalidArgument, "integer division by zero");
        return;
      }
    }
    Tensor* z = AllocateCheckedOutput(ctx, 0, plan->out_shape);
    if (z == nullptr) return;
    IntDivOp<T> op;
    BinaryLoop(*plan, x.data<T>(), y.data<T>(), z->data<T>(), op);
  }
};

// base^exponent by squaring, wrapping on overflow. A negative exponent is only
// defined for bases 1 and -1; other bases set `invalid` and give 0.
template <typename T>
struct IntPowOp {
  bool invalid = false;
  T bad_base = 0;
  T bad_exponent = 0;

  T operator()(T base, T exponent) {
    if (exponent < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exponent & 1) ? -1 : 1;
      if (!invalid) {
        invalid = true;
        bad_base = base;
        bad_exponent = exponent;
      }
      return 0;
    }
    T result = 1;
    while (exponent != 0) {
      if (exponent & 1) result = WrapMul(result, base);
      exponent >>= 1;
      if (exponent != 0) base = WrapMul(base, base);
    }
    return result;
  }
};

template <typename T>
class IntPowKernel : public Kernel {
 public:
  explicit IntPowKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    auto plan = PlanBroadcast(x.shape(), y.shape());
    if (!plan.ok()) {
      ctx->Fail(Code::kInvalidArgument, plan.status().message());
      return;
    }
    Tensor z(node().output_dtype(0), plan->out_shape);
    IntPowOp<T> op;
    BinaryLoop(*plan, x.data<T>(), y.data<T>(), z.data<T>(), op);
    if (op.invalid) {
      ctx->Fail(Code::kInvalidArgument,
                "integer power with a negative exponent: " + std::to_string(op.bad_base) +
                    "^" + std::to_string(op.bad_exponent) + " (only bases 1 and -1 allow it)");
      return;
    }
    ctx->set_output(0, std::move(z));
  }
};

// ---- registrations ----

const CpuKernelRegistrations<NegKernel, float, double, int32_t, int64_t> reg_neg("Neg");
const CpuKernelRegistrations<ExpKernel, float, double> reg_exp("Exp");
const CpuKernelRegistrations<LogKernel, float, double> reg_log("Log");
const CpuKernelRegistrations<SqrtKernel, float, double> reg_sqrt("Sqrt");
const CpuKernelRegistrations<SquareKernel, float, double, int32_t, int64_t> reg_square("Square");
const CpuKernelRegistrations<AbsKernel, float, double, int32_t, int64_t> reg_abs("Abs");

const CpuKernelRegistrations<AddKernel, float, double, int32_t, int64_t> reg_add("Add");
const CpuKernelRegistrations<SubKernel, float, double, int32_t, int64_t> reg_sub("Sub");
const CpuKernelRegistrations<MulKernel, float, double, int32_t, int64_t> reg_mul("Mul");
const CpuKernelRegistrations<FloatDivKernel, float, double> reg_div_float("Div");
const CpuKernelRegistrations<IntDivKernel, int32_t, int64_t> reg_div_int("Div");
const CpuKernelRegistrations<FloatPowKernel, float, double> reg_pow_float("Pow");
const CpuKernelRegistrations<IntPowKernel, int32_t, int64_t> reg_pow_int("Pow");
const CpuKernelRegistrations<MaximumKernel, float, double, int32_t, int64_t> reg_maximum("Maximum");
const CpuKernelRegistrations<MinimumKernel, float, double, int32_t, int64_t> reg_minimum("Minimum");
const CpuKernelRegistrations<EqualKernel, float, double, int32_t, int64_t, bool> reg_equal("Equal");
const CpuKernelRegistrations<LessKernel, float, double, int32_t, int64_t> reg_less("Less");
const CpuKernelRegistrations<GreaterKernel, float, double, int32_t, int64_t> reg_greater("Greater");

}  // namespace
}  // namespace cpu
}  // namespace actorflow
