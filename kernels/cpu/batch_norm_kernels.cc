// CPU kernels of FusedBatchNorm and FusedBatchNormGrad (float32 and float64; the op
// contract is in graph/ops.h, the backward rule in graph/gradient_rules_norm.cc).
//
// x [N,H,W,C] (or [N,C]) is the row-major matrix [M, C], M = N*H*W, walked in runs of
// whole rows over contiguous memory (see Runs) by loops that the compiler vectorizes;
// per-channel accumulators are double (a float32 sum over a large batch would lose
// digits). Statistics take two passes (the mean, then the squared deviations from
// it), which stays accurate when the mean is large against the spread, where
// E[x^2] - E[x]^2 would cancel.
//
//   forward, training:  mean, var_b = the batch's;  y = (x - mean) * a + offset,
//                       a = scale / sqrt(var_b + epsilon)     (3 reads of x, 1 write)
//   backward, training: sum_dy = sum(dy), sum_dyx = sum(dy * (x - mean)),
//                       r = 1 / sqrt(var_b + epsilon); dscale = sum_dyx * r,
//                       doffset = sum_dy,
//                       dx = scale * r * (dy - sum_dy / M - (x - mean) * r^2 * sum_dyx / M)
//   inference:          the given statistics; dx = scale * r * dy
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/batch_norm_shapes.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

// How the passes walk x [rows, channels]: `group` rows at a time, as one contiguous
// run of group * channels elements, so that the inner loops stay long (and vectorize)
// when C is small: with C = 3 a run is 22 rows, 66 elements. Per-channel values are
// tiled `group` times to line up with a run's elements, and per-element accumulators
// ("lanes", one per position in a run) are folded into channels at the end.
struct Runs {
  int64_t rows = 0, channels = 0, group = 1;
  int64_t width() const { return group * channels; }
};

Runs RunsOf(const BatchNormDims& dims) {
  constexpr int64_t kMinRun = 64;
  const int64_t c = dims.channels;
  return Runs{dims.rows, c, c >= kMinRun || c == 0 ? 1 : (kMinRun + c - 1) / c};
}

// f(offset, length) for each run, in order.
template <typename F>
void ForEachRun(const Runs& r, F f) {
  for (int64_t m = 0; m < r.rows; m += r.group) {
    f(m * r.channels, std::min(r.group, r.rows - m) * r.channels);
  }
}

// v [C] repeated `group` times, as U.
template <typename U>
std::vector<U> Tiled(const std::vector<double>& v, const Runs& r) {
  std::vector<U> out(r.width());
  for (int64_t j = 0; j < r.width(); ++j) out[j] = static_cast<U>(v[j % r.channels]);
  return out;
}

// The per-channel sums of lanes [group * C].
std::vector<double> Fold(const std::vector<double>& lanes, const Runs& r) {
  std::vector<double> sums(r.channels, 0.0);
  for (int64_t j = 0; j < r.width(); ++j) sums[j % r.channels] += lanes[j];
  return sums;
}

template <typename T>
std::vector<double> Values(const Tensor& t) {
  std::vector<double> v(t.NumElements());
  for (int64_t i = 0; i < t.NumElements(); ++i) v[i] = static_cast<double>(t.data<T>()[i]);
  return v;
}

template <typename T>
const T* DataOf(const Tensor& t) {
  return t.NumElements() == 0 ? nullptr : t.data<T>();
}

// The mean and the biased variance of each channel of x (two passes; NaN for no rows,
// 0 / 0, as TensorFlow's).
template <typename T>
void BatchStatistics(const T* x, const Runs& r, std::vector<double>* mean,
                     std::vector<double>* variance) {
  const double count = static_cast<double>(r.rows);
  std::vector<double> lanes(r.width(), 0.0);
  ForEachRun(r, [&](int64_t offset, int64_t n) {
    const T* __restrict in = x + offset;
    double* __restrict acc = lanes.data();
    for (int64_t j = 0; j < n; ++j) acc[j] += static_cast<double>(in[j]);
  });
  *mean = Fold(lanes, r);
  for (double& m : *mean) m /= count;
  const std::vector<double> center = Tiled<double>(*mean, r);
  lanes.assign(r.width(), 0.0);
  ForEachRun(r, [&](int64_t offset, int64_t n) {
    const T* __restrict in = x + offset;
    const double* __restrict mu = center.data();
    double* __restrict acc = lanes.data();
    for (int64_t j = 0; j < n; ++j) {
      const double d = static_cast<double>(in[j]) - mu[j];
      acc[j] += d * d;
    }
  });
  *variance = Fold(lanes, r);
  for (double& v : *variance) v /= count;
}

