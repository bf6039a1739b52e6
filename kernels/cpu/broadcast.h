// NumPy broadcasting for element-wise binary kernels: the output shape of two operand
// shapes, and a plan that walks both operands in output order with as few, as long
// contiguous inner loops as possible.
//
// The plan coalesces the output's dimensions: dimensions of size 1 are dropped and
// neighbouring dimensions merge when each operand is either broadcast in both or in
// neither. What remains is classified so the common cases run as one flat loop:
//   kSame     x and y have the output's elements in the same order  ([N,C] op [N,C])
//   kScalarX  x has one element                                     ([] op [N,C])
//   kScalarY  y has one element                                     ([N,C] op [])
//   kGeneral  anything else, e.g. a row broadcast [N,C] op [C] (dims {N,C}, x strides
//             {C,1}, y strides {0,1}) or an outer product [N,1] op [1,C].
// In the general case the innermost coalesced dimension is walked by a tight loop in
// which each operand advances by 1 or stays put (stride 0).
//
// Thread safety: plans are immutable values; BinaryLoop only reads its inputs.
#ifndef ACTORFLOW_KERNELS_CPU_BROADCAST_H_
#define ACTORFLOW_KERNELS_CPU_BROADCAST_H_

#include <cstdint>
#include <vector>

#include "graph/shape.h"
#include "graph/status.h"

namespace actorflow {
namespace cpu {

// The broadcast of two fully defined shapes: trailing dimensions are aligned and a
// dimension of 1 stretches. InvalidArgument (without node context) when they clash.
StatusOr<Shape> BroadcastShape(const Shape& x, const Shape& y);

struct BroadcastPlan {
  enum class Kind { kSame, kScalarX, kScalarY, kGeneral };

  Kind kind = Kind::kSame;
  Shape out_shape;
  int64_t num_elements = 0;  // of out_shape
  // kGeneral only: the coalesced output dimensions (rank >= 1) and, for each operand,
  // its element stride along each of them (0 where it is broadcast). The innermost
  // strides are 0 or 1.
  std::vector<int64_t> dims;
  std::vector<int64_t> x_strides;
  std::vector<int64_t> y_strides;
};

// InvalidArgument (without node context) when the shapes do not broadcast.
StatusOr<BroadcastPlan> PlanBroadcast(const Shape& x, const Shape& y);

namespace internal {

// out[i] = op(x[i * sx], y[i * sy]) for i < n, with sx, sy in {0, 1}; each stride
// combination gets its own loop so that the compiler can vectorize it.
template <typename T, typename R, typename Op>
inline void BinaryInner(const T* __restrict x, int64_t sx, const T* __restrict y, int64_t sy,
                        R* __restrict out, int64_t n, Op& op) {
  if (sx == 1 && sy == 1) {
    for (int64_t i = 0; i < n; ++i) out[i] = op(x[i], y[i]);
  } else if (sx == 1) {
    const T b = *y;
    for (int64_t i = 0; i < n; ++i) out[i] = op(x[i], b);
  } else if (sy == 1) {
    const T a = *x;
    for (int64_t i = 0; i < n; ++i) out[i] = op(a, y[i]);
  } else {
    const R v = op(*x, *y);
    for (int64_t i = 0; i < n; ++i) out[i] = v;
  }
}

}  // namespace internal

// BinaryLoop with the output written over the operand that has the output's shape
// (plan.kind kSame or kScalarY: x, kScalarX: y): `full` holds that operand and
// receives the result, `other` is the other operand (a scalar unless kSame).
// `other_is_y` says which side of op `full` is on.
template <typename T, typename Op>
void BinaryInPlace(const BroadcastPlan& plan, bool other_is_y, T* full, const T* other,
                   Op& op) {
  const int64_t n = plan.num_elements;
  if (plan.kind == BroadcastPlan::Kind::kSame) {
    if (other_is_y) {
      for (int64_t i = 0; i < n; ++i) full[i] = op(full[i], other[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) full[i] = op(other[i], full[i]);
    }
    return;
  }
  const T b = *other;
  if (other_is_y) {
    for (int64_t i = 0; i < n; ++i) full[i] = op(full[i], b);
  } else {
    for (int64_t i = 0; i < n; ++i) full[i] = op(b, full[i]);
  }
}

// Writes out[i] = op(x[.], y[.]) for every output element i of `plan`. `op` is called
// as op(T, T) -> R and may keep state (an error flag). `out` holds
// plan.num_elements elements and must not alias x or y.
template <typename T, typename R, typename Op>
void BinaryLoop(const BroadcastPlan& plan, const T* x, const T* y, R* out, Op& op) {
  const int64_t n = plan.num_elements;
  if (n == 0) return;
  switch (plan.kind) {
    case BroadcastPlan::Kind::kSame:
      internal::BinaryInner(x, 1, y, 1, out, n, op);
      return;
    case BroadcastPlan::Kind::kScalarX:
      internal::BinaryInner(x, 0, y, 1, out, n, op);
      return;
    case BroadcastPlan::Kind::kScalarY:
      internal::BinaryInner(x, 1, y, 0, out, n, op);
      return;
    case BroadcastPlan::Kind::kGeneral:
      break;
  }
  const int rank = static_cast<int>(plan.dims.size());
  const int64_t inner = plan.dims[rank - 1];
  const int64_t sx = plan.x_strides[rank - 1];
  const int64_t sy = plan.y_strides[rank - 1];
  const int64_t rows = n / inner;
  // Odometer over the outer dimensions, tracking each operand's offset.
  std::vector<int64_t> index(rank > 1 ? rank - 1 : 0, 0);
  int64_t x_offset = 0;
  int64_t y_offset = 0;
  for (int64_t row = 0; row < rows; ++row) {
    internal::BinaryInner(x + x_offset, sx, y + y_offset, sy, out + row * inner, inner, op);
    for (int d = rank - 2; d >= 0; --d) {
      x_offset += plan.x_strides[d];
      y_offset += plan.y_strides[d];
      if (++index[d] < plan.dims[d]) break;
      x_offset -= plan.x_strides[d] * plan.dims[d];
      y_offset -= plan.y_strides[d] * plan.dims[d];
      index[d] = 0;
    }
  }
}

}  // namespace cpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CPU_BROADCAST_H_
