// Reference element-wise ops: unary math and activations, broadcasting binary math,
// comparisons and Cast. Floating dtypes compute in double and round once to the
// output dtype; integer dtypes compute in wrapping int64 and keep the low bits.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/reference/reference_util.h"

namespace actorflow {
namespace reference {
namespace {

const std::vector<DType> kNumeric = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                     DType::kInt64};
const std::vector<DType> kFloating = {DType::kFloat32, DType::kFloat64};
const std::vector<DType> kAll = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                 DType::kInt64, DType::kBool};

// ---- Unary -----------------------------------------------------------------------

double UnaryDouble(const std::string& op, double x) {
  if (op == "Neg") return -x;
  if (op == "Exp") return std::exp(x);
  if (op == "Log") return std::log(x);
  if (op == "Sqrt") return std::sqrt(x);
  if (op == "Square") return x * x;
  if (op == "Abs") return std::fabs(x);
  if (op == "Relu") return x < 0.0 ? 0.0 : x;  // NaN passes through
  if (op == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (op == "Tanh") return std::tanh(x);
  return std::nan("");
}

int64_t UnaryInt(const std::string& op, int64_t x) {
  if (op == "Neg") return WrapSub(0, x);
  if (op == "Abs") return x < 0 ? WrapSub(0, x) : x;
  if (op == "Square") return WrapMul(x, x);
  return 0;
}

bool IsFloatOnlyUnary(const std::string& op) {
  return op == "Exp" || op == "Log" || op == "Sqrt" || op == "Relu" || op == "Sigmoid" ||
         op == "Tanh";
}

// x [*] -> y [*], same dtype.
StatusOr<std::vector<Tensor>> Unary(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  const Tensor& x = call.inputs[0];
  AF_RETURN_IF_ERROR(
      CheckDType(call, x, IsFloatOnlyUnary(call.op) ? kFloating : kNumeric, "input x"));
  Tensor y(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    if (IsFloating(x.dtype())) {
      SetDouble(&y, i, UnaryDouble(call.op, GetDouble(x, i)));
    } else {
      SetInt(&y, i, UnaryInt(call.op, GetInt(x, i)));
    }
  }
  return std::vector<Tensor>{y};
}

// ---- Binary ----------------------------------------------------------------------

double BinaryDouble(const std::string& op, double a, double b) {
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  if (op == "Div") return a / b;
  if (op == "Pow") return std::pow(a, b);
  if (op == "Maximum") return a > b ? a : b;
  if (op == "Minimum") return a < b ? a : b;
  return std::nan("");
}

// Integer power by squaring (wrapping on overflow). A negative exponent has an integer
// result only for a base of 1 or -1.
StatusOr<int64_t> IntPow(int64_t base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 1) return int64_t{1};
    if (base == -1) return exponent % 2 == 0 ? int64_t{1} : int64_t{-1};
    return InvalidArgument("integer Pow with negative exponent " + std::to_string(exponent) +
                           " and base " + std::to_string(base));
  }
  int64_t result = 1;
  int64_t factor = base;
  while (exponent > 0) {
    if (exponent & 1) result = WrapMul(result, factor);
    factor = WrapMul(factor, factor);
    exponent >>= 1;
  }
  return result;
}

StatusOr<int64_t> BinaryInt(const std::string& op, int64_t a, int64_t b) {
  if (op == "Add") return WrapAdd(a, b);
  if (op == "Sub") return WrapSub(a, b);
  if (op == "Mul") return WrapMul(a, b);
  if (op == "Div") {
    if (b == 0) {
      return InvalidArgument("integer division by zero (" + std::to_string(a) + " / 0)");
    }
    if (b == -1) return WrapSub(0, a);  // avoids INT64_MIN / -1
    return a / b;                       // C++ truncates toward zero
  }
  if (op == "Pow") return IntPow(a, b);
  if (op == "Maximum") return a > b ? a : b;
  if (op == "Minimum") return a < b ? a : b;
  return Unimplemented("unknown binary op " + op);
}

bool IsComparison(const std::string& op) {
  return op == "Equal" || op == "Less" || op == "Greater";
}

