// Bytes as tensors: TensorFlow's DecodeRaw (a byte string read as an array of numbers)
// and the tensor form a byte string takes in a dataset.
//
// graph/types.h has neither a string nor a uint8 dtype. A byte string therefore travels
// as a kByteDType (int32) tensor [len] holding one byte per element, each 0..255: every
// kernel handles int32 (Cast to float32 and scale, for pixels), at four times the memory
// of the bytes. When graph/ gains uint8, kByteDType is the one place to change.
//
// Thread safety: pure functions.
#ifndef ACTORFLOW_TRAINING_DATA_DECODE_RAW_H_
#define ACTORFLOW_TRAINING_DATA_DECODE_RAW_H_

#include <string>
#include <string_view>

#include "graph/status.h"
#include "graph/tensor.h"
#include "graph/types.h"

namespace actorflow {

// The dtype of a tensor that holds bytes, one per element (values 0..255).
inline constexpr DType kByteDType = DType::kInt32;

// The element types DecodeRaw reads. Those narrower than 32 bits widen to int32.
enum class RawType { kUInt8, kInt8, kUInt16, kInt16, kInt32, kInt64, kFloat32, kFloat64 };

// "uint8", "int16", "float32", ...
const char* RawTypeName(RawType type);
// Bytes per element: 1, 1, 2, 2, 4, 8, 4, 8.
size_t RawTypeSize(RawType type);

// `bytes` as a vector [bytes.size() / RawTypeSize(type)] of `type`'s values in the byte
// order given (TensorFlow's default is little endian), as: int32 for kUInt8, kInt8,
// kUInt16, kInt16 and kInt32; int64; float32; float64. InvalidArgument when the size is
// not a multiple of the element's size.
StatusOr<Tensor> DecodeRaw(std::string_view bytes, RawType type, bool little_endian = true);

// DecodeRaw(bytes, kUInt8): the kByteDType tensor [len] of a byte string.
Tensor BytesToTensor(std::string_view bytes);

// The byte string a BytesToTensor tensor holds. InvalidArgument, naming the tensor,
// unless it is a kByteDType vector with every value in 0..255.
StatusOr<std::string> TensorToBytes(const Tensor& tensor);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DATA_DECODE_RAW_H_
