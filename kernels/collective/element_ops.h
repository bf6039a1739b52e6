// The element-wise arithmetic and byte moves of the collective algorithms (internal to
// kernels/collective). Each function writes either a fresh host buffer or, for the
// *Into ones, the one tensor it is given to write (a view of a result the
// algorithm owns), and only reads its other arguments: they may be the caller's
// tensor or a peer's (shared, read-only).
// Preconditions, unless stated: host tensors of a reducible dtype (IsReducibleDType).
#ifndef ACTORFLOW_KERNELS_COLLECTIVE_ELEMENT_OPS_H_
#define ACTORFLOW_KERNELS_COLLECTIVE_ELEMENT_OPS_H_

#include <cstdint>
#include <vector>

#include "graph/shape.h"
#include "graph/tensor.h"
#include "graph/types.h"

namespace actorflow {
namespace collective_internal {

// float32, float64, int32, int64: the dtypes a reduction takes.
bool IsReducibleDType(DType dtype);

// lower [n] + higher [n], element by element, as a new tensor of `shape` (n elements).
// Both operands' dtype. Integers wrap around. The operand order is part of the
// contract: members that must agree bit for bit pass the lower rank's values first.
Tensor AddElements(const Tensor& lower, const Tensor& higher, const Shape& shape);

// As AddElements, written into *out ([n] elements, the operands' dtype), which may
// be neither operand; with divisor > 1 each sum is divided as DivideElements does,
// in the same pass (the same bits as adding, then dividing).
void AddElementsInto(const Tensor& lower, const Tensor& higher, Tensor* out, int divisor = 1);

// sum [n] / divisor, element by element, as a new tensor of sum's dtype and shape:
// a float division (not a multiplication by 1/divisor) or a truncating integer one.
// Precondition: divisor >= 1.
Tensor DivideElements(const Tensor& sum, int divisor);

// value's bytes into *out. Any dtype; precondition: the same byte count.
void CopyElementsInto(const Tensor& value, Tensor* out);

// The bytes of `parts`, one after the other, as a new tensor of dtype and shape.
// Any dtype. Precondition: the parts have `dtype` and their byte counts add up to
// the result's.
Tensor ConcatenateBytes(const std::vector<Tensor>& parts, DType dtype, const Shape& shape);

// A [elements] view of `t` (no copy).
Tensor Flattened(const Tensor& t);

}  // namespace collective_internal
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_COLLECTIVE_ELEMENT_OPS_H_
