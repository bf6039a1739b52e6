#include "kernels/collective/element_ops.h"

#include <cassert>
#include <cstring>
#include <type_traits>

namespace actorflow {
namespace collective_internal {
namespace {

// Signed overflow is undefined behaviour; unsigned arithmetic wraps around, and the
// conversion back gives the two's-complement result on every supported compiler.
template <typename T>
T WrappingAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

}  // namespace

bool IsReducibleDType(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kInt32 ||
         dtype == DType::kInt64;
}

void AddElementsInto(const Tensor& lower, const Tensor& higher, Tensor* out, int divisor) {
  assert(lower.dtype() == higher.dtype() && lower.NumElements() == higher.NumElements());
  assert(out->dtype() == lower.dtype() && out->NumElements() == lower.NumElements());
  assert(divisor >= 1);
  VisitDType(lower.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (!std::is_same_v<T, bool>) {
      const T* a = lower.data<T>();
      const T* b = higher.data<T>();
      T* sum = out->data<T>();
      const int64_t n = out->NumElements();
      if (divisor == 1) {
        for (int64_t i = 0; i < n; ++i) sum[i] = WrappingAdd(a[i], b[i]);
      } else {
        // The sum is rounded (or wrapped) before the division, as in two passes.
        const T d = static_cast<T>(divisor);
        for (int64_t i = 0; i < n; ++i) sum[i] = WrappingAdd(a[i], b[i]) / d;
      }
    }
  });
}

Tensor AddElements(const Tensor& lower, const Tensor& higher, const Shape& shape) {
  Tensor out = Tensor::Uninitialized(lower.dtype(), shape);
  AddElementsInto(lower, higher, &out);
  return out;
}

Tensor DivideElements(const Tensor& sum, int divisor) {
  assert(divisor >= 1);
  Tensor out = Tensor::Uninitialized(sum.dtype(), sum.shape());
  VisitDType(sum.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (!std::is_same_v<T, bool>) {
      const T* in = sum.data<T>();
      T* quotient = out.data<T>();
      const T d = static_cast<T>(divisor);
      const int64_t n = out.NumElements();
      for (int64_t i = 0; i < n; ++i) quotient[i] = in[i] / d;
    }
  });
  return out;
}

void CopyElementsInto(const Tensor& value, Tensor* out) {
  assert(value.TotalBytes() == out->TotalBytes());
  if (value.TotalBytes() > 0) std::memcpy(out->raw_data(), value.raw_data(), value.TotalBytes());
}

Tensor ConcatenateBytes(const std::vector<Tensor>& parts, DType dtype, const Shape& shape) {
  Tensor out = Tensor::Uninitialized(dtype, shape);
  char* dst = static_cast<char*>(out.raw_data());
  size_t offset = 0;
  for (const Tensor& part : parts) {
    const size_t bytes = part.TotalBytes();
    assert(offset + bytes <= out.TotalBytes());
    if (bytes > 0) std::memcpy(dst + offset, part.raw_data(), bytes);
    offset += bytes;
  }
  assert(offset == out.TotalBytes());
  return out;
}

Tensor Flattened(const Tensor& t) {
  StatusOr<Tensor> flat = t.Reshaped(Shape{t.NumElements()});
  assert(flat.ok());
  return std::move(flat).value();
}

}  // namespace collective_internal
}  // namespace actorflow
