// CPU kernel of LogUniformCandidateSampler (graph/sampled_ops.h): TensorFlow 1.x's
// log-uniform (Zipfian) sampler of word2vec's negative classes. Class k of
// [0, range_max) has probability P(k) = (log(k + 2) - log(k + 1)) / log(range_max + 1),
// drawn as floor(exp(u * log(range_max + 1))) - 1 for u uniform in [0, 1). With
// `unique` the draws repeat until num_sampled distinct classes are found, and a
// class's expected count is the probability that it appears in that many tries,
// 1 - (1 - P(k))^tries; otherwise it is num_sampled * P(k). Each kernel instance
// owns a stream seeded with `seed`: a graph gives the same candidates run after run.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/random.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

// Input: true_classes int64 [batch, num_true]. Outputs: sampled int64 [num_sampled],
// true_expected_count float32 [batch, num_true], sampled_expected_count float32
// [num_sampled].
template <typename T>
class LogUniformCandidateSamplerKernel : public Kernel {
 public:
  explicit LogUniformCandidateSamplerKernel(const Node& node)
      : Kernel(node),
        num_sampled_(node.attr<int64_t>("num_sampled")),
        range_max_(node.attr<int64_t>("range_max")),
        unique_(node.attr<bool>("unique")),
        log_range_(std::log1p(static_cast<double>(node.attr<int64_t>("range_max")))),
        stream_(static_cast<uint64_t>(node.attr<int64_t>("seed"))) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& true_classes = ctx->input(0);
    std::vector<int64_t> sampled;
    int64_t tries = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::unordered_set<int64_t> seen;
      while (static_cast<int64_t>(sampled.size()) < num_sampled_) {
        const int64_t k = Draw();
        ++tries;
        if (unique_ && !seen.insert(k).second) continue;
        sampled.push_back(k);
      }
    }
    Tensor& out = ctx->allocate_output_for_overwrite(0, Shape{num_sampled_});
    Tensor& sampled_expected = ctx->allocate_output_for_overwrite(2, Shape{num_sampled_});
    for (int64_t i = 0; i < num_sampled_; ++i) {
      out.data<int64_t>()[i] = sampled[i];
      sampled_expected.data<float>()[i] = ExpectedCount(sampled[i], tries);
    }
    Tensor& true_expected = ctx->allocate_output_for_overwrite(1, true_classes.shape());
    for (int64_t i = 0; i < true_classes.NumElements(); ++i) {
      const int64_t k = true_classes.data<int64_t>()[i];
      if (k < 0 || k >= range_max_) {
        return ctx->Fail(Code::kInvalidArgument, "true_classes[" + std::to_string(i) + "] = " +
                                                     std::to_string(k) + " is not in [0, " +
                                                     std::to_string(range_max_) + ")");
      }
      true_expected.data<float>()[i] = ExpectedCount(k, tries);
    }
  }

 private:
  // Called with mu_ held.
  int64_t Draw() {
    const double u = stream_.UniformDouble();
    const int64_t k = static_cast<int64_t>(std::exp(u * log_range_)) - 1;
    return std::min(std::max<int64_t>(k, 0), range_max_ - 1);
  }
  double Probability(int64_t k) const {
    return (std::log(k + 2.0) - std::log(k + 1.0)) / log_range_;
  }
  float ExpectedCount(int64_t k, int64_t tries) const {
    const double p = Probability(k);
    if (!unique_) return static_cast<float>(p * static_cast<double>(num_sampled_));
    return static_cast<float>(-std::expm1(static_cast<double>(tries) * std::log1p(-p)));
  }

  const int64_t num_sampled_;
  const int64_t range_max_;
  const bool unique_;
  const double log_range_;
  std::mutex mu_;
  RandomStream stream_;  // guarded by mu_
};

const CpuKernelRegistrations<LogUniformCandidateSamplerKernel, int64_t> reg_sampler(
    "LogUniformCandidateSampler");

}  // namespace
}  // namespace cpu
}  // namespace actorflow
