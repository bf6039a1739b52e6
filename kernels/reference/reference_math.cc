// Reference BatchMatMul, LayerNorm, LayerNormGrad, Gelu and GeluGrad, element by
// element in double from their definitions (graph/math_ops.h has the contracts;
// Softmax of any rank is in reference_nn.cc):
//   BatchMatMul   out[b..., i, j] = sum_p op(x)[b_x..., i, p] * op(y)[b_y..., p, j],
//                 b_x and b_y the broadcast sources of the output's batch index b
//   LayerNorm     per row: mean, biased variance, y = gamma (x - mean) / sqrt(var + eps) + beta
//   LayerNormGrad the textbook gradient through the row statistics:
//                 dx = inv_std (g - mean(g) - x_hat mean(g x_hat)), g = dy gamma
//   Gelu          0.5 x (1 + erf(x / sqrt(2))), or 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// Other dtypes than float32/float64 are an InvalidArgument, as inference makes them.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/reference/reference_util.h"

namespace actorflow {
namespace reference {
namespace {

// Every input float32 or float64, all of one dtype.
Status CheckFloatInputs(const RefCall& call) {
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const DType t = call.inputs[i].dtype();
    if ((t != DType::kFloat32 && t != DType::kFloat64) || t != call.inputs[0].dtype()) {
      return InvalidArgument(call.op + ": input " + std::to_string(i) + " " +
                             call.inputs[i].DebugString() +
                             ": the inputs must be float32 or float64, all of one dtype");
    }
  }
  return Status::OK();
}

bool BoolAttrOr(const RefCall& call, const std::string& name, bool fallback) {
  auto it = call.attrs.find(name);
  return it != call.attrs.end() && it->second.Is<bool>() ? it->second.Get<bool>() : fallback;
}

Shape Leading(const Shape& s, int drop) {
  return Shape(std::vector<int64_t>(s.dims().begin(), s.dims().end() - drop));
}

StatusOr<std::vector<Tensor>> BatchMatMul(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 2));
  AF_RETURN_IF_ERROR(CheckFloatInputs(call));
  const Tensor& x = call.inputs[0];
  const Tensor& y = call.inputs[1];
  if (x.rank() < 2 || y.rank() < 2) {
    return InvalidArgument("BatchMatMul: x and y must have rank >= 2, got " + x.DebugString() +
                           " and " + y.DebugString());
  }
  const bool adj_x = BoolAttrOr(call, "adj_x", false);
  const bool adj_y = BoolAttrOr(call, "adj_y", false);
  const int xr = x.rank(), yr = y.rank();
  const int64_t m = adj_x ? x.dim(xr - 1) : x.dim(xr - 2);
  const int64_t k = adj_x ? x.dim(xr - 2) : x.dim(xr - 1);
  const int64_t ky = adj_y ? y.dim(yr - 1) : y.dim(yr - 2);
  const int64_t n = adj_y ? y.dim(yr - 2) : y.dim(yr - 1);
  if (k != ky) {
    return InvalidArgument("BatchMatMul shape mismatch: x " + x.DebugString() + " and y " +
                           y.DebugString() + " have inner dimensions " + std::to_string(k) +
                           " and " + std::to_string(ky));
  }
  const Shape x_batch = Leading(x.shape(), 2), y_batch = Leading(y.shape(), 2);
  AF_ASSIGN_OR_RETURN(Shape batch, BroadcastShape(call.op, x_batch, y_batch));
  std::vector<int64_t> dims = batch.dims();
  dims.push_back(m);
  dims.push_back(n);
  Tensor out(x.dtype(), Shape(dims));
  ForEachIndex(out.shape(), [&](const std::vector<int64_t>& index, int64_t flat) {
    const std::vector<int64_t> b(index.begin(), index.end() - 2);
    const int64_t i = index[index.size() - 2], j = index.back();
    const int64_t x0 = BroadcastSource(b, x_batch) * x.dim(xr - 2) * x.dim(xr - 1);
    const int64_t y0 = BroadcastSource(b, y_batch) * y.dim(yr - 2) * y.dim(yr - 1);
    double sum = 0.0;
    for (int64_t p = 0; p < k; ++p) {
      const int64_t xi = adj_x ? p * x.dim(xr - 1) + i : i * x.dim(xr - 1) + p;
      const int64_t yi = adj_y ? j * y.dim(yr - 1) + p : p * y.dim(yr - 1) + j;
      sum += GetDouble(x, x0 + xi) * GetDouble(y, y0 + yi);
    }
    SetDouble(&out, flat, sum);
  });
  return std::vector<Tensor>{out};
}

