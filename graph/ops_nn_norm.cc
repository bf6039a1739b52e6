// The ops a CNN needs beyond convolution and pooling, as TensorFlow 1.x defines them:
// FusedBatchNorm and FusedBatchNormGrad (batch normalization over the channel axis of
// NHWC images or [N,C] matrices) and Dropout, each with shape inference and a
// graph/ops.h builder; plus the builders made of existing ops: AssignMovingAverage,
// GlobalAvgPool (a Mean over H and W) and Flatten (a Reshape to [N, -1]).
//
// Why these shapes of op:
// - Batch normalization is one op with an is_training attr, as TF's FusedBatchNorm:
//   training normalizes with the batch's statistics and also returns them, so that the
//   moving averages are updated by ordinary graph ops (AssignMovingAverage) that a
//   train op depends on; inference normalizes with the given (moving) statistics.
//   Its backward pass is one op too (FusedBatchNormGrad): the training gradient needs
//   two per-channel sums over the whole batch (of dy and of dy * x_hat) before any
//   element of dx can be written, which a fused kernel does in two passes over memory
//   where a composition of element-wise ops and reductions would take a dozen.
// - Dropout is one op returning (output, mask), not TF1's RandomUniform + Floor + Mul:
//   RandomUniform here takes a static shape attr, so it could not follow a batch size
//   known only at run time, and one kernel reads x once and writes both outputs. The
//   mask holds 1 / keep_prob where an element is kept and 0 where it is dropped, so
//   output = x * mask and the gradient is dy * mask: the same mask, by construction.
//
// Kernels: kernels/cpu/batch_norm_kernels.cc, kernels/cpu/dropout_kernels.cc,
// kernels/cuda/norm_kernels.cc; reference: kernels/reference/reference_norm.cc;
// backward rules: graph/gradient_rules_norm.cc.
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "graph/op_registry.h"
#include "graph/op_set_internal.h"
#include "graph/ops.h"
#include "graph/shape_inference.h"

