// IDX files: the array format of MNIST and its relatives (Fashion-MNIST, EMNIST,
// KMNIST), read whole into memory, gzipped or not.
//
// Format (http://yann.lecun.com/exdb/mnist/):
//   bytes 0-1  0x00 0x00
//   byte  2    element type: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32,
//              0x0D float32, 0x0E float64
//   byte  3    number of dims, D
//   then D big-endian uint32 dims, then the elements, row-major, big-endian.
// A file that starts with the gzip magic 0x1f 0x8b is decompressed on the fly (several
// concatenated gzip members read as one stream, as gunzip does); its CRC is checked.
//
// Contract: a read either returns the whole array the dims describe, or an error whose
// message names the file (and the byte offset where one applies); never a shortened
// array. The codes:
//   NotFound          the file does not exist
//   InvalidArgument   not an IDX file (wrong magic, unknown element type), dims whose
//                     product overflows int64 or that need more bytes than the file
//                     could hold even compressed, or bytes after the data
//   ResourceExhausted the data is larger than IdxReadOptions::max_data_bytes
//   Internal          "data loss: ..." (graph/status.h has no DataLoss code): the file
//                     ends before its dims say, or its gzip stream is corrupt or cut
//                     short. The message says where.
// Before allocating, the size the dims claim is checked against what the file can
// hold, so a few bytes with absurd dims fail fast instead of allocating gigabytes.
//
// The project's Tensor has no uint8 dtype: ReadIdxTensor widens the integer types to
// int32 (exact for every IDX integer type) and keeps float32/float64. ReadIdxFile
// gives the raw bytes, which for uint8 files (images, labels) are the values.
//
// Thread safety: the functions are reentrant; they share no state.
#ifndef ACTORFLOW_TRAINING_DATA_IDX_FILE_H_
#define ACTORFLOW_TRAINING_DATA_IDX_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/shape.h"
#include "graph/status.h"
#include "graph/tensor.h"

namespace actorflow {

// The element types an IDX file may declare (the value is the type byte).
enum class IdxElementType : uint8_t {
  kUInt8 = 0x08,
  kInt8 = 0x09,
  kInt16 = 0x0B,
  kInt32 = 0x0C,
  kFloat32 = 0x0D,
  kFloat64 = 0x0E,
};

// "uint8", "int8", "int16", "int32", "float32", "float64".
const char* IdxElementTypeName(IdxElementType type);
// Bytes per element: 1, 1, 2, 4, 4, 8.
int IdxElementSize(IdxElementType type);

struct IdxReadOptions {
  // The most bytes of element data a file may hold (after decompression); larger
  // files are refused with ResourceExhausted before anything is allocated. The
  // default fits the MNIST family (Fashion-MNIST's training images: 47 MB) with room.
  int64_t max_data_bytes = int64_t{4} << 30;
};

// An IDX file's contents as stored.
struct IdxArray {
  IdxElementType type = IdxElementType::kUInt8;
  // One dim per header dim, in file order: [N, rows, cols] for images, [N] for labels.
  Shape shape;
  // shape.num_elements() * IdxElementSize(type) bytes: the elements row-major, each
  // big-endian as in the file. For uint8 these are the values themselves.
  std::vector<uint8_t> data;
};

// Reads the whole file at `path` (plain or gzipped). Errors: see the header comment.
StatusOr<IdxArray> ReadIdxFile(const std::string& path,
                               const IdxReadOptions& options = IdxReadOptions());

// The file as a Tensor of its shape: int32 for the integer types (uint8 0..255,
// int8/int16 sign-extended), float32 or float64 for the floating ones.
StatusOr<Tensor> ReadIdxTensor(const std::string& path,
                               const IdxReadOptions& options = IdxReadOptions());

// `array` as ReadIdxTensor would return it (the bytes converted to host order).
Tensor IdxArrayToTensor(const IdxArray& array);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DATA_IDX_FILE_H_
