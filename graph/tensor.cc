#include "graph/tensor.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <type_traits>

namespace actorflow {

TensorBuffer::TensorBuffer(size_t bytes, bool zero_fill) : bytes_(bytes) {
  // aligned_alloc needs a size that is a multiple of the alignment, and never 0.
  size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  if (rounded == 0) rounded = kTensorAlignment;
  data_ = std::aligned_alloc(kTensorAlignment, rounded);
  if (data_ == nullptr) throw std::bad_alloc();
  if (zero_fill) std::memset(data_, 0, rounded);
}

TensorBuffer::TensorBuffer(void* data, size_t bytes, std::function<void(void*)> deleter,
                           MemoryKind kind)
    : data_(data), bytes_(bytes), deleter_(std::move(deleter)), kind_(kind) {}

TensorBuffer::~TensorBuffer() {
  if (deleter_) {
    deleter_(data_);
  } else {
    std::free(data_);
  }
}

Tensor::Tensor(DType dtype, const Shape& shape)
    : dtype_(dtype), shape_(shape), num_elements_(shape.num_elements()) {
  assert(shape.IsFullyDefined());
  buffer_ = std::make_shared<TensorBuffer>(TotalBytes());
}

Tensor::Tensor(DType dtype, const Shape& shape, std::shared_ptr<TensorBuffer> buffer)
    : dtype_(dtype), shape_(shape), num_elements_(shape.num_elements()), buffer_(std::move(buffer)) {
  assert(shape.IsFullyDefined());
  assert(buffer_ != nullptr && buffer_->size() >= TotalBytes());
}

StatusOr<Tensor> Tensor::Reshaped(const Shape& shape) const {
  if (!shape.IsFullyDefined() || shape.num_elements() != num_elements_) {
    return InvalidArgument("cannot reshape a tensor of shape " + shape_.ToString() + " (" +
                           std::to_string(num_elements_) + " elements) to " + shape.ToString());
  }
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::DeepCopy() const {
  if (!IsInitialized()) return *this;
  if (IsOnDevice()) return Tensor();
  Tensor t(dtype_, shape_);
  std::memcpy(t.raw_data(), raw_data(), TotalBytes());
  return t;
}

double Tensor::ElementAsDouble(int64_t i) const {
  if (IsOnDevice()) return std::numeric_limits<double>::quiet_NaN();
  return VisitDType(dtype_, [&](auto zero) -> double {
    using T = decltype(zero);
    return static_cast<double>(data<T>()[i]);
  });
}

std::string Tensor::DebugString() const {
  return std::string(DTypeName(dtype_)) + shape_.ToString() + (IsOnDevice() ? "@device" : "");
}

bool TensorsEqual(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.IsOnDevice() || b.IsOnDevice()) return false;
  return VisitDType(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* x = a.data<T>();
    const T* y = b.data<T>();
    for (int64_t i = 0; i < a.NumElements(); ++i) {
      if (x[i] == y[i]) continue;
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(x[i]) && std::isnan(y[i])) continue;
      }
      return false;
    }
    return true;
  });
}

}  // namespace actorflow
