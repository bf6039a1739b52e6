#include "graph/checked_size.h"

#include <limits>
#include <string>

namespace actorflow {
namespace {

std::string TooLarge(const Shape& shape, const std::string& what) {
  return "shape " + shape.ToString() + " has more " + what + " than an int64 can count (at most " +
         std::to_string(std::numeric_limits<int64_t>::max()) + ")";
}

}  // namespace

StatusOr<int64_t> CheckedByteSize(DType dtype, const Shape& shape) {
  AF_ASSIGN_OR_RETURN(int64_t elements, shape.CheckedNumElements());
  int64_t bytes = 0;
  if (!CheckedMul(elements, static_cast<int64_t>(DTypeSize(dtype)), &bytes)) {
    return InvalidArgument(TooLarge(shape, std::string("bytes of ") + DTypeName(dtype)));
  }
  return bytes;
}

Status CheckRepresentableShape(const Shape& shape, DType dtype) {
  if (shape.unknown_rank()) return Status::OK();
  AF_RETURN_IF_ERROR(shape.CheckRankLimit());
  int64_t known = 1;
  bool overflowed = false;
  for (int64_t d : shape.dims()) {
    if (d < Shape::kUnknownDim) {
      return InvalidArgument("shape " + shape.ToString() + " has a negative dimension " +
                             std::to_string(d) + " (only -1, unknown, may be negative)");
    }
    if (d == 0) return Status::OK();
    if (d > 0 && !overflowed && !CheckedMul(known, d, &known)) overflowed = true;
  }
  if (overflowed) return InvalidArgument(TooLarge(shape, "elements"));
  int64_t bytes = 0;
  if (!CheckedMul(known, static_cast<int64_t>(DTypeSize(dtype)), &bytes)) {
    return InvalidArgument(TooLarge(shape, std::string("bytes of ") + DTypeName(dtype)));
  }
  return Status::OK();
}

}  // namespace actorflow
