// Test helpers for ParameterShardState's protocol tests: a shard holding one float32
// variable "w" = [a, b], a push of a gradient for it, and its current value.
#ifndef ACTORFLOW_KERNELS_PS_SHARD_STATE_TESTING_H_
#define ACTORFLOW_KERNELS_PS_SHARD_STATE_TESTING_H_

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "kernels/ps/parameter_shard_state.h"

namespace actorflow {
namespace shard_testing {

// A shard named "ps0" with `config`, initialized with "w" = initial (2 floats).
inline std::unique_ptr<ParameterShardState> ShardHoldingW(const ShardConfig& config,
                                                          std::vector<float> initial) {
  auto s = ParameterShardState::Create("ps0", config);
  EXPECT_TRUE(s.ok()) << s.status();
  ParameterShardState::Replies out;
  EXPECT_TRUE((*s)->Initialize({"w"}, {Tensor::FromVector<float>(initial)}, &out).ok());
  return std::move(s).value();
}

// Worker `worker`'s push of gradient `g` for "w", computed on version `base`.
inline ShardPushArgs Grad(int worker, int64_t base, std::vector<float> g) {
  ShardPushArgs p;
  p.worker = worker;
  p.base_version = base;
  p.names = {"w"};
  p.gradients = {Tensor::FromVector<float>(g)};
  return p;
}

// "w" as a pull sees it now.
inline std::vector<float> Value(ParameterShardState* s) {
  ParameterShardState::Replies out;
  s->Pull(999, 0, ParameterShardState::kNoDeadline, &out);
  EXPECT_EQ(out.pulls.size(), 1u);
  if (out.pulls.empty()) return {};
  const Tensor& t = out.pulls[0].values[0];
  return {t.data<float>()[0], t.data<float>()[1]};
}

}  // namespace shard_testing
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_PS_SHARD_STATE_TESTING_H_