namespace actorflow {
namespace op_set_internal {
namespace {

std::string Number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// x [N,C] or [N,H,W,C]: the layouts batch normalization is defined for.
Status CheckBatchNormRank(const std::string& what, const Shape& x) {
  if (x.unknown_rank() || x.rank() == 2 || x.rank() == 4) return Status::OK();
  return InvalidArgument(what + " has shape " + x.ToString() +
                         ", expected [N,C] or [N,H,W,C] (rank 2 or 4)");
}

// The channel count C and where it was learnt ("x [2,4,4,3]"), refined by each
// per-channel input in turn.
struct Channels {
  int64_t count = -1;
  std::string source;
};

Channels ChannelsOf(const std::string& what, const Shape& x) {
  if (x.unknown_rank() || x.dim(x.rank() - 1) < 0) return Channels{};
  return Channels{x.dim(x.rank() - 1), what + " " + x.ToString()};
}

// Input i (`what`) must be [C]; or [0] too when `may_be_empty` (the statistics that
// training mode does not read).
Status MergeChannels(const InferenceContext& ctx, int i, const std::string& what,
                     bool may_be_empty, Channels* c) {
  const Shape& shape = ctx.input_shape(i);
  AF_RETURN_IF_ERROR(CheckRank(what, shape, 1, 1));
  if (shape.unknown_rank() || shape.dim(0) < 0) return Status::OK();
  const int64_t n = shape.dim(0);
  if (may_be_empty && n == 0) return Status::OK();
  if (c->count >= 0 && n != c->count) {
    return InvalidArgument(what + " " + shape.ToString() + " does not match the " +
                           std::to_string(c->count) + " channels of " + c->source +
                           (may_be_empty ? " (in training mode it may also be empty)" : ""));
  }
  if (c->count < 0) *c = Channels{n, what + " " + shape.ToString()};
  return Status::OK();
}

// x's shape with its last dim set to C when only the per-channel inputs knew it.
Shape WithChannels(Shape x, const Channels& c) {
  if (!x.unknown_rank() && c.count >= 0) x.set_dim(x.rank() - 1, c.count);
  return x;
}

// FusedBatchNorm(x [...,C], scale [C], offset [C], mean [C], variance [C]) ->
// y [...,C], batch_mean [C], batch_variance [C]. In training mode mean and variance
// are not read and may be [0].
Status InferFusedBatchNorm(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckSameDTypes(ctx));
  AF_RETURN_IF_ERROR(CheckInput(ctx, 0, Allowed::kFloating));
  AF_RETURN_IF_ERROR(CheckEpsilon(ctx));
  const Shape& x = ctx.input_shape(0);
  AF_RETURN_IF_ERROR(CheckBatchNormRank("x", x));
  const bool training = ctx.attr<bool>("is_training");
  Channels c = ChannelsOf("x", x);
  AF_RETURN_IF_ERROR(MergeChannels(ctx, 1, "scale", false, &c));
  AF_RETURN_IF_ERROR(MergeChannels(ctx, 2, "offset", false, &c));
  AF_RETURN_IF_ERROR(MergeChannels(ctx, 3, "mean", training, &c));
  AF_RETURN_IF_ERROR(MergeChannels(ctx, 4, "variance", training, &c));
  const DType dtype = ctx.input_dtype(0);
  ctx.set_output(0, dtype, WithChannels(x, c));
  ctx.set_output(1, dtype, Shape{c.count});
  ctx.set_output(2, dtype, Shape{c.count});
  return Status::OK();
}

// FusedBatchNormGrad(y_backprop [...,C], x [...,C], scale [C], mean [C], variance [C])
// -> x_backprop [...,C], scale_backprop [C], offset_backprop [C].
Status InferFusedBatchNormGrad(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckSameDTypes(ctx));
  AF_RETURN_IF_ERROR(CheckInput(ctx, 0, Allowed::kFloating));
  AF_RETURN_IF_ERROR(CheckEpsilon(ctx));
  const Shape& dy = ctx.input_shape(0);
  const Shape& x = ctx.input_shape(1);
  AF_RETURN_IF_ERROR(CheckBatchNormRank("y_backprop", dy));
  AF_RETURN_IF_ERROR(CheckBatchNormRank("x", x));
  if (!dy.IsCompatibleWith(x)) {
    return InvalidArgument("y_backprop " + dy.ToString() + " and x " + x.ToString() +
                           " must have the same shape");
  }
  const Shape both = x.MergeWith(dy);
  Channels c = ChannelsOf("x", both);
  AF_RETURN_IF_ERROR(MergeChannels(ctx, 2, "scale", false, &c));
  AF_RETURN_IF_ERROR(MergeChannels(ctx, 3, "mean", false, &c));
  AF_RETURN_IF_ERROR(MergeChannels(ctx, 4, "variance", false, &c));
  const DType dtype = ctx.input_dtype(0);
  ctx.set_output(0, dtype, WithChannels(both, c));
  ctx.set_output(1, dtype, Shape{c.count});
  ctx.set_output(2, dtype, Shape{c.count});
  return Status::OK();
}

// Dropout(x) -> output, mask: both x's dtype and shape.
Status InferDropout(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckInput(ctx, 0, Allowed::kFloating));
  const double keep_prob = ctx.attr<double>("keep_prob");
  if (!(keep_prob > 0 && keep_prob <= 1)) {
    return InvalidArgument("attr 'keep_prob' must be in (0, 1], got " + Number(keep_prob) +
                           " (keep_prob = 1 - rate)");
  }
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  ctx.set_output(1, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

std::vector<OpDef> NormOpSet() {
  using T = AttrType;
  const std::vector<AttrDef> batch_norm_attrs = {Default("epsilon", T::kFloat, 0.001),
                                                 Default("is_training", T::kBool, true)};
  std::vector<OpDef> ops;
  ops.push_back(MakeOp("FusedBatchNorm", 5, 3, batch_norm_attrs, InferFusedBatchNorm));
  ops.push_back(MakeOp("FusedBatchNormGrad", 5, 3, batch_norm_attrs, InferFusedBatchNormGrad));
  // Stateful: each kernel draws a new mask per run (kernels/random_bits.h).
  ops.push_back(Stateful(MakeOp(
      "Dropout", 1, 2, {Required("keep_prob", T::kFloat), Default("seed", T::kInt, int64_t{0})},
      InferDropout)));
  return ops;
}

[[maybe_unused]] const bool kNormOpsRegistered = [] {
  for (OpDef& def : NormOpSet()) OpRegistration registration(std::move(def));
  return true;
}();

}  // namespace
}  // namespace op_set_internal

// --- Builders (graph/ops.h) -------------------------------------------------------

namespace {

AttrMap BatchNormAttrs(double epsilon, bool is_training) {
  return {{"epsilon", epsilon}, {"is_training", is_training}};
}

// A scalar Const of `dtype` (float32 or float64) in `scope`.
Output ScalarOf(const Scope& scope, double value, DType dtype) {
  return Const(scope, dtype == DType::kFloat32 ? Tensor::Scalar(static_cast<float>(value))
                                               : Tensor::Scalar(value));
}

}  // namespace