// Inputs: x [...,C], scale [C], offset [C], mean [C], variance [C] (not read in
// training). Outputs: y [...,C], batch_mean [C], batch_variance [C].
template <typename T>
class FusedBatchNormKernel : public Kernel {
 public:
  explicit FusedBatchNormKernel(const Node& node)
      : Kernel(node),
        epsilon_(node.attr<double>("epsilon")),
        training_(node.attr<bool>("is_training")) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& scale = ctx->input(1);
    const Tensor& offset = ctx->input(2);
    const Tensor& mean_in = ctx->input(3);
    const Tensor& variance_in = ctx->input(4);
    StatusOr<BatchNormDims> dims =
        CheckBatchNormShapes("x", x.shape(),
                             {{"scale", &scale.shape()},
                              {"offset", &offset.shape()},
                              {"mean", &mean_in.shape(), training_},
                              {"variance", &variance_in.shape(), training_}});
    if (!dims.ok()) {
      ctx->Fail(Code::kInvalidArgument, dims.status().message());
      return;
    }
    const Runs r = RunsOf(*dims);
    const T* in = DataOf<T>(x);
    std::vector<double> mean, variance;  // variance biased
    if (training_) {
      BatchStatistics(in, r, &mean, &variance);
    } else {
      mean = Values<T>(mean_in);
      variance = Values<T>(variance_in);
    }
    std::vector<double> a = Values<T>(scale);
    for (int64_t c = 0; c < r.channels; ++c) a[c] /= std::sqrt(variance[c] + epsilon_);
    const std::vector<T> mean_t = Tiled<T>(mean, r), a_t = Tiled<T>(a, r),
                         offset_t = Tiled<T>(Values<T>(offset), r);
    T* out = ctx->allocate_output_for_overwrite(0, x.shape()).template data<T>();
    ForEachRun(r, [&](int64_t start, int64_t n) {
      const T* __restrict xs = in + start;
      const T* __restrict mu = mean_t.data();
      const T* __restrict k = a_t.data();
      const T* __restrict shift = offset_t.data();
      T* __restrict y = out + start;
      for (int64_t j = 0; j < n; ++j) y[j] = (xs[j] - mu[j]) * k[j] + shift[j];
    });
    T* batch_mean = ctx->allocate_output_for_overwrite(1, Shape{r.channels}).template data<T>();
    T* batch_variance =
        ctx->allocate_output_for_overwrite(2, Shape{r.channels}).template data<T>();
    for (int64_t c = 0; c < r.channels; ++c) {
      batch_mean[c] = static_cast<T>(mean[c]);
      batch_variance[c] = training_ ? static_cast<T>(CorrectedVariance(variance[c], r.rows))
                                    : variance_in.data<T>()[c];
    }
  }

 private:
  const double epsilon_;
  const bool training_;
};

