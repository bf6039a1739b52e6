// SmallVector: a vector of trivially copyable values kept inline up to N of them, on
// the heap beyond. For a kernel's per-call bookkeeping (dimensions and strides of the
// ranks kernels meet, a few accumulators), which otherwise allocated on every step:
// a small model's step runs dozens of kernels, and their allocations were a visible
// share of it.
//
// Invariant: the heap vector is empty while the values fit inline; once they have
// not, it holds all of them (size_ == heap_.size()).
#ifndef ACTORFLOW_KERNELS_CPU_SMALL_VECTOR_H_
#define ACTORFLOW_KERNELS_CPU_SMALL_VECTOR_H_

#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <vector>

namespace actorflow {
namespace cpu {

template <typename T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable<T>::value, "inline values are copied bytewise");

 public:
  SmallVector() = default;
  SmallVector(size_t n, T value) { assign(n, value); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return heap_.empty() ? inline_ : heap_.data(); }
  const T* data() const { return heap_.empty() ? inline_ : heap_.data(); }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }

  void push_back(T value) {
    if (heap_.empty() && size_ < N) {
      inline_[size_++] = value;
      return;
    }
    if (heap_.empty()) heap_.assign(inline_, inline_ + size_);
    heap_.push_back(value);
    ++size_;
  }

  // n copies of value, replacing the contents.
  void assign(size_t n, T value) {
    if (heap_.empty() && n <= N) {
      std::fill(inline_, inline_ + n, value);
    } else {
      heap_.assign(n, value);
    }
    size_ = n;
  }

 private:
  T inline_[N] = {};
  size_t size_ = 0;
  std::vector<T> heap_;
};

}  // namespace cpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CPU_SMALL_VECTOR_H_
