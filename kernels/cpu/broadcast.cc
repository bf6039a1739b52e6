#include "kernels/cpu/broadcast.h"

#include <algorithm>
#include <string>

#include "kernels/cpu/small_vector.h"

namespace actorflow {
namespace cpu {

StatusOr<Shape> BroadcastShape(const Shape& x, const Shape& y) {
  const int rank = std::max(x.rank(), y.rank());
  std::vector<int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) {
    // Dimension i counted from the end; a missing leading dimension acts as 1.
    const int xi = x.rank() - rank + i;
    const int yi = y.rank() - rank + i;
    const int64_t a = xi >= 0 ? x.dim(xi) : 1;
    const int64_t b = yi >= 0 ? y.dim(yi) : 1;
    if (a == b || b == 1) {
      dims[i] = a;
    } else if (a == 1) {
      dims[i] = b;
    } else {
      return InvalidArgument("incompatible shapes for broadcasting: " + x.ToString() + " and " +
                             y.ToString());
    }
  }
  return Shape(std::move(dims));
}

StatusOr<BroadcastPlan> PlanBroadcast(const Shape& x, const Shape& y) {
  BroadcastPlan plan;
  if (x == y) {
    // The common case, planned on every step of every element-wise kernel: nothing
    // stretches, so the walk below would find kSame.
    AF_ASSIGN_OR_RETURN(plan.num_elements, x.CheckedNumElements());
    plan.out_shape = x;
    return plan;
  }
  AF_ASSIGN_OR_RETURN(Shape out, BroadcastShape(x, y));
  plan.out_shape = out;
  // Checked: inputs with a 0 dim can carry huge other dims.
  AF_ASSIGN_OR_RETURN(plan.num_elements, out.CheckedNumElements());
  if (plan.num_elements == 0) return plan;  // nothing to walk

  // Coalesce: per kept output dimension, its size and whether x / y are broadcast.
  const int rank = out.rank();
  SmallVector<int64_t, 8> dims;
  SmallVector<char, 8> x_bcast;  // flags (std::vector<bool> has no data())
  SmallVector<char, 8> y_bcast;
  for (int i = 0; i < rank; ++i) {
    const int64_t d = out.dim(i);
    if (d == 1) continue;
    const int xi = x.rank() - rank + i;
    const int yi = y.rank() - rank + i;
    const bool xb = xi < 0 || x.dim(xi) == 1;
    const bool yb = yi < 0 || y.dim(yi) == 1;
    if (!dims.empty() && x_bcast.back() == xb && y_bcast.back() == yb) {
      dims.back() *= d;
    } else {
      dims.push_back(d);
      x_bcast.push_back(xb);
      y_bcast.push_back(yb);
    }
  }

  bool any_x = false;
  bool all_x = true;
  bool any_y = false;
  bool all_y = true;
  for (size_t i = 0; i < dims.size(); ++i) {
    any_x = any_x || x_bcast[i];
    all_x = all_x && x_bcast[i];
    any_y = any_y || y_bcast[i];
    all_y = all_y && y_bcast[i];
  }
  if (!any_x && !any_y) {
    plan.kind = BroadcastPlan::Kind::kSame;  // includes the all-ones case (dims empty)
  } else if (all_x) {
    plan.kind = BroadcastPlan::Kind::kScalarX;
  } else if (all_y) {
    plan.kind = BroadcastPlan::Kind::kScalarY;
  } else {
    plan.kind = BroadcastPlan::Kind::kGeneral;
    const int r = static_cast<int>(dims.size());
    plan.x_strides.assign(r, 0);
    plan.y_strides.assign(r, 0);
    int64_t xs = 1;
    int64_t ys = 1;
    for (int i = r - 1; i >= 0; --i) {
      if (!x_bcast[i]) {
        plan.x_strides[i] = xs;
        xs *= dims[i];
      }
      if (!y_bcast[i]) {
        plan.y_strides[i] = ys;
        ys *= dims[i];
      }
    }
    plan.dims.assign(dims.begin(), dims.end());
  }
  return plan;
}

}  // namespace cpu
}  // namespace actorflow
