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
// Slices: Slice/Split/SplitSizes cut along the first dimension without copying: the
// parts are views into the same buffer at a byte offset (raw_data() of a part that
// does not start at row 0 is then not kTensorAlignment-aligned). A view keeps the
// whole buffer alive and counts as a sharer for RefCountIsOne().
//
// Printing: DebugString() is the short "float32[2,3]" that error messages use to name
// a tensor; DebugStringWithValues() and operator<< add the values,
// "Tensor<type: float32 shape: [2,2] values: [[1 2][3 4]]>".
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
#include <ostream>
#include <string>
#include <vector>

#include "graph/shape.h"
#include "graph/status.h"
#include "graph/types.h"

namespace actorflow {

// Buffers are aligned for AVX-512 loads and cache lines.
inline constexpr size_t kTensorAlignment = 64;

// How many values DebugStringWithValues() and operator<< print before "...".
inline constexpr int64_t kDefaultPrintedValues = 10;

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
  // Allocates a zero-filled host buffer. Precondition: shape.IsFullyDefined() and
  // its byte count fits in int64; a shape from outside is checked first with
  // CheckedByteSize (graph/checked_size.h).
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
    t.data_ = static_cast<char*>(t.buffer_->data());
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
  // A slice's address lies inside its buffer (see Slice).
  void* raw_data() const { return data_; }
  // kHost for a tensor without a buffer.
  MemoryKind memory_kind() const { return buffer_ ? buffer_->memory_kind() : MemoryKind::kHost; }
  bool IsOnDevice() const { return memory_kind() == MemoryKind::kDevice; }

  // Same buffer, new shape with the same number of elements. InvalidArgument when
  // the shape is not fully defined, its element count does not fit in int64, or it
  // differs from this tensor's.
  StatusOr<Tensor> Reshaped(const Shape& shape) const;

  // Rows [begin, end) of the first dimension: shape [end - begin, d1, d2, ...]. Never
  // copies, for host and device tensors alike: the result aliases those rows of this
  // tensor's buffer (SharesBufferWith() is true), so a write through one is seen
  // through the other, and it keeps the whole buffer alive. DeepCopy() the result for
  // an independent tensor. begin == end gives an empty tensor [0, d1, ...].
  // InvalidArgument naming the shape for a scalar or for bounds outside
  // 0 <= begin <= end <= dim(0); FailedPrecondition for a tensor without a buffer.
  StatusOr<Tensor> Slice(int64_t begin, int64_t end) const;
  // `parts` slices of dim(0) / parts rows each, in order, every one a view as Slice's.
  // InvalidArgument when parts < 1 or dim(0) is not a multiple of parts (the message
  // gives both), and as Slice.
  StatusOr<std::vector<Tensor>> Split(int64_t parts) const;
  // Slices of sizes[0], sizes[1], ... rows, in order, views as Slice's. InvalidArgument
  // when a size is negative or the sizes do not add up to dim(0), and as Slice.
  StatusOr<std::vector<Tensor>> SplitSizes(const std::vector<int64_t>& sizes) const;

  // The value of a tensor with exactly one element (a scalar, or any shape such as
  // [1] or [1,1]). A mismatch is a Status, not a crash, since the tensor usually
  // comes from a graph the caller did not write: InvalidArgument naming both dtypes
  // when T is not the tensor's dtype ("scalar<int32>() of a float32[] tensor") or
  // naming the shape when it does not hold one element; FailedPrecondition for a
  // tensor without a buffer or on a device.
  template <typename T>
  StatusOr<T> scalar() const {
    Status s = CheckScalar(DTypeOf<T>::value);
    if (!s.ok()) return s;
    return *data<T>();
  }
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
  // "float32[2,3]", "float32[2,3]@device" for a device tensor: dtype and shape only,
  // how error messages name a tensor.
  std::string DebugString() const;
  // The values, row-major and nested by dimension: "[[1 2][3 4]]" for [2,2], "7" for a
  // scalar, "[]" for an empty [0] tensor. After `max_values` values (< 0: no limit)
  // the rest is "..." ("[[1 2][3...]]" for max_values 3); an empty list counts as a
  // value ("[[][]...]" for [1000, 0] and max_values 2). Integers exactly, bool as
  // true/false, floats with 6 significant digits ("0.333333", "1e+10", "nan", "-inf").
  // "<uninitialized>" without a buffer, "<on device>" for a device tensor.
  std::string SummarizeValue(int64_t max_values = kDefaultPrintedValues) const;
  // "Tensor<type: float32 shape: [2,2] values: [[1 2][3 4]]>" (values as
  // SummarizeValue's).
  std::string DebugStringWithValues(int64_t max_values = kDefaultPrintedValues) const;

 private:
  // OK when this tensor holds one readable element of `requested` (see scalar()).
  Status CheckScalar(DType requested) const;

  DType dtype_ = DType::kFloat32;
  Shape shape_;
  int64_t num_elements_ = 0;
  std::shared_ptr<TensorBuffer> buffer_;
  // The first byte of this tensor in buffer_: buffer_->data() except for a slice.
  char* data_ = nullptr;
};

// Writes t.DebugStringWithValues(): what test frameworks print for a Tensor.
std::ostream& operator<<(std::ostream& os, const Tensor& t);

// True when dtype, shape and every element are equal (NaN equals NaN). False when
// either tensor is a device tensor (its elements cannot be compared on the host).
bool TensorsEqual(const Tensor& a, const Tensor& b);

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_TENSOR_H_
