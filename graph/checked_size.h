// Overflow-checked size arithmetic for shapes and byte counts that come from outside
// the process (a graph file, a fed tensor's values, a checkpoint manifest, a message
// from another task). Every place that turns such a shape into an allocation or an
// offset goes through these, so that a shape whose element or byte count does not fit
// in int64 is refused with InvalidArgument instead of wrapping around into a small
// buffer that is then read or written past its end.
//
// Errors carry no node or file name: the caller adds its context
// (Status::WithContext) so that the message names the culprit.
//
// Thread safety: pure functions.
#ifndef ACTORFLOW_GRAPH_CHECKED_SIZE_H_
#define ACTORFLOW_GRAPH_CHECKED_SIZE_H_

#include <cstdint>

#include "graph/shape.h"
#include "graph/status.h"
#include "graph/types.h"

namespace actorflow {

// *out = a * b; false (and *out unspecified) when the product does not fit in int64.
inline bool CheckedMul(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}
// *out = a + b; false (and *out unspecified) when the sum does not fit in int64.
inline bool CheckedAdd(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

// The bytes of a tensor of `dtype` and `shape` (elements x DTypeSize). InvalidArgument
// when the shape is not fully defined (unknown rank, an unknown or negative dim) or
// when the element or byte count does not fit in int64.
StatusOr<int64_t> CheckedByteSize(DType dtype, const Shape& shape);

// For shapes that may be partially known (shape attrs, inferred output shapes):
// InvalidArgument when a dim is negative other than -1 (unknown), or when the known
// dims alone already make more elements, or more bytes of `dtype`, than int64 counts
// (a known 0 dim makes any shape representable). Unknown rank is fine.
Status CheckRepresentableShape(const Shape& shape, DType dtype);

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_CHECKED_SIZE_H_