// x [..., D] with D >= 1, each of `vectors` [D]: D.
StatusOr<int64_t> Features(const RefCall& call, const Tensor& x,
                           const std::vector<const Tensor*>& vectors) {
  if (x.rank() < 1 || x.dim(x.rank() - 1) == 0) {
    return InvalidArgument(call.op + ": x must be [..., D] with D >= 1, got " + x.DebugString());
  }
  const int64_t d = x.dim(x.rank() - 1);
  for (const Tensor* v : vectors) {
    if (v->rank() != 1 || v->dim(0) != d) {
      return InvalidArgument(call.op + ": " + v->DebugString() + " does not match the " +
                             std::to_string(d) + " features of x " + x.DebugString());
    }
  }
  return d;
}

StatusOr<std::vector<Tensor>> LayerNorm(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 3));
  AF_RETURN_IF_ERROR(CheckFloatInputs(call));
  const Tensor& x = call.inputs[0];
  const Tensor& gamma = call.inputs[1];
  const Tensor& beta = call.inputs[2];
  AF_ASSIGN_OR_RETURN(const int64_t d, Features(call, x, {&gamma, &beta}));
  AF_ASSIGN_OR_RETURN(const double epsilon, GetAttr<double>(call, "epsilon"));
  if (!(epsilon >= 0) || !std::isfinite(epsilon)) {
    return InvalidArgument("LayerNorm: epsilon must be finite and >= 0");
  }
  Tensor y(x.dtype(), x.shape());
  Tensor mean(x.dtype(), Leading(x.shape(), 1));
  Tensor inv_std(x.dtype(), Leading(x.shape(), 1));
  for (int64_t r = 0; r < mean.NumElements(); ++r) {
    double sum = 0.0;
    for (int64_t j = 0; j < d; ++j) sum += GetDouble(x, r * d + j);
    const double mu = sum / d;
    double var = 0.0;
    for (int64_t j = 0; j < d; ++j) var += std::pow(GetDouble(x, r * d + j) - mu, 2) / d;
    const double sigma = std::sqrt(var + epsilon);
    for (int64_t j = 0; j < d; ++j) {
      SetDouble(&y, r * d + j,
                GetDouble(gamma, j) * (GetDouble(x, r * d + j) - mu) / sigma + GetDouble(beta, j));
    }
    SetDouble(&mean, r, mu);
    SetDouble(&inv_std, r, 1.0 / sigma);
  }
  return std::vector<Tensor>{y, mean, inv_std};
}

