// Checks of a tensor that arrived from another process, before and after its bytes
// are read: shared by CAF's wire format (actors/protocol/wire_core.h) and the bulk channel
// (actors/transport/bulk_channel.h). CAF-free.
#ifndef ACTORFLOW_ACTORS_PROTOCOL_RECEIVED_TENSOR_H_
#define ACTORFLOW_ACTORS_PROTOCOL_RECEIVED_TENSOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/checked_size.h"
#include "graph/status.h"
#include "graph/tensor.h"

namespace actorflow {

// Whether a received tensor header (dtype, dims, byte count) describes a tensor that
// may be allocated: a known dtype, dims >= 0, a byte count that fits in int64 and
// equals `bytes`, and (when known, >= 0) no more bytes than the message has left. The
// decoder checks this before it allocates, so that a corrupt or hostile message is
// refused instead of allocating a wrapped-around size and reading past it.
inline Status CheckReceivedTensor(int32_t dtype, const std::vector<int64_t>& dims, uint64_t bytes,
                                  int64_t bytes_left) {
  if (dtype < static_cast<int32_t>(DType::kFloat32) || dtype > static_cast<int32_t>(DType::kBool)) {
    return InvalidArgument("received tensor has an unknown dtype code " + std::to_string(dtype));
  }
  auto expected = CheckedByteSize(static_cast<DType>(dtype), Shape(dims));
  if (!expected.ok()) return expected.status().WithContext("received tensor");
  if (static_cast<uint64_t>(*expected) != bytes) {
    return InvalidArgument("received tensor " + std::string(DTypeName(static_cast<DType>(dtype))) +
                           Shape(dims).ToString() + " needs " + std::to_string(*expected) +
                           " bytes but the message says " + std::to_string(bytes));
  }
  if (bytes_left >= 0 && bytes > static_cast<uint64_t>(bytes_left)) {
    return InvalidArgument("received tensor of " + std::to_string(bytes) +
                           " bytes but the message has only " + std::to_string(bytes_left) +
                           " left");
  }
  return Status::OK();
}

// OK unless `tensor` is a bool tensor holding a byte other than 0 or 1: such a byte
// is not a bool, and reading it as one is undefined, so a received tensor with one is
// refused (InvalidArgument naming the element and the byte).
inline Status CheckReceivedBools(const Tensor& tensor) {
  if (tensor.dtype() != DType::kBool) return Status::OK();
  const auto* bytes = static_cast<const unsigned char*>(tensor.raw_data());
  for (int64_t i = 0; i < tensor.NumElements(); ++i) {
    if (bytes[i] > 1) {
      return InvalidArgument("received bool tensor: element " + std::to_string(i) + " is byte " +
                             std::to_string(bytes[i]) + ", not 0 or 1");
    }
  }
  return Status::OK();
}

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_PROTOCOL_RECEIVED_TENSOR_H_
