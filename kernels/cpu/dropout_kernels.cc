// The CPU kernel of Dropout (float32 and float64). Each kernel instance counts its
// runs: run d draws its mask from the counter-based stream (seed, d) of
// kernels/random_bits.h, so a graph with a fixed seed gives the same sequence of masks
// run after run, and the GPU kernel gives the same masks as this one. Concurrent runs
// (different steps) each take their own d from an atomic counter: no lock, and each
// element's bits depend only on (seed, d, index).
#include <atomic>
#include <cstdint>

#include "kernels/cpu/kernel_util.h"
#include "kernels/kernel.h"
#include "kernels/random_bits.h"

namespace actorflow {
namespace cpu {
namespace {

// Input: x. Outputs: output = x * mask, mask (x's shape): 1 / keep_prob where kept,
// else 0.
template <typename T>
class DropoutKernel : public Kernel {
 public:
  explicit DropoutKernel(const Node& node)
      : Kernel(node),
        keep_prob_(node.attr<double>("keep_prob")),
        seed_(static_cast<uint64_t>(node.attr<int64_t>("seed"))) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const uint64_t key = StreamKey(seed_, draws_.fetch_add(1, std::memory_order_relaxed));
    const int64_t n = x.NumElements();
    T* __restrict out = ctx->allocate_output_for_overwrite(0, x.shape()).template data<T>();
    T* __restrict mask = ctx->allocate_output_for_overwrite(1, x.shape()).template data<T>();
    if (n == 0) return;
    const T* __restrict in = x.data<T>();
    const T scale = static_cast<T>(1.0 / keep_prob_);
    const uint64_t threshold = KeepThreshold(keep_prob_);
    for (int64_t i = 0; i < n; ++i) {
      // A product, not a select: the outcome is a coin flip, which a branch would
      // mispredict half of the time.
      const T m = static_cast<T>(DropoutKeeps(key, static_cast<uint64_t>(i), threshold)) * scale;
      mask[i] = m;
      out[i] = in[i] * m;
    }
  }

 private:
  const double keep_prob_;  // in (0, 1]: checked by shape inference
  const uint64_t seed_;
  std::atomic<uint64_t> draws_{0};
};

const CpuKernelRegistrations<DropoutKernel, float, double> reg_dropout("Dropout");

}  // namespace
}  // namespace cpu
}  // namespace actorflow
