// CPU kernels of LayerNorm and LayerNormGrad (float32 and float64; the contracts are in
// graph/math_ops.h, the backward rule in graph/gradient_rules_math.cc).
//
// x [..., D] is the row-major matrix [rows, D]; each row is normalized on its own.
// Row statistics and the backward pass's row sums accumulate in double (a float32 sum
// over a wide row would lose digits), and the variance takes two passes (the mean,
// then the squared deviations from it), which stays accurate when the mean is large
// against the spread, where E[x^2] - E[x]^2 would cancel.
//
//   forward:  mean, var = the row's (biased); r = 1 / sqrt(var + epsilon);
//             y = (x - mean) * r * gamma + beta
//   backward: x_hat = (x - mean) * r, g = dy * gamma, per row s1 = sum(g),
//             s2 = sum(g * x_hat); dx = r * (g - s1 / D - x_hat * s2 / D);
//             dgamma = sum over rows of dy * x_hat, dbeta = sum over rows of dy
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/math_op_shapes.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

// Fails the node with `s` when it is an error; returns whether it was OK.
bool Checked(KernelContext* ctx, const Status& s) {
  if (!s.ok()) ctx->Fail(s.code(), s.message());
  return s.ok();
}

// Inputs: x [..., D], gamma [D], beta [D]. Outputs: y [..., D], mean [...], inv_std [...].
template <typename T>
class LayerNormKernel : public Kernel {
 public:
  explicit LayerNormKernel(const Node& node)
      : Kernel(node), epsilon_(node.attr<double>("epsilon")) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& gamma = ctx->input(1);
    const Tensor& beta = ctx->input(2);
    StatusOr<LayerNormDims> dims = CheckLayerNormFeatures(
        "LayerNorm", x.shape(), {{"gamma", &gamma.shape()}, {"beta", &beta.shape()}});
    if (!Checked(ctx, dims.status())) return;
    const int64_t rows = dims->rows, d = dims->features;
    Tensor& y = ctx->allocate_output_for_overwrite(0, x.shape());  // every row
    Tensor& mean_out = ctx->allocate_output_for_overwrite(1, LayerNormRowsShape(x.shape()));
    Tensor& inv_std_out = ctx->allocate_output_for_overwrite(2, LayerNormRowsShape(x.shape()));
    if (rows == 0) return;
    const T* __restrict g = gamma.data<T>();
    const T* __restrict b = beta.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      const T* __restrict in = x.data<T>() + r * d;
      T* __restrict out = y.data<T>() + r * d;
      double sum = 0.0;
      for (int64_t j = 0; j < d; ++j) sum += static_cast<double>(in[j]);
      const double mean = sum / static_cast<double>(d);
      double squares = 0.0;
      for (int64_t j = 0; j < d; ++j) {
        const double dev = static_cast<double>(in[j]) - mean;
        squares += dev * dev;
      }
      const double inv_std = 1.0 / std::sqrt(squares / static_cast<double>(d) + epsilon_);
      mean_out.data<T>()[r] = static_cast<T>(mean);
      inv_std_out.data<T>()[r] = static_cast<T>(inv_std);
      // In double: x - mean in float32 would round to the ulp of a large mean.
      for (int64_t j = 0; j < d; ++j) {
        out[j] = static_cast<T>((static_cast<double>(in[j]) - mean) * inv_std *
                                    static_cast<double>(g[j]) +
                                static_cast<double>(b[j]));
      }
    }
  }

 private:
  const double epsilon_;
};

// Inputs: dy [..., D], x [..., D], mean [...], inv_std [...], gamma [D].
// Outputs: dx [..., D], dgamma [D], dbeta [D].
template <typename T>
class LayerNormGradKernel : public Kernel {
 public:
  explicit LayerNormGradKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& x = ctx->input(1);
    const Tensor& mean = ctx->input(2);
    const Tensor& inv_std = ctx->input(3);
    const Tensor& gamma = ctx->input(4);
    StatusOr<LayerNormDims> dims =
        CheckLayerNormFeatures("LayerNormGrad", x.shape(), {{"gamma", &gamma.shape()}});
    if (!Checked(ctx, dims.status())) return;
    if (!Checked(ctx, CheckLayerNormGradInputs(dy.shape(), x.shape(), mean.shape(),
                                               inv_std.shape()))) {
      return;
    }
    const int64_t rows = dims->rows, d = dims->features;
    Tensor& dx = ctx->allocate_output_for_overwrite(0, x.shape());  // every row
    Tensor& dgamma = ctx->allocate_output_for_overwrite(1, Shape{d});
    Tensor& dbeta = ctx->allocate_output_for_overwrite(2, Shape{d});
    std::vector<double> dgamma_sum(d, 0.0), dbeta_sum(d, 0.0);
    std::vector<double> xhat(d);
    const T* __restrict g = gamma.data<T>();
    const double inv_d = 1.0 / static_cast<double>(d);
    for (int64_t r = 0; r < rows; ++r) {
      const T* __restrict in = x.data<T>() + r * d;
      const T* __restrict grad = dy.data<T>() + r * d;
      T* __restrict out = dx.data<T>() + r * d;
      const double m = static_cast<double>(mean.data<T>()[r]);
      const double s = static_cast<double>(inv_std.data<T>()[r]);
      double s1 = 0.0, s2 = 0.0;
      for (int64_t j = 0; j < d; ++j) {
        xhat[j] = (static_cast<double>(in[j]) - m) * s;
        const double gj = static_cast<double>(grad[j]);
        const double scaled = gj * static_cast<double>(g[j]);
        s1 += scaled;
        s2 += scaled * xhat[j];
        dgamma_sum[j] += gj * xhat[j];
        dbeta_sum[j] += gj;
      }
      const double mean_term = s1 * inv_d;
      const double xhat_term = s2 * inv_d;
      for (int64_t j = 0; j < d; ++j) {
        const double scaled = static_cast<double>(grad[j]) * static_cast<double>(g[j]);
        out[j] = static_cast<T>(s * (scaled - mean_term - xhat[j] * xhat_term));
      }
    }
    for (int64_t j = 0; j < d; ++j) {
      dgamma.data<T>()[j] = static_cast<T>(dgamma_sum[j]);
      dbeta.data<T>()[j] = static_cast<T>(dbeta_sum[j]);
    }
  }
};

const CpuKernelRegistrations<LayerNormKernel, float, double> reg_layer_norm("LayerNorm");
const CpuKernelRegistrations<LayerNormGradKernel, float, double> reg_layer_norm_grad(
    "LayerNormGrad");

}  // namespace
}  // namespace cpu
}  // namespace actorflow
