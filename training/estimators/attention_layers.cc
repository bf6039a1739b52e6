// LayerNormalization, MultiHeadAttention and TransformerBlock of sequence_layers.h
// (split from sequence_layers.cc, which holds the embedding and recurrent layers).
#include <cmath>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "graph/math_ops.h"
#include "graph/ops.h"
#include "graph/shape_ops.h"
#include "training/estimators/sequence_layers.h"
#include "training/estimators/sequence_layers_internal.h"

namespace actorflow {
namespace layers {
namespace {

using sequence_internal::CheckSameInput;
using sequence_internal::Describe;
using sequence_internal::LayerVariable;

// A literal int32 shape for Reshape (-1 for the unknown batch), so inference keeps T
// and D known.
Tensor ShapeLiteral(std::vector<int32_t> dims) { return Tensor::FromVector(dims); }

// (T, D) of x float32 [B, T, D] with T and D known; InvalidArgument naming the layer.
StatusOr<std::pair<int64_t, int64_t>> SequenceDims(const std::string& layer, const Output& x) {
  const bool ok = x.valid() && x.dtype() == DType::kFloat32 && !x.shape().unknown_rank() &&
                  x.shape().rank() == 3 && x.shape().dim(1) >= 1 && x.shape().dim(2) >= 1;
  if (!ok) {
    return InvalidArgument(layer + ": input " + Describe(x) +
                           ", expected float32 [B, T, D] with T and D known");
  }
  return std::make_pair(x.shape().dim(1), x.shape().dim(2));
}

Status CheckHeads(const std::string& layer, int64_t num_heads, int64_t width) {
  if (num_heads >= 1 && width % num_heads == 0) return Status::OK();
  return InvalidArgument(layer + ": num_heads " + std::to_string(num_heads) +
                         " does not divide the width " + std::to_string(width));
}

}  // namespace

StatusOr<Output> LayerNormalization::operator()(const Scope& scope, const Output& x) {
  const bool ok = x.valid() && x.dtype() == DType::kFloat32 && !x.shape().unknown_rank() &&
                  x.shape().rank() >= 1 && x.shape().dim(x.shape().rank() - 1) >= 1;
  if (!ok) {
    return InvalidArgument(name_ + ": input " + Describe(x) +
                           ", expected float32 [..., D] with D known");
  }
  if (!(options_.epsilon >= 0.0) || !std::isfinite(options_.epsilon)) {
    return InvalidArgument(name_ + ": epsilon must be finite and >= 0");
  }
  const int64_t features = x.shape().dim(x.shape().rank() - 1);
  if (built()) AF_RETURN_IF_ERROR(CheckSameInput(name_, features_, features));
  const Scope call = CallScope(scope);
  if (!built()) {
    features_ = features;
    AF_RETURN_IF_ERROR(
        LayerVariable(call, "gamma", Shape{features}, 0.0, 0, &variables_, 1.0f).status());
    AF_RETURN_IF_ERROR(LayerVariable(call, "beta", Shape{features}, 0.0, 0, &variables_).status());
  }
  Output y =
      LayerNorm(call.WithOpName("LayerNorm"), x, variables_[0], variables_[1], options_.epsilon).y;
  if (!call.ok()) return call.status();
  return y;
}

StatusOr<Output> MultiHeadAttention::operator()(const Scope& scope, const Output& x) {
  AF_ASSIGN_OR_RETURN(const auto dims, SequenceDims(name_, x));
  const auto [steps, width] = dims;
  AF_RETURN_IF_ERROR(CheckHeads(name_, options_.num_heads, width));
  if (built()) AF_RETURN_IF_ERROR(CheckSameInput(name_, width_, width));
  const Scope call = CallScope(scope);
  const char* const kProjections[] = {"query", "key", "value", "output"};
  if (!built()) {
    width_ = width;
    // Glorot's stddev for a [D, D] kernel; each projection its own seed.
    const double stddev = std::sqrt(1.0 / static_cast<double>(width));
    for (int k = 0; k < 4; ++k) {
      const Scope p = call.NewSubScope(kProjections[k]);
      AF_RETURN_IF_ERROR(
          LayerVariable(p, "kernel", Shape{width, width}, stddev, options_.seed + k, &variables_)
              .status());
      AF_RETURN_IF_ERROR(LayerVariable(p, "bias", Shape{width}, 0.0, 0, &variables_).status());
    }
  }
  const int64_t heads = options_.num_heads;
  const int64_t head_width = width / heads;
  const int32_t t32 = static_cast<int32_t>(steps), d32 = static_cast<int32_t>(width);
  const Output rows = Reshape(call, x, ShapeLiteral({-1, d32}));  // [B*T, D]
  // [B*T, D] -> [B, heads, T, dh] for projection k.
  auto project = [&](int k) {
    const Scope p = call.NewSubScope(kProjections[k]);
    Output y = BiasAdd(p, MatMul(p, rows, variables_[2 * k]), variables_[2 * k + 1]);
    y = Reshape(
        p, y,
        ShapeLiteral({-1, t32, static_cast<int32_t>(heads), static_cast<int32_t>(head_width)}));
    return Transpose(p, y, {0, 2, 1, 3});
  };
  const Output q = project(0), k = project(1), v = project(2);
  const Scope a = call.NewSubScope("attention");
  Output scores = Mul(a, BatchMatMul(a, q, k, /*adj_x=*/false, /*adj_y=*/true),
                      static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_width))));
  if (options_.causal) scores = Add(a, scores, CausalMask(a, steps));  // [T, T] broadcasts
  Output context = BatchMatMul(a, Softmax(a, scores), v);              // [B, heads, T, dh]
  context = Reshape(a, Transpose(a, context, {0, 2, 1, 3}), ShapeLiteral({-1, d32}));
  const Scope o = call.NewSubScope("output");
  Output y = BiasAdd(o, MatMul(o, context, variables_[6]), variables_[7]);
  y = Reshape(o, y, ShapeLiteral({-1, t32, d32}));
  if (!call.ok()) return call.status();
  return y;
}