// Inputs: y_backprop [...,C], x [...,C], scale [C], mean [C], variance [C] (in
// training: the forward op's batch_mean and Bessel-corrected batch_variance).
// Outputs: x_backprop [...,C], scale_backprop [C], offset_backprop [C].
template <typename T>
class FusedBatchNormGradKernel : public Kernel {
 public:
  explicit FusedBatchNormGradKernel(const Node& node)
      : Kernel(node),
        epsilon_(node.attr<double>("epsilon")),
        training_(node.attr<bool>("is_training")) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& x = ctx->input(1);
    const Tensor& scale = ctx->input(2);
    const Tensor& mean_in = ctx->input(3);
    const Tensor& variance_in = ctx->input(4);
    if (dy.shape() != x.shape()) {
      ctx->Fail(Code::kInvalidArgument, "y_backprop " + dy.shape().ToString() + " and x " +
                                            x.shape().ToString() + " must have the same shape");
      return;
    }
    StatusOr<BatchNormDims> dims =
        CheckBatchNormShapes("x", x.shape(),
                             {{"scale", &scale.shape()},
                              {"mean", &mean_in.shape()},
                              {"variance", &variance_in.shape()}});
    if (!dims.ok()) {
      ctx->Fail(Code::kInvalidArgument, dims.status().message());
      return;
    }
    const Runs r = RunsOf(*dims);
    const T* in = DataOf<T>(x);
    const T* grad = DataOf<T>(dy);
    const std::vector<double> mean = Values<T>(mean_in);
    std::vector<double> rstd = Values<T>(variance_in);  // 1 / sqrt(biased variance + eps)
    for (double& v : rstd) {
      v = 1.0 / std::sqrt((training_ ? BiasedVariance(v, r.rows) : v) + epsilon_);
    }
    // Per-channel sums of dy and of dy * (x - mean), in lanes.
    const std::vector<double> center = Tiled<double>(mean, r);
    std::vector<double> lanes_dy(r.width(), 0.0), lanes_dyx(r.width(), 0.0);
    ForEachRun(r, [&](int64_t start, int64_t n) {
      const T* __restrict g = grad + start;
      const T* __restrict xs = in + start;
      const double* __restrict mu = center.data();
      double* __restrict sum_dy = lanes_dy.data();
      double* __restrict sum_dyx = lanes_dyx.data();
      for (int64_t j = 0; j < n; ++j) {
        const double gj = static_cast<double>(g[j]);
        sum_dy[j] += gj;
        sum_dyx[j] += gj * (static_cast<double>(xs[j]) - mu[j]);
      }
    });
    const std::vector<double> sum_dy = Fold(lanes_dy, r), sum_dyx = Fold(lanes_dyx, r);
    T* dscale = ctx->allocate_output_for_overwrite(1, Shape{r.channels}).template data<T>();
    T* doffset = ctx->allocate_output_for_overwrite(2, Shape{r.channels}).template data<T>();
    // dx = a * dy + b * (x - mean) + d per channel (b = d = 0 in inference).
    std::vector<double> a = Values<T>(scale), b(r.channels, 0.0), d(r.channels, 0.0);
    const double count = static_cast<double>(r.rows);
    for (int64_t c = 0; c < r.channels; ++c) {
      dscale[c] = static_cast<T>(sum_dyx[c] * rstd[c]);
      doffset[c] = static_cast<T>(sum_dy[c]);
      a[c] *= rstd[c];
      if (training_ && r.rows > 0) {
        b[c] = -a[c] * rstd[c] * rstd[c] * sum_dyx[c] / count;
        d[c] = -a[c] * sum_dy[c] / count;
      }
    }
    const std::vector<T> mean_t = Tiled<T>(mean, r), a_t = Tiled<T>(a, r), b_t = Tiled<T>(b, r),
                         d_t = Tiled<T>(d, r);
    T* out = ctx->allocate_output_for_overwrite(0, x.shape()).template data<T>();
    ForEachRun(r, [&](int64_t start, int64_t n) {
      const T* __restrict g = grad + start;
      const T* __restrict xs = in + start;
      const T* __restrict mu = mean_t.data();
      const T* __restrict ka = a_t.data();
      const T* __restrict kb = b_t.data();
      const T* __restrict kd = d_t.data();
      T* __restrict dx = out + start;
      if (training_) {
        for (int64_t j = 0; j < n; ++j) dx[j] = ka[j] * g[j] + kb[j] * (xs[j] - mu[j]) + kd[j];
      } else {
        for (int64_t j = 0; j < n; ++j) dx[j] = ka[j] * g[j];
      }
    });
  }

 private:
  const double epsilon_;
  const bool training_;
};

const CpuKernelRegistrations<FusedBatchNormKernel, float, double> reg_batch_norm(
    "FusedBatchNorm");
const CpuKernelRegistrations<FusedBatchNormGradKernel, float, double> reg_batch_norm_grad(
    "FusedBatchNormGrad");

}  // namespace
}  // namespace cpu
}  // namespace actorflow
