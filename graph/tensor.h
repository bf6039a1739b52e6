// Tensor: a dtype, a fully defined shape and an aligned, contiguous, row-major
// buffer. Copying a Tensor shares the buffer (reference semantics, like TensorFlow's
// tensors); DeepCopy() is the only way to duplicate the bytes.
//
// Memory kinds: a buffer is host memory unless a device runtime wrapped its own
// memory (kernels/cuda) with MemoryKind::kDevice. The bytes of a device buffer are
// not addressable from the host: only that device's kernels read or write them.
// Host code checks memory_kind() first; the host-side helpers below (DeepCopy,
// ElementAsDouble, TensorsEqual) never dereference device memory and fail safely on
// it instead (documented at each). Device tensors stay inside their device's
// executor: a device's runtime copies them to host memory before they leave it.
//
// Thread safety: a Tensor object is not synchronized; a buffer shared by several
// Tensors must be treated as immutable by all of them unless RefCountIsOne() holds
// (copy-on-write is how variables update in place; see kernels/resource.h).
#ifndef ACTORFLOW_GRAPH_TENSOR_H_
#define ACTORFLOW_GRAPH_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/shape.h"
#include "graph/status.h"
#include "graph/types.h"

namespace actorflow {

// Buffers are aligned for AVX-512 loads and cache lines.
inline constexpr size_t kTensorAlignment = 64;

// Where a buffer's bytes live. kDevice bytes must never be dereferenced on the host.
enum class MemoryKind { kHost, kDevice };

class TensorBuffer {
 public:
  explicit TensorBuffer(size_t bytes, bool zero_fill = true);  // host memory
  // Adopts `bytes` bytes at `data` that someone else allocated (device memory, pinned
  // host memory from a pool). `deleter(data)` runs exactly once, when the last Tensor
  // sharing the buffer lets go, on whatever thread that happens: it must be
  // thread-safe. Host memory must be aligned to kTensorAlignment.
  TensorBuffer(void* data, size_t bytes, std::function<void(void*)> deleter, MemoryKind kind);
  ~TensorBuffer();
  TensorBuffer(const TensorBuffer&) = delete;
  TensorBuffer& operator=(const TensorBuffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return bytes_; }
  MemoryKind memory_kind() const { return kind_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  std::function<void(void*)> deleter_;  // empty: data_ came from aligned_alloc
  MemoryKind kind_ = MemoryKind::kHost;
};

class Tensor {
 public:
  // An empty float32 scalar placeholder with no buffer (IsInitialized() is false).
  Tensor() = default;
  // Allocates a zero-filled host buffer. Precondition: shape.IsFullyDefined().
  Tensor(DType dtype, const Shape& shape);
  // Wraps an existing buffer (device memory, pinned host memory). Preconditions:
  // shape.IsFullyDefined() and buffer->size() >= the tensor's TotalBytes().
  Tensor(DType dtype, const Shape& shape, std::shared_ptr<TensorBuffer> buffer);

  // Host memory whose contents are unspecified: for a producer that overwrites
  // every byte at once (a tensor read off the network).
  static Tensor Uninitialized(DType dtype, const Shape& shape) {
    Tensor t;
    t.dtype_ = dtype;
    t.shape_ = shape;
    t.num_elements_ = shape.num_elements();
    t.buffer_ = std::make_shared<TensorBuffer>(t.TotalBytes(), /*zero_fill=*/false);
    return t;
  }

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
  // For a device tensor this is a device address: pass it to that device's kernels,
  // never dereference it on the host.
  void* raw_data() const { return buffer_ ? buffer_->data() : nullptr; }
  // kHost for a tensor without a buffer.
  MemoryKind memory_kind() const { return buffer_ ? buffer_->memory_kind() : MemoryKind::kHost; }
  bool IsOnDevice() const { return memory_kind() == MemoryKind::kDevice; }

  // Same buffer, new shape with the same number of elements.
  StatusOr<Tensor> Reshaped(const Shape& shape) const;
  // A new host buffer with the same contents. A device tensor cannot be copied on the
  // host: the result is then an uninitialized Tensor (the device's runtime copies).
  Tensor DeepCopy() const;
  // True when this Tensor is the only owner of its buffer (safe to mutate in place).
  bool RefCountIsOne() const { return buffer_ && buffer_.use_count() == 1; }
  // True when both share one buffer.
  bool SharesBufferWith(const Tensor& other) const { return buffer_ == other.buffer_; }

  // Element i as a double (bool as 0/1); for tests and printing. NaN for a device
  // tensor (its bytes are not readable here).
  double ElementAsDouble(int64_t i) const;
  // "float32[2,3]", "float32[2,3]@device" for a device tensor.
  std::string DebugString() const;

 private:
  DType dtype_ = DType::kFloat32;
  Shape shape_;
  int64_t num_elements_ = 0;
  std::shared_ptr<TensorBuffer> buffer_;
};

// True when dtype, shape and every element are equal (NaN equals NaN). False when
// either tensor is a device tensor (its elements cannot be compared on the host).
bool TensorsEqual(const Tensor& a, const Tensor& b);

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_TENSOR_H_