StatusOr<std::vector<Tensor>> LayerNormGrad(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 5));
  AF_RETURN_IF_ERROR(CheckFloatInputs(call));
  const Tensor& dy = call.inputs[0];
  const Tensor& x = call.inputs[1];
  const Tensor& mean = call.inputs[2];
  const Tensor& inv_std = call.inputs[3];
  const Tensor& gamma = call.inputs[4];
  AF_ASSIGN_OR_RETURN(const int64_t d, Features(call, x, {&gamma}));
  if (dy.shape() != x.shape() || mean.shape() != Leading(x.shape(), 1) ||
      inv_std.shape() != mean.shape()) {
    return InvalidArgument("LayerNormGrad: dy " + dy.DebugString() + ", mean " +
                           mean.DebugString() + " and inv_std " + inv_std.DebugString() +
                           " do not fit x " + x.DebugString());
  }
  Tensor dx(x.dtype(), x.shape());
  std::vector<double> dgamma(d, 0.0), dbeta(d, 0.0);
  for (int64_t r = 0; r < mean.NumElements(); ++r) {
    const double s = GetDouble(inv_std, r);
    std::vector<double> xhat(d), g(d);
    double mean_g = 0.0, mean_gx = 0.0;
    for (int64_t j = 0; j < d; ++j) {
      xhat[j] = (GetDouble(x, r * d + j) - GetDouble(mean, r)) * s;
      g[j] = GetDouble(dy, r * d + j) * GetDouble(gamma, j);
      mean_g += g[j] / d;
      mean_gx += g[j] * xhat[j] / d;
      dgamma[j] += GetDouble(dy, r * d + j) * xhat[j];
      dbeta[j] += GetDouble(dy, r * d + j);
    }
    for (int64_t j = 0; j < d; ++j) {
      SetDouble(&dx, r * d + j, s * (g[j] - mean_g - xhat[j] * mean_gx));
    }
  }
  Tensor dgamma_t(x.dtype(), Shape{d}), dbeta_t(x.dtype(), Shape{d});
  for (int64_t j = 0; j < d; ++j) {
    SetDouble(&dgamma_t, j, dgamma[j]);
    SetDouble(&dbeta_t, j, dbeta[j]);
  }
  return std::vector<Tensor>{dx, dgamma_t, dbeta_t};
}

const double kPi = std::acos(-1.0);

// Gelu(x) and Gelu'(x) in the textbook forms.
double GeluOf(double x, bool approximate) {
  if (!approximate) return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / kPi) * (x + 0.044715 * x * x * x)));
}
double GeluDerivative(double x, bool approximate) {
  if (!approximate) {
    const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * kPi);
    return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))) + x * pdf;
  }
  const double c = std::sqrt(2.0 / kPi);
  const double t = std::tanh(c * (x + 0.044715 * x * x * x));
  const double sech2 = 1.0 - t * t;
  // sech2 is 0 where tanh saturates; x^2 may not be finite there.
  const double second = sech2 == 0.0 ? 0.0 : 0.5 * x * sech2 * c * (1.0 + 3 * 0.044715 * x * x);
  return 0.5 * (1.0 + t) + second;
}

StatusOr<std::vector<Tensor>> Gelu(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  AF_RETURN_IF_ERROR(CheckFloatInputs(call));
  const Tensor& x = call.inputs[0];
  const bool approximate = BoolAttrOr(call, "approximate", false);
  Tensor y(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    SetDouble(&y, i, GeluOf(GetDouble(x, i), approximate));
  }
  return std::vector<Tensor>{y};
}

StatusOr<std::vector<Tensor>> GeluGrad(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 2));
  AF_RETURN_IF_ERROR(CheckFloatInputs(call));
  const Tensor& dy = call.inputs[0];
  const Tensor& x = call.inputs[1];
  if (dy.shape() != x.shape()) {
    return InvalidArgument("GeluGrad: dy " + dy.DebugString() + " and x " + x.DebugString() +
                           " must have the same shape");
  }
  const bool approximate = BoolAttrOr(call, "approximate", false);
  Tensor dx(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    SetDouble(&dx, i, GetDouble(dy, i) * GeluDerivative(GetDouble(x, i), approximate));
  }
  return std::vector<Tensor>{dx};
}

}  // namespace

void AddMathOps(RefTable* table) {
  (*table)["BatchMatMul"] = BatchMatMul;
  (*table)["LayerNorm"] = LayerNorm;
  (*table)["LayerNormGrad"] = LayerNormGrad;
  (*table)["Gelu"] = Gelu;
  (*table)["GeluGrad"] = GeluGrad;
}

}  // namespace reference
}  // namespace actorflow
