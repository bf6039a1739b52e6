#include "graph/tensor.h"

#include "graph/aligned_block_cache.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <sstream>
#include <type_traits>

namespace actorflow {

TensorBuffer::TensorBuffer(size_t bytes, bool zero_fill) : bytes_(bytes) {
  data_ = AllocateAlignedBlock(kTensorAlignment, bytes);
  if (data_ == nullptr) throw std::bad_alloc();
  if (zero_fill) std::memset(data_, 0, bytes);
}

TensorBuffer::TensorBuffer(void* data, size_t bytes, std::function<void(void*)> deleter,
                           MemoryKind kind)
    : data_(data), bytes_(bytes), deleter_(std::move(deleter)), kind_(kind) {}

TensorBuffer::~TensorBuffer() {
  if (deleter_) {
    deleter_(data_);
  } else {
    FreeAlignedBlock(data_, kTensorAlignment, bytes_);
  }
}

Tensor::Tensor(DType dtype, const Shape& shape)
    : dtype_(dtype), shape_(shape), num_elements_(shape.num_elements()) {
  assert(shape.IsFullyDefined());
  buffer_ = std::make_shared<TensorBuffer>(TotalBytes());
  data_ = static_cast<char*>(buffer_->data());
}

Tensor::Tensor(DType dtype, const Shape& shape, std::shared_ptr<TensorBuffer> buffer)
    : dtype_(dtype), shape_(shape), num_elements_(shape.num_elements()), buffer_(std::move(buffer)) {
  assert(shape.IsFullyDefined());
  assert(buffer_ != nullptr && buffer_->size() >= TotalBytes());
  data_ = static_cast<char*>(buffer_->data());
}

StatusOr<Tensor> Tensor::Reshaped(const Shape& shape) const {
  // Checked: a shape whose element count wraps around to this tensor's would make a
  // view far larger than the buffer.
  StatusOr<int64_t> elements = shape.CheckedNumElements();
  if (!elements.ok()) {
    return elements.status().WithContext("cannot reshape a tensor of shape " +
                                         shape_.ToString());
  }
  if (*elements != num_elements_) {
    return InvalidArgument("cannot reshape a tensor of shape " + shape_.ToString() + " (" +
                           std::to_string(num_elements_) + " elements) to " + shape.ToString());
  }
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

StatusOr<Tensor> Tensor::Slice(int64_t begin, int64_t end) const {
  if (!IsInitialized()) return FailedPrecondition("Slice of a tensor without a buffer");
  if (rank() < 1) return InvalidArgument("Slice of " + DebugString() + ": a scalar has no rows");
  if (begin < 0 || begin > end || end > dim(0)) {
    return InvalidArgument("Slice [" + std::to_string(begin) + ", " + std::to_string(end) +
                           ") of " + DebugString() + ": rows must satisfy 0 <= begin <= end <= " +
                           std::to_string(dim(0)));
  }
  const int64_t row_elements = dim(0) == 0 ? 0 : num_elements_ / dim(0);
  Tensor part = *this;
  part.shape_.set_dim(0, end - begin);
  part.num_elements_ = (end - begin) * row_elements;
  part.data_ = data_ + static_cast<size_t>(begin * row_elements) * DTypeSize(dtype_);
  return part;
}

StatusOr<std::vector<Tensor>> Tensor::Split(int64_t parts) const {
  if (parts < 1) {
    return InvalidArgument("Split of " + DebugString() + " into " + std::to_string(parts) +
                           " parts: need at least 1");
  }
  if (rank() >= 1 && dim(0) % parts != 0) {
    return InvalidArgument("Split of " + DebugString() + " into " + std::to_string(parts) +
                           " equal parts: " + std::to_string(dim(0)) +
                           " rows is not a multiple of " + std::to_string(parts) +
                           " (SplitSizes takes uneven sizes)");
  }
  const int64_t rows = rank() >= 1 ? dim(0) / parts : 0;
  return SplitSizes(std::vector<int64_t>(static_cast<size_t>(parts), rows));
}

StatusOr<std::vector<Tensor>> Tensor::SplitSizes(const std::vector<int64_t>& sizes) const {
  if (IsInitialized() && rank() >= 1) {
    int64_t total = 0;
    for (int64_t size : sizes) {
      if (size < 0) {
        return InvalidArgument("SplitSizes of " + DebugString() + ": negative size " +
                               std::to_string(size));
      }
      total += size;
    }
    if (total != dim(0)) {
      return InvalidArgument("SplitSizes of " + DebugString() + ": the sizes add up to " +
                             std::to_string(total) + " rows, the tensor has " +
                             std::to_string(dim(0)));
    }
  }
  std::vector<Tensor> result;
  result.reserve(sizes.size());
  int64_t begin = 0;
  for (int64_t size : sizes) {
    AF_ASSIGN_OR_RETURN(Tensor part, Slice(begin, begin + size));
    result.push_back(std::move(part));
    begin += size;
  }
  if (sizes.empty()) AF_RETURN_IF_ERROR(Slice(0, 0).status());  // a scalar or no buffer
  return result;
}

Status Tensor::CheckScalar(DType requested) const {
  const std::string call = std::string("scalar<") + DTypeName(requested) + ">()";
  if (!IsInitialized()) return FailedPrecondition(call + " of a tensor without a buffer");
  if (IsOnDevice()) {
    return FailedPrecondition(call + " of " + DebugString() +
                              ": device memory is not readable on the host; copy it first");
  }
  if (requested != dtype_) {
    return InvalidArgument(call + " of a " + DebugString() + " tensor: use scalar<" +
                           DTypeName(dtype_) + ">()");
  }
  if (num_elements_ != 1) {
    return InvalidArgument(call + " of " + DebugString() + ": it has " +
                           std::to_string(num_elements_) + " elements, not 1");
  }
  return Status::OK();
}

Tensor Tensor::DeepCopy() const {
  if (!IsInitialized()) return *this;
  if (IsOnDevice()) return Tensor();
  Tensor t = Uninitialized(dtype_, shape_);  // every byte is copied below
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

namespace {

template <typename T>
void AppendValue(T value, std::string* out) {
  if constexpr (std::is_same_v<T, bool>) {
    *out += value ? "true" : "false";
  } else if constexpr (std::is_integral_v<T>) {
    *out += std::to_string(value);
  } else {
    std::ostringstream text;  // default precision: 6 significant digits, like %g
    text << value;
    *out += text.str();
  }
}

// Appends the values from `*next` on as nested lists following dims[axis...]; stops
// with "..." once `*budget` values were written (a negative budget never runs out).
// An empty list costs one value of the budget: an empty tensor of a huge shape
// ([2^40, 0] holds no values but 2^40 lists) then prints in bounded time and space.
template <typename T>
void AppendNested(const T* values, const std::vector<int64_t>& dims, size_t axis, int64_t* next,
                  int64_t* budget, std::string* out) {
  if (axis == dims.size()) {
    if (*budget == 0) return;
    AppendValue(values[*next], out);
    ++*next;
    if (*budget > 0) --*budget;
    return;
  }
  *out += "[";
  for (int64_t i = 0; i < dims[axis]; ++i) {
    if (*budget == 0) {
      *out += "...";
      break;
    }
    if (i > 0 && axis + 1 == dims.size()) *out += " ";
    AppendNested(values, dims, axis + 1, next, budget, out);
  }
  if (dims[axis] == 0 && *budget > 0) --*budget;
  *out += "]";
}

}  // namespace

std::string Tensor::SummarizeValue(int64_t max_values) const {
  if (!IsInitialized()) return "<uninitialized>";
  if (IsOnDevice()) return "<on device>";
  return VisitDType(dtype_, [&](auto zero) {
    using T = decltype(zero);
    std::string out;
    int64_t next = 0;
    int64_t budget = max_values;
    if (rank() == 0 && budget == 0) return std::string("...");
    AppendNested(data<T>(), shape_.dims(), 0, &next, &budget, &out);
    return out;
  });
}

std::string Tensor::DebugStringWithValues(int64_t max_values) const {
  return std::string("Tensor<type: ") + DTypeName(dtype_) + " shape: " + shape_.ToString() +
         " values: " + SummarizeValue(max_values) + ">";
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  return os << t.DebugStringWithValues();
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
