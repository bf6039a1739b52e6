#include "kernels/cpu/math_op_shapes.h"

#include <climits>

namespace actorflow {
namespace cpu {
namespace {

// The broadcast of x's and y's batch dims into plan->out's batch dims, x_matrix,
// y_matrix and the counts. False when the batch dims do not broadcast. Preconditions:
// ranks >= 2.
bool PlanBatches(const Shape& x, const Shape& y, BatchMatMulPlan* plan,
                 std::vector<int64_t>* dims) {
  const int xb = x.rank() - 2, yb = y.rank() - 2;
  const int rank = xb > yb ? xb : yb;
  std::vector<int64_t> x_stride(rank), y_stride(rank);  // 0 along stretched dims
  dims->assign(rank, 1);
  for (int i = rank - 1; i >= 0; --i) {
    const int64_t xd = i - (rank - xb) >= 0 ? x.dim(i - (rank - xb)) : 1;
    const int64_t yd = i - (rank - yb) >= 0 ? y.dim(i - (rank - yb)) : 1;
    if (xd != yd && xd != 1 && yd != 1) return false;
    (*dims)[i] = xd == 1 ? yd : xd;
    x_stride[i] = xd == 1 ? 0 : plan->x_count;
    y_stride[i] = yd == 1 ? 0 : plan->y_count;
    plan->x_count *= xd;
    plan->y_count *= yd;
  }
  int64_t total = 1;
  for (int64_t d : *dims) total *= d;
  plan->x_matrix.assign(total, 0);
  plan->y_matrix.assign(total, 0);
  std::vector<int64_t> index(rank, 0);  // an odometer over the output's batch dims
  int64_t xi = 0, yi = 0;
  for (int64_t b = 0; b < total; ++b) {
    plan->x_matrix[b] = xi;
    plan->y_matrix[b] = yi;
    for (int i = rank - 1; i >= 0; --i) {
      xi += x_stride[i];
      yi += y_stride[i];
      if (++index[i] < (*dims)[i]) break;
      xi -= x_stride[i] * index[i];
      yi -= y_stride[i] * index[i];
      index[i] = 0;
    }
  }
  return true;
}

}  // namespace

StatusOr<BatchMatMulPlan> PlanBatchMatMul(const Shape& x, const Shape& y, bool adj_x,
                                          bool adj_y) {
  BatchMatMulPlan plan;
  plan.adj_x = adj_x;
  plan.adj_y = adj_y;
  plan.shapes = "x " + x.ToString() + (adj_x ? " (adjoint)" : "") + " and y " + y.ToString() +
                (adj_y ? " (adjoint)" : "");
  if (x.rank() < 2 || y.rank() < 2) {
    return InvalidArgument(
        "BatchMatMul needs inputs of rank >= 2 ([..., M, K] and [..., K, N]), got " +
        plan.shapes);
  }
  const int xr = x.rank(), yr = y.rank();
  plan.m = adj_x ? x.dim(xr - 1) : x.dim(xr - 2);
  plan.k = adj_x ? x.dim(xr - 2) : x.dim(xr - 1);
  const int64_t ky = adj_y ? y.dim(yr - 1) : y.dim(yr - 2);
  plan.n = adj_y ? y.dim(yr - 2) : y.dim(yr - 1);
  if (plan.k != ky) {
    return InvalidArgument("BatchMatMul shape mismatch: " + plan.shapes +
                           " have inner dimensions " + std::to_string(plan.k) + " and " +
                           std::to_string(ky));
  }
  std::vector<int64_t> out_dims;
  if (!PlanBatches(x, y, &plan, &out_dims)) {
    return InvalidArgument("BatchMatMul: the batch dimensions of " + plan.shapes +
                           " do not broadcast");
  }
  out_dims.push_back(plan.m);
  out_dims.push_back(plan.n);
  plan.out = Shape(out_dims);
  plan.x_row_length = x.dim(xr - 1);
  plan.y_row_length = y.dim(yr - 1);
  return plan;
}

Status CheckBatchMatMulBlasLimits(const BatchMatMulPlan& plan) {
  const int64_t rows = plan.StacksX() ? plan.batch() * plan.m : plan.m;
  for (int64_t d : {rows, plan.n, plan.k, plan.x_row_length, plan.y_row_length}) {
    if (d > INT_MAX) {
      return InvalidArgument("BatchMatMul dimension " + std::to_string(d) + " of " +
                             plan.shapes + " exceeds the BLAS limit of " +
                             std::to_string(INT_MAX));
    }
  }
  return Status::OK();
}

StatusOr<LayerNormDims> CheckLayerNormFeatures(
    const std::string& op, const Shape& x,
    const std::vector<std::pair<const char*, const Shape*>>& vectors) {
  if (x.rank() < 1 || x.dim(x.rank() - 1) == 0) {
    return InvalidArgument(op + " needs x [..., D] with D >= 1, got x " + x.ToString());
  }
  const int64_t d = x.dim(x.rank() - 1);
  for (const auto& [name, s] : vectors) {
    if (s->rank() != 1 || s->dim(0) != d) {
      return InvalidArgument(op + ": " + name + " " + s->ToString() + " does not match the " +
                             std::to_string(d) + " features of x " + x.ToString());
    }
  }
  LayerNormDims dims;
  dims.features = d;
  dims.rows = x.num_elements() / d;
  return dims;
}

Shape LayerNormRowsShape(const Shape& x) {
  return Shape(std::vector<int64_t>(x.dims().begin(), x.dims().end() - 1));
}

Status CheckLayerNormGradInputs(const Shape& dy, const Shape& x, const Shape& mean,
                                const Shape& inv_std) {
  if (dy != x) {
    return InvalidArgument("LayerNormGrad needs dy and x of one shape, got dy " +
                           dy.ToString() + " and x " + x.ToString());
  }
  const Shape want = LayerNormRowsShape(x);
  for (const auto& [name, s] :
       {std::make_pair("mean", &mean), std::make_pair("inv_std", &inv_std)}) {
    if (*s != want) {
      return InvalidArgument(std::string("LayerNormGrad: ") + name + " " + s->ToString() +
                             " must be " + want.ToString() + " for x " + x.ToString());
    }
  }
  return Status::OK();
}

Status CheckGeluGradShapes(const Shape& dy, const Shape& x) {
  if (dy != x) {
    return InvalidArgument("GeluGrad needs dy and x of one shape, got dy " + dy.ToString() +
                           " and x " + x.ToString());
  }
  return Status::OK();
}

}  // namespace cpu
}  // namespace actorflow