StatusOr<Output> TransformerBlock::operator()(const Scope& scope, const Output& x) {
  AF_ASSIGN_OR_RETURN(const auto dims, SequenceDims(name_, x));
  const auto [steps, width] = dims;
  // Checked here too, so that the errors name the block rather than a sub-layer.
  AF_RETURN_IF_ERROR(CheckHeads(name_, options_.num_heads, width));
  if (options_.mlp_units < 0) {
    return InvalidArgument(name_ + ": mlp_units must be >= 0 (0: 4 * D), got " +
                           std::to_string(options_.mlp_units));
  }
  // norm_1's gamma [D] is the first variable: the width the block was built for.
  if (built()) AF_RETURN_IF_ERROR(CheckSameInput(name_, variables_[0].shape().dim(0), width));
  const Scope call = CallScope(scope);
  if (!built()) {
    const int64_t seed = options_.seed;
    norm_1_.emplace("norm_1");
    attention_.emplace("attention",
                       MultiHeadAttentionOptions{options_.num_heads, options_.causal, seed});
    norm_2_.emplace("norm_2");
    mlp_hidden_.emplace("mlp_hidden",
                        DenseOptions{options_.mlp_units > 0 ? options_.mlp_units : 4 * width,
                                     Activation::kNone, seed + 4});
    mlp_output_.emplace("mlp_output", DenseOptions{width, Activation::kNone, seed + 5});
  }
  const int32_t t32 = static_cast<int32_t>(steps), d32 = static_cast<int32_t>(width);
  AF_ASSIGN_OR_RETURN(Output normed_1, (*norm_1_)(call, x));
  AF_ASSIGN_OR_RETURN(Output attended, (*attention_)(call, normed_1));
  const Output h = Add(call.WithOpName("attention_residual"), x, attended);
  AF_ASSIGN_OR_RETURN(Output normed_2, (*norm_2_)(call, h));
  // Dense takes [N, F]: the MLP runs on the B*T positions as rows.
  const Output rows = Reshape(call, normed_2, ShapeLiteral({-1, d32}));
  AF_ASSIGN_OR_RETURN(Output hidden, (*mlp_hidden_)(call, rows));
  hidden = Gelu(call.NewSubScope("mlp_hidden_gelu"), hidden);
  AF_ASSIGN_OR_RETURN(Output mlp, (*mlp_output_)(call, hidden));
  Output y =
      Add(call.WithOpName("mlp_residual"), h, Reshape(call, mlp, ShapeLiteral({-1, t32, d32})));
  if (!call.ok()) return call.status();
  if (!built()) {
    for (const Layer* layer : std::initializer_list<const Layer*>{
             &*norm_1_, &*attention_, &*norm_2_, &*mlp_hidden_, &*mlp_output_}) {
      variables_.insert(variables_.end(), layer->variables().begin(), layer->variables().end());
    }
  }
  return y;
}

}  // namespace layers
}  // namespace actorflow
