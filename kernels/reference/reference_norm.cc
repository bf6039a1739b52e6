// Reference FusedBatchNorm, FusedBatchNormGrad and Dropout, from their definitions in
// double (graph/ops.h has the contract):
//   y = scale * (x - mean) / sqrt(variance + epsilon) + offset, per channel c (the last
//   axis); in training mode mean and variance are the batch's (biased) statistics over
//   every element of channel c, and batch_variance is returned Bessel-corrected.
//   The training gradient is the textbook one through the batch statistics:
//     dx = scale / sigma * (dy - mean(dy) - x_hat * mean(dy * x_hat)), sigma^2 = var + eps.
//   Dropout keeps element i of the first draw of a kernel seeded with s when the top 53
//   bits of SplitMix64's (i + 1)-th output from the state derived from (s, draw 0),
//   read as a fraction, are below keep_prob (kernels/random_bits.h specifies the
//   stream; it is written out again here so that the oracle shares no code with the
//   kernels).
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/reference/reference_util.h"

namespace actorflow {
namespace reference {
namespace {

const std::vector<DType> kFloating = {DType::kFloat32, DType::kFloat64};

// The channel of every element of x, and the number of elements per channel.
struct Layout {
  int64_t channels = 0;
  int64_t per_channel = 0;
};

StatusOr<Layout> CheckLayout(const RefCall& call, const Tensor& x,
                             const std::vector<const Tensor*>& per_channel,
                             const std::vector<const Tensor*>& may_be_empty) {
  AF_RETURN_IF_ERROR(CheckDType(call, x, kFloating, "x"));
  if (x.rank() != 2 && x.rank() != 4) {
    return InvalidArgument(call.op + ": x must be [N,C] or [N,H,W,C], got " + x.DebugString());
  }
  Layout l;
  l.channels = x.dim(x.rank() - 1);
  l.per_channel = l.channels == 0 ? 0 : x.NumElements() / l.channels;
  auto check = [&](const Tensor* t, bool empty_ok) -> Status {
    if (t->dtype() != x.dtype()) return InvalidArgument(call.op + ": dtypes differ");
    if (t->rank() != 1 || (t->dim(0) != l.channels && !(empty_ok && t->dim(0) == 0))) {
      return InvalidArgument(call.op + ": " + t->DebugString() + " does not match the " +
                             std::to_string(l.channels) + " channels of x");
    }
    return Status::OK();
  };
  for (const Tensor* t : per_channel) AF_RETURN_IF_ERROR(check(t, false));
  for (const Tensor* t : may_be_empty) AF_RETURN_IF_ERROR(check(t, true));
  return l;
}

StatusOr<double> Epsilon(const RefCall& call) {
  AF_ASSIGN_OR_RETURN(double epsilon, GetAttr<double>(call, "epsilon"));
  if (!(epsilon >= 0) || !std::isfinite(epsilon)) {
    return InvalidArgument(call.op + ": epsilon must be finite and >= 0");
  }
  return epsilon;
}

int64_t ChannelOf(const Tensor& x, int64_t flat) { return flat % x.dim(x.rank() - 1); }

// The mean and biased variance of each channel of x (NaN for an empty batch).
void BatchStatistics(const Tensor& x, const Layout& l, std::vector<double>* mean,
                     std::vector<double>* variance) {
  mean->assign(l.channels, 0.0);
  variance->assign(l.channels, 0.0);
  for (int64_t i = 0; i < x.NumElements(); ++i) (*mean)[ChannelOf(x, i)] += GetDouble(x, i);
  for (double& m : *mean) m /= static_cast<double>(l.per_channel);
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    const double d = GetDouble(x, i) - (*mean)[ChannelOf(x, i)];
    (*variance)[ChannelOf(x, i)] += d * d;
  }
  for (double& v : *variance) v /= static_cast<double>(l.per_channel);
}

Tensor ChannelTensor(DType dtype, const std::vector<double>& values) {
  Tensor t(dtype, Shape{static_cast<int64_t>(values.size())});
  for (size_t c = 0; c < values.size(); ++c) SetDouble(&t, c, values[c]);
  return t;
}

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v(t.NumElements());
  for (int64_t i = 0; i < t.NumElements(); ++i) v[i] = GetDouble(t, i);
  return v;
}

// x, scale, offset, mean, variance -> y, batch_mean, batch_variance.
StatusOr<std::vector<Tensor>> FusedBatchNorm(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 5));
  const Tensor& x = call.inputs[0];
  AF_ASSIGN_OR_RETURN(double epsilon, Epsilon(call));
  AF_ASSIGN_OR_RETURN(bool training, GetAttr<bool>(call, "is_training"));
  const std::vector<const Tensor*> stats = {&call.inputs[3], &call.inputs[4]};
  AF_ASSIGN_OR_RETURN(Layout l, CheckLayout(call, x, {&call.inputs[1], &call.inputs[2]},
                                            training ? stats : std::vector<const Tensor*>{}));
  if (!training) AF_RETURN_IF_ERROR(CheckLayout(call, x, stats, {}).status());
  std::vector<double> mean, variance;
  if (training) {
    BatchStatistics(x, l, &mean, &variance);
  } else {
    mean = Values(call.inputs[3]);
    variance = Values(call.inputs[4]);
  }
  const std::vector<double> scale = Values(call.inputs[1]), offset = Values(call.inputs[2]);
  Tensor y(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    const int64_t c = ChannelOf(x, i);
    SetDouble(&y, i, scale[c] * (GetDouble(x, i) - mean[c]) / std::sqrt(variance[c] + epsilon) +
                         offset[c]);
  }
  std::vector<double> returned_variance = variance;
  if (training && l.per_channel > 1) {
    const double n = static_cast<double>(l.per_channel);
    for (double& v : returned_variance) v = v * n / (n - 1);
  }
  return std::vector<Tensor>{y, ChannelTensor(x.dtype(), mean),
                             ChannelTensor(x.dtype(), returned_variance)};
}