bool Compare(const std::string& op, double a, double b) {
  if (op == "Equal") return a == b;
  if (op == "Less") return a < b;
  return a > b;
}

bool CompareInt(const std::string& op, int64_t a, int64_t b) {
  if (op == "Equal") return a == b;
  if (op == "Less") return a < b;
  return a > b;
}

// x [broadcastable], y [broadcastable] -> z [broadcast shape]; dtype x's, or bool for a
// comparison.
StatusOr<std::vector<Tensor>> Binary(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 2));
  const Tensor& x = call.inputs[0];
  const Tensor& y = call.inputs[1];
  const bool comparison = IsComparison(call.op);
  AF_RETURN_IF_ERROR(CheckDType(call, x, call.op == "Equal" ? kAll : kNumeric, "input x"));
  if (y.dtype() != x.dtype()) {
    return InvalidArgument(call.op + ": inputs have different dtypes " +
                           DTypeName(x.dtype()) + " and " + DTypeName(y.dtype()));
  }
  AF_ASSIGN_OR_RETURN(Shape shape, BroadcastShape(call.op, x.shape(), y.shape()));
  Tensor z(comparison ? DType::kBool : x.dtype(), shape);
  const bool floating = IsFloating(x.dtype());
  Status status;
  ForEachIndex(shape, [&](const std::vector<int64_t>& index, int64_t flat) {
    const int64_t xi = BroadcastSource(index, x.shape());
    const int64_t yi = BroadcastSource(index, y.shape());
    if (comparison) {
      bool v = floating ? Compare(call.op, GetDouble(x, xi), GetDouble(y, yi))
                        : CompareInt(call.op, GetInt(x, xi), GetInt(y, yi));
      SetInt(&z, flat, v ? 1 : 0);
    } else if (floating) {
      SetDouble(&z, flat, BinaryDouble(call.op, GetDouble(x, xi), GetDouble(y, yi)));
    } else {
      auto v = BinaryInt(call.op, GetInt(x, xi), GetInt(y, yi));
      if (!v.ok()) {
        if (status.ok()) status = v.status().WithContext(call.op);
        return;
      }
      SetInt(&z, flat, *v);
    }
  });
  AF_RETURN_IF_ERROR(status);
  return std::vector<Tensor>{z};
}

// ---- Cast ------------------------------------------------------------------------

// x [*] -> y [*] of dtype attr `dtype`. Floating -> integer truncates toward zero,
// bool -> number is 0/1, number -> bool is x != 0.
StatusOr<std::vector<Tensor>> Cast(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  AF_ASSIGN_OR_RETURN(DType dtype, GetAttr<DType>(call, "dtype"));
  const Tensor& x = call.inputs[0];
  Tensor y(dtype, x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    if (IsFloating(x.dtype())) {
      const double v = GetDouble(x, i);
      if (dtype == DType::kBool) {
        SetInt(&y, i, v != 0.0 ? 1 : 0);  // NaN != 0 is true
      } else if (IsFloating(dtype)) {
        SetDouble(&y, i, v);
      } else {
        SetInt(&y, i, static_cast<int64_t>(std::trunc(v)));
      }
    } else {
      const int64_t v = GetInt(x, i);
      if (IsFloating(dtype)) {
        SetDouble(&y, i, static_cast<double>(v));
      } else {
        SetInt(&y, i, v);  // SetInt maps to bool as v != 0
      }
    }
  }
  return std::vector<Tensor>{y};
}

}  // namespace

void AddElementwiseOps(RefTable* table) {
  for (const char* op :
       {"Neg", "Exp", "Log", "Sqrt", "Square", "Abs", "Relu", "Sigmoid", "Tanh"}) {
    (*table)[op] = Unary;
  }
  for (const char* op :
       {"Add", "Sub", "Mul", "Div", "Pow", "Maximum", "Minimum", "Equal", "Less", "Greater"}) {
    (*table)[op] = Binary;
  }
  (*table)["Cast"] = Cast;
}

}  // namespace reference
}  // namespace actorflow
