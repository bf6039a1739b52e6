// CPU kernels of RandomUniform, RandomNormal and TruncatedNormal. Each kernel
// instance owns a RandomStream seeded with the `seed` attr, and every Compute draws
// the next values of that stream: a graph with a fixed seed gives the same sequence of
// tensors run after run. Compute may run concurrently for different steps, so the
// stream is guarded by a mutex and each Compute draws one contiguous stretch of it.
#include <cmath>
#include <cstdint>
#include <mutex>
#include <string>
#include <type_traits>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/random.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

// Shared by the random kernels: the stream, its lock and the output shape attr.
template <typename T>
class RandomKernelBase : public Kernel {
 public:
  explicit RandomKernelBase(const Node& node)
      : Kernel(node),
        shape_(node.attr<Shape>("shape")),
        stream_(static_cast<uint64_t>(node.attr<int64_t>("seed"))) {}

  void Compute(KernelContext* ctx) override {
    if (!shape_.IsFullyDefined()) {
      ctx->Fail(Code::kInvalidArgument,
                "needs a fully defined shape attr, got " + shape_.ToString());
      return;
    }
    Tensor& out = ctx->allocate_output(0, shape_);
    std::lock_guard<std::mutex> lock(mu_);
    Generate(stream_, out.data<T>(), out.NumElements());
  }

 protected:
  // Called with the stream locked; fills out [n].
  virtual void Generate(RandomStream& stream, T* out, int64_t n) = 0;

 private:
  const Shape shape_;
  std::mutex mu_;
  RandomStream stream_;  // guarded by mu_
};

// Output: dtype T, `shape`; uniform in [minval, maxval).
template <typename T>
class RandomUniformKernel : public RandomKernelBase<T> {
 public:
  explicit RandomUniformKernel(const Node& node)
      : RandomKernelBase<T>(node),
        minval_(static_cast<T>(node.attr<double>("minval"))),
        maxval_(static_cast<T>(node.attr<double>("maxval"))) {}

 protected:
  void Generate(RandomStream& stream, T* out, int64_t n) override {
    const T span = maxval_ - minval_;
    // The largest value below maxval: rounding of minval + span * u must not reach it.
    const T top = span > 0 ? std::nextafter(maxval_, minval_) : maxval_;
    for (int64_t i = 0; i < n; ++i) {
      T u;
      if constexpr (std::is_same_v<T, float>) {
        u = stream.UniformFloat();
      } else {
        u = stream.UniformDouble();
      }
      const T v = minval_ + span * u;
      out[i] = v > top ? top : v;
    }
  }

 private:
  const T minval_;
  const T maxval_;
};

// Output: dtype T, `shape`; normal with `mean` and `stddev`. kTruncated re-draws
// standard normal values beyond 2 (TruncatedNormal).
template <typename T, bool kTruncated>
class NormalKernel : public RandomKernelBase<T> {
 public:
  explicit NormalKernel(const Node& node)
      : RandomKernelBase<T>(node),
        mean_(node.attr<double>("mean")),
        stddev_(node.attr<double>("stddev")) {}

 protected:
  void Generate(RandomStream& stream, T* out, int64_t n) override {
    double pair[2];
    int available = 0;  // values of `pair` not used yet
    for (int64_t i = 0; i < n;) {
      if (available == 0) {
        stream.NormalPair(&pair[0], &pair[1]);
        available = 2;
      }
      const double z = pair[2 - available];
      --available;
      if (kTruncated && std::fabs(z) > 2.0) continue;
      out[i++] = static_cast<T>(mean_ + stddev_ * z);
    }
  }

 private:
  const double mean_;
  const double stddev_;
};

template <typename T> using RandomNormalKernel = NormalKernel<T, false>;
template <typename T> using TruncatedNormalKernel = NormalKernel<T, true>;

const CpuKernelRegistrations<RandomUniformKernel, float, double> reg_random_uniform(
    "RandomUniform");
const CpuKernelRegistrations<RandomNormalKernel, float, double> reg_random_normal(
    "RandomNormal");
const CpuKernelRegistrations<TruncatedNormalKernel, float, double> reg_truncated_normal(
    "TruncatedNormal");

}  // namespace
}  // namespace cpu
}  // namespace actorflow
