// The backward rules of the ops in graph/ops_nn_norm.cc (FusedBatchNorm and Dropout),
// listed in graph/gradient_rules.cc's table. Notation as there: g is the incoming
// gradient of an output, dx the gradient of input x; C is the channel count and M the
// number of elements each channel's statistics are taken over (N*H*W).
#include <cstdint>
#include <vector>

#include "graph/gradient_rules_internal.h"
#include "graph/ops.h"

namespace actorflow {
namespace gradient_rules_internal {
namespace {

using Grads = std::vector<Output>;

// M as a scalar of `dtype`: a Const when x's shape is known at build time, else
// Size(x) / Size(per_channel) at run time (per_channel is [C]).
Output RowCount(const Scope& s, const Output& x, const Output& per_channel, DType dtype) {
  const Shape& shape = x.shape();
  if (shape.IsFullyDefined() && shape.rank() > 0) {
    const int64_t c = shape.dim(shape.rank() - 1);
    return Scalar(s, c > 0 ? static_cast<double>(shape.num_elements() / c) : 0.0, dtype);
  }
  return Div(s, Cast(s, Size(s, x, DType::kInt64), dtype),
             Cast(s, Size(s, per_channel, DType::kInt64), dtype));
}

// Training mode, gradients arriving at the batch statistics:
//   batch_mean = sum(x) / M                  -> dx += g_mean / M
//   batch_variance = sum((x - batch_mean)^2) / max(M - 1, 1)
//                                            -> dx += g_var * 2 (x - batch_mean) / max(M - 1, 1)
// (the term through batch_mean vanishes: the deviations sum to zero). `total` is the
// gradient of x so far, or invalid; returns the sum, shaped like x.
Output AddStatisticsGradients(const Scope& s, const Node& op, const Grads& dy, Output total) {
  const Output x = In(op, 0);
  const Output batch_mean = Out(op, 1);
  const DType t = x.dtype();
  const Output m = RowCount(s, x, batch_mean, t);
  auto add = [&s, &total](const Output& v) { total = total.valid() ? Add(s, total, v) : v; };
  if (dy[2].valid()) {
    const Output one = Scalar(s, 1.0, t);
    const Output denominator = Maximum(s, Sub(s, m, one), one);
    const Output per_channel = Div(s, Mul(s, dy[2], Scalar(s, 2.0, t)), denominator);  // [C]
    add(Mul(s, Sub(s, x, batch_mean), per_channel));
  }
  if (dy[1].valid()) {
    if (!total.valid()) total = ZerosLike(s, x);  // so that the [C] term broadcasts to x
    add(Div(s, dy[1], m));
  }
  return total;
}

}  // namespace

// y = scale * (x - mean) * r + offset with r = 1 / sqrt(variance + epsilon).
// Training: mean and variance are the batch's, functions of x: FusedBatchNormGrad
// gives the full gradient of x through them, plus dscale = sum(g * x_hat) and
// doffset = sum(g); the mean and variance inputs are not read and get none.
// Inference: the statistics are inputs, so FusedBatchNormGrad gives dx = g * scale * r
// and, per channel,
//   dmean = -scale * r * sum(g) = -scale * r * doffset,
//   dvariance = -scale * r^3 / 2 * sum(g * (x - mean))
//             = -scale * dscale / (2 (variance + epsilon));
// the batch_mean and batch_variance outputs are the inputs passed through.
// FusedBatchNormGrad has no rule of its own: second derivatives are not supported.
Status FusedBatchNormGradRule(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output x = In(op, 0), scale = In(op, 1), mean = In(op, 3), variance = In(op, 4);
  const double epsilon = op.attr<double>("epsilon");
  const bool training = op.attr<bool>("is_training");
  const DType t = x.dtype();
  FusedBatchNormGradResult g;
  if (dy[0].valid()) {
    g = training ? FusedBatchNormGrad(s, dy[0], x, scale, Out(op, 1), Out(op, 2), epsilon, true)
                 : FusedBatchNormGrad(s, dy[0], x, scale, mean, variance, epsilon, false);
    (*dx)[0] = g.x_backprop;
    (*dx)[1] = g.scale_backprop;
    (*dx)[2] = g.offset_backprop;
  }
  if (training) {
    if (dy[1].valid() || dy[2].valid()) (*dx)[0] = AddStatisticsGradients(s, op, dy, (*dx)[0]);
    return Status::OK();
  }
  Output dmean = dy[1], dvariance = dy[2];
  if (dy[0].valid()) {
    const Output shifted = Add(s, variance, Scalar(s, epsilon, t));  // variance + epsilon
    const Output r = Div(s, Scalar(s, 1.0, t), Sqrt(s, shifted));
    const Output through_mean = Neg(s, Mul(s, Mul(s, scale, r), g.offset_backprop));
    const Output through_variance =
        Div(s, Mul(s, scale, g.scale_backprop), Mul(s, shifted, Scalar(s, -2.0, t)));
    dmean = dmean.valid() ? Add(s, dmean, through_mean) : through_mean;
    dvariance = dvariance.valid() ? Add(s, dvariance, through_variance) : through_variance;
  }
  (*dx)[3] = dmean;
  (*dx)[4] = dvariance;
  return Status::OK();
}

// output = x * mask: dx = g * mask, the mask this run drew. The mask does not depend
// on x, so a gradient arriving at it goes nowhere.
Status DropoutGradRule(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  if (dy[0].valid()) (*dx)[0] = Mul(s, dy[0], Out(op, 1));
  return Status::OK();
}

}  // namespace gradient_rules_internal
}  // namespace actorflow