FusedBatchNormResult FusedBatchNorm(const Scope& scope, const Input& x, const Input& scale,
                                    const Input& offset, const Input& mean,
                                    const Input& variance, double epsilon, bool is_training) {
  const Node* node = scope.AddNode("FusedBatchNorm", {x, scale, offset, mean, variance},
                                   BatchNormAttrs(epsilon, is_training));
  if (node == nullptr) return {};
  return {Output(node, 0), Output(node, 1), Output(node, 2)};
}

FusedBatchNormGradResult FusedBatchNormGrad(const Scope& scope, const Input& y_backprop,
                                            const Input& x, const Input& scale,
                                            const Input& mean, const Input& variance,
                                            double epsilon, bool is_training) {
  const Node* node = scope.AddNode("FusedBatchNormGrad", {y_backprop, x, scale, mean, variance},
                                   BatchNormAttrs(epsilon, is_training));
  if (node == nullptr) return {};
  return {Output(node, 0), Output(node, 1), Output(node, 2)};
}

Output AssignMovingAverage(const Scope& scope, const Input& variable, const Input& value,
                           double momentum) {
  if (!scope.ok()) return Output();
  const Output var = scope.AsOutput(variable);
  if (!var.valid()) return AssignSub(scope, variable, value);  // records the error
  if (!(momentum >= 0 && momentum <= 1)) {
    scope.UpdateStatus(InvalidArgument("AssignMovingAverage of '" + var.name() +
                                       "': momentum must be in [0, 1], got " +
                                       op_set_internal::Number(momentum)));
    return Output();
  }
  // var -= (var - value) * (1 - momentum), TF's assign_moving_average: the same as
  // var = var * momentum + value * (1 - momentum), as one in-place update.
  const Scope inner = scope.NewSubScope("");
  const Output delta =
      Mul(inner, Sub(inner, var, value), ScalarOf(inner, 1.0 - momentum, var.dtype()));
  return AssignSub(scope, var, delta);
}

DropoutResult Dropout(const Scope& scope, const Input& x, double keep_prob, int64_t seed,
                      bool is_training) {
  if (is_training) {
    const Node* node =
        scope.AddNode("Dropout", {x}, {{"keep_prob", keep_prob}, {"seed", seed}});
    if (node == nullptr) return {};
    return {Output(node, 0), Output(node, 1)};
  }
  // Inference: the identity (the kept values were scaled up in training, so nothing is
  // scaled here). The mask of ones is pruned away unless something reads it.
  const Output output = Identity(scope, x);
  if (!output.valid()) return {};
  if (!(keep_prob > 0 && keep_prob <= 1)) {
    scope.UpdateStatus(InvalidArgument(output.node->Describe() +
                                       ": keep_prob must be in (0, 1], got " +
                                       op_set_internal::Number(keep_prob) +
                                       " (keep_prob = 1 - rate)"));
    return {};
  }
  return {output, OnesLike(scope.NewSubScope(""), output)};
}

Output GlobalAvgPool(const Scope& scope, const Input& x) {
  if (!scope.ok()) return Output();
  const Output in = scope.AsOutput(x);
  if (in.valid() && !in.shape().unknown_rank() && in.shape().rank() != 4) {
    scope.UpdateStatus(InvalidArgument("GlobalAvgPool of '" + in.name() + "': x has shape " +
                                       in.shape().ToString() + ", expected [N,H,W,C]"));
    return Output();
  }
  return Mean(scope, in.valid() ? Input(in) : x, {1, 2});
}

Output Flatten(const Scope& scope, const Input& x) {
  if (!scope.ok()) return Output();
  const Output in = scope.AsOutput(x);
  if (!in.valid()) return Reshape(scope, x, {-1});  // records the error
  const Shape& shape = in.shape();
  if (!shape.unknown_rank() && shape.rank() < 1) {
    return Reshape(scope, in, {1, 1});  // a scalar is one example of one feature
  }
  bool inner_known = !shape.unknown_rank();
  int64_t inner = 1;
  for (int i = 1; inner_known && i < shape.rank(); ++i) {
    inner_known = shape.dim(i) >= 0;
    if (inner_known) inner *= shape.dim(i);
  }
  if (inner_known) {
    return Reshape(scope, in, Tensor::FromVector(std::vector<int64_t>{-1, inner}));
  }
  // [N, -1] with N read at run time: an empty batch then cannot resolve the -1.
  const Scope inner_scope = scope.NewSubScope("");
  const Output batch = Slice(inner_scope, ShapeOf(inner_scope, in, DType::kInt64), {0}, {1});
  const Output dims = ConcatV2(
      inner_scope, {batch, Const(inner_scope, Tensor::FromVector(std::vector<int64_t>{-1}))}, 0);
  return Reshape(scope, in, dims);
}

}  // namespace actorflow
