// Tensor: a dtype, a fully defined shape and an aligned, contiguous, row-major host
// buffer. Copying a Tensor shares the buffer (reference semantics, like TensorFlow's
// tensors); DeepCopy() is the only way to duplicate the bytes.
//
// Thread safety: a Tensor object is not synchronized; a buffer shared by several
// Tensors must be treated as immutable by all of them unless RefCountIsOne() holds
// (copy-on-write is how variables update in place; see kernels/resource.h).
#ifndef ACTORFLOW_GRAPH_TENSOR_H_
#define ACTORFLOW_GRAPH_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/shape.h"
#include "graph/status.h"
#include "graph/types.h"

namespace actorflow {

// Buffers are aligned for AVX-512 loads and cache lines.
inline constexpr size_t kTensorAlignment = 64;

class TensorBuffer {
 public:
  explicit TensorBuffer(size_t bytes);  // zero-filled
  ~TensorBuffer();
  TensorBuffer(const TensorBuffer&) = delete;
  TensorBuffer& operator=(const TensorBuffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

class Tensor {
 public:
  // An empty float32 scalar placeholder with no buffer (IsInitialized() is false).
  Tensor() = default;
  // Allocates a zero-filled buffer. Precondition: shape.IsFullyDefined().
  Tensor(DType dtype, const Shape& shape);

  template <typename T>
  static Tensor Scalar(T value) {
    Tensor t(DTypeOf<T>::value, Shape{});
    *t.data<T>() = value;
    return t;
  }
  // Precondition: values.size() == shape.num_elements().
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values, const Shape& shape) {
    Tensor t(DTypeOf<T>::value, shape);
    T* out = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
    return t;
  }
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values) {
    return FromVector(values, Shape{static_cast<int64_t>(values.size())});
  }

  bool IsInitialized() const { return buffer_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_.dim(i); }
  int64_t NumElements() const { return num_elements_; }
  size_t TotalBytes() const { return static_cast<size_t>(num_elements_) * DTypeSize(dtype_); }

  // Typed element access. Precondition: DTypeOf<T>::value == dtype().
  template <typename T>
  T* data() {
    return static_cast<T*>(raw_data());
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(raw_data());
  }
  void* raw_data() const { return buffer_ ? buffer_->data() : nullptr; }

  // Same buffer, new shape with the same number of elements.
  StatusOr<Tensor> Reshaped(const Shape& shape) const;
  // A new buffer with the same contents.
  Tensor DeepCopy() const;
  // True when this Tensor is the only owner of its buffer (safe to mutate in place).
  bool RefCountIsOne() const { return buffer_ && buffer_.use_count() == 1; }
  // True when both share one buffer.
  bool SharesBufferWith(const Tensor& other) const { return buffer_ == other.buffer_; }

  // Element i as a double (bool as 0/1); for tests and printing.
  double ElementAsDouble(int64_t i) const;
  // "float32[2,3]"
  std::string DebugString() const;

 private:
  DType dtype_ = DType::kFloat32;
  Shape shape_;
  int64_t num_elements_ = 0;
  std::shared_ptr<TensorBuffer> buffer_;
};

// True when dtype, shape and every element are equal (NaN equals NaN).
bool TensorsEqual(const Tensor& a, const Tensor& b);

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_TENSOR_H_
