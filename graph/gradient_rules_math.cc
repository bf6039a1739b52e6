// The backward rules of the math ops (graph/math_ops.h): BatchMatMul, LayerNorm and
// Gelu. (Softmax and LogSoftmax of any rank are in graph/gradient_rules.cc.) Notation
// as there: g is the incoming gradient of an output, dx the gradient of input x; D is
// the feature count, the last dim of LayerNorm's x. The backward ops LayerNormGrad and
// GeluGrad have no rules: second derivatives are not supported.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/gradient_rules_internal.h"
#include "graph/math_ops.h"
#include "graph/ops.h"

namespace actorflow {
namespace gradient_rules_internal {
namespace {

using Grads = std::vector<Output>;

// z = op(x) op(y), op = transpose where adj is set. Each case keeps dx in x's layout
// and dy in y's (as MatMul's rule), then sums over the broadcast batch dims:
//   z = x y      dx = g y^T     dy = x^T g
//   z = x y^T    dx = g y       dy = g^T x
//   z = x^T y    dx = y g^T     dy = x g
//   z = x^T y^T  dx = y^T g^T   dy = g^T x^T
Status BatchMatMulGradRule(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output x = In(op, 0), y = In(op, 1), g = dy[0];
  const bool adj_x = op.attr<bool>("adj_x");
  const bool adj_y = op.attr<bool>("adj_y");
  Output gx, gy;
  if (!adj_x && !adj_y) {
    gx = BatchMatMul(s, g, y, false, true);
    gy = BatchMatMul(s, x, g, true, false);
  } else if (!adj_x && adj_y) {
    gx = BatchMatMul(s, g, y, false, false);
    gy = BatchMatMul(s, g, x, true, false);
  } else if (adj_x && !adj_y) {
    gx = BatchMatMul(s, y, g, false, true);
    gy = BatchMatMul(s, x, g, false, false);
  } else {
    gx = BatchMatMul(s, y, g, true, true);
    gy = BatchMatMul(s, g, x, true, true);
  }
  (*dx)[0] = Unbroadcast(s, gx, x);
  (*dx)[1] = Unbroadcast(s, gy, y);
  return Status::OK();
}

// D as a scalar of `dtype`: a Const when x's last dim is known at build time, else
// Size(x) / Size(rows) at run time (rows is [...], one value per row).
Output FeatureCount(const Scope& s, const Output& x, const Output& rows, DType dtype) {
  const Shape& shape = x.shape();
  if (!shape.unknown_rank() && shape.rank() > 0 && shape.dim(shape.rank() - 1) >= 0) {
    return Scalar(s, static_cast<double>(shape.dim(shape.rank() - 1)), dtype);
  }
  return Div(s, Cast(s, Size(s, x, DType::kInt64), dtype),
             Cast(s, Size(s, rows, DType::kInt64), dtype));
}

// v [...] (one value per row of x) repeated along x's last axis: [..., D].
Output PerRow(const Scope& s, const Output& v, const Output& x) {
  return BroadcastToShapeOf(s, v, x, std::vector<int64_t>{-1}, /*keep_dims=*/false);
}

// y = gamma * (x - mean) * inv_std + beta: LayerNormGrad gives the full gradient of x
// through the row statistics, dgamma and dbeta. The statistics are outputs too, and
// gradients arriving there add, per row (variance = sum((x - mean)^2) / D):
//   mean -> dx += g_mean / D
//   inv_std = (variance + epsilon)^(-1/2)
//          -> dx += g_inv_std * (-inv_std^3) * (x - mean) / D
// (the term through the mean vanishes: the deviations sum to zero).
Status LayerNormGradRule(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output x = In(op, 0), gamma = In(op, 1);
  const Output mean = Out(op, 1), inv_std = Out(op, 2);
  const DType t = x.dtype();
  Output total;
  auto add = [&s, &total](const Output& v) { total = total.valid() ? Add(s, total, v) : v; };
  if (dy[0].valid()) {
    const LayerNormGradResult g = LayerNormGrad(s, dy[0], x, mean, inv_std, gamma);
    add(g.dx);
    (*dx)[1] = g.dgamma;
    (*dx)[2] = g.dbeta;
  }
  if (dy[1].valid() || dy[2].valid()) {
    const Output d = FeatureCount(s, x, mean, t);
    if (dy[1].valid()) add(PerRow(s, Div(s, dy[1], d), x));
    if (dy[2].valid()) {
      const Output cube = Mul(s, Mul(s, inv_std, inv_std), inv_std);
      const Output per_row = Div(s, Neg(s, Mul(s, dy[2], cube)), d);  // [...]
      add(Mul(s, Sub(s, x, PerRow(s, mean, x)), PerRow(s, per_row, x)));
    }
  }
  (*dx)[0] = total;
  return Status::OK();
}

// y = Gelu(x): dx = g * Gelu'(x), in the op's form (exact or tanh).
Status GeluGradRule(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  (*dx)[0] = GeluGrad(s, dy[0], In(op, 0), op.attr<bool>("approximate"));
  return Status::OK();
}

}  // namespace

void AddMathGradientRules(std::map<std::string, GradientFn>* table) {
  (*table)["BatchMatMul"] = BatchMatMulGradRule;
  (*table)["LayerNorm"] = LayerNormGradRule;
  (*table)["Gelu"] = GeluGradRule;
}

}  // namespace gradient_rules_internal
}  // namespace actorflow