// y_backprop, x, scale, mean, variance -> x_backprop, scale_backprop, offset_backprop.
StatusOr<std::vector<Tensor>> FusedBatchNormGrad(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 5));
  const Tensor& dy = call.inputs[0];
  const Tensor& x = call.inputs[1];
  AF_ASSIGN_OR_RETURN(double epsilon, Epsilon(call));
  AF_ASSIGN_OR_RETURN(bool training, GetAttr<bool>(call, "is_training"));
  if (dy.dtype() != x.dtype() || dy.shape() != x.shape()) {
    return InvalidArgument(call.op + ": y_backprop " + dy.DebugString() + " and x " +
                           x.DebugString() + " differ");
  }
  AF_ASSIGN_OR_RETURN(Layout l, CheckLayout(call, x,
                                            {&call.inputs[2], &call.inputs[3], &call.inputs[4]},
                                            {}));
  const std::vector<double> scale = Values(call.inputs[2]), mean = Values(call.inputs[3]);
  std::vector<double> variance = Values(call.inputs[4]);
  const double n = static_cast<double>(l.per_channel);
  if (training && l.per_channel > 1) {
    for (double& v : variance) v = v * (n - 1) / n;  // undo the Bessel correction
  }
  std::vector<double> sigma(l.channels), sum_dy(l.channels, 0.0), sum_dy_xhat(l.channels, 0.0);
  for (int64_t c = 0; c < l.channels; ++c) sigma[c] = std::sqrt(variance[c] + epsilon);
  auto x_hat = [&](int64_t i) {
    const int64_t c = ChannelOf(x, i);
    return (GetDouble(x, i) - mean[c]) / sigma[c];
  };
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    sum_dy[ChannelOf(x, i)] += GetDouble(dy, i);
    sum_dy_xhat[ChannelOf(x, i)] += GetDouble(dy, i) * x_hat(i);
  }
  Tensor dx(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    const int64_t c = ChannelOf(x, i);
    double g = GetDouble(dy, i);
    if (training) g -= sum_dy[c] / n + x_hat(i) * sum_dy_xhat[c] / n;
    SetDouble(&dx, i, scale[c] / sigma[c] * g);
  }
  return std::vector<Tensor>{dx, ChannelTensor(x.dtype(), sum_dy_xhat),
                             ChannelTensor(x.dtype(), sum_dy)};
}

uint64_t SplitMix64Output(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// x -> output, mask: the first draw of a kernel seeded with `seed`.
StatusOr<std::vector<Tensor>> Dropout(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  const Tensor& x = call.inputs[0];
  AF_RETURN_IF_ERROR(CheckDType(call, x, kFloating, "x"));
  AF_ASSIGN_OR_RETURN(double keep_prob, GetAttr<double>(call, "keep_prob"));
  AF_ASSIGN_OR_RETURN(int64_t seed, GetAttr<int64_t>(call, "seed"));
  if (!(keep_prob > 0 && keep_prob <= 1)) {
    return InvalidArgument(call.op + ": keep_prob must be in (0, 1]");
  }
  const uint64_t golden = 0x9E3779B97F4A7C15ULL;
  const uint64_t draw = 0;
  const uint64_t state = SplitMix64Output(SplitMix64Output(static_cast<uint64_t>(seed)) +
                                          (draw + 1) * golden);
  Tensor output(x.dtype(), x.shape());
  Tensor mask(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    const uint64_t bits = SplitMix64Output(state + (static_cast<uint64_t>(i) + 1) * golden);
    const double u = std::ldexp(static_cast<double>(bits >> 11), -53);
    const double m = u < keep_prob ? 1.0 / keep_prob : 0.0;
    SetDouble(&mask, i, m);
    SetDouble(&output, i, GetDouble(x, i) * m);
  }
  return std::vector<Tensor>{output, mask};
}

}  // namespace

void AddNormOps(RefTable* table) {
  (*table)["FusedBatchNorm"] = FusedBatchNorm;
  (*table)["FusedBatchNormGrad"] = FusedBatchNormGrad;
  (*table)["Dropout"] = Dropout;
}

}  // namespace reference
}  // namespace actorflow
