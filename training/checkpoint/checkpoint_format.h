// The on-disk format of a checkpoint (format "actorflow.checkpoint/1"): how its
// tensors are laid out, described and verified. training/checkpoint/checkpoint.h writes and
// restores checkpoints with it; tools read them through ReadCheckpoint there.
//
// A checkpoint with prefix "<dir>/ckpt-<step>" is two files:
//   ckpt-<step>.data  the tensors' bytes, concatenated in manifest order, each
//                     row-major and little-endian (bool: one byte, 0 or 1);
//   ckpt-<step>.json  the manifest:
//     {"format": "actorflow.checkpoint/1", "global_step": <step>,
//      "tensors": [{"name": "w", "dtype": "float32", "shape": [2, 3],
//                   "offset": 0, "size": 24, "checksum": 2768625435}, ...]}
//   where offset and size locate the tensor's bytes in the data file (size =
//   elements x dtype size) and checksum is the CRC-32 of those bytes (IEEE 802.3
//   polynomial, reflected, initial value and final xor 0xFFFFFFFF: zlib's crc32),
//   as a JSON unsigned integer.
// The manifest's presence is what makes a checkpoint exist: writers put the data file
// in place first. "<dir>/latest" holds the basename of the newest checkpoint.
//
// Thread safety: every function here is pure or touches only the files it names.
#ifndef ACTORFLOW_TRAINING_CHECKPOINT_CHECKPOINT_FORMAT_H_
#define ACTORFLOW_TRAINING_CHECKPOINT_CHECKPOINT_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/shape.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "graph/types.h"

namespace actorflow {

inline constexpr char kCheckpointFormat[] = "actorflow.checkpoint/1";
inline constexpr char kCheckpointDataSuffix[] = ".data";
inline constexpr char kCheckpointManifestSuffix[] = ".json";
inline constexpr char kLatestCheckpointFile[] = "latest";
// A checkpoint's global step lies in [0, kMaxCheckpointStep]: a step restored from
// it is counted on from there, and 2^62 leaves room to count without overflow.
inline constexpr int64_t kMaxCheckpointStep = int64_t{1} << 62;

// CRC-32 (zlib's) of `size` bytes, continuing from `crc` (the CRC of the bytes
// before them; 0 to start): Crc32("123456789", 9) == 0xCBF43926.
uint32_t Crc32(const void* data, size_t size, uint32_t crc = 0);

// One tensor of a manifest.
struct CheckpointEntry {
  std::string name;
  DType dtype = DType::kFloat32;
  Shape shape;          // fully defined
  uint64_t offset = 0;  // in the data file
  uint64_t size = 0;    // bytes: shape.num_elements() * DTypeSize(dtype)
  uint32_t checksum = 0;
};

struct CheckpointManifest {
  int64_t global_step = 0;
  std::vector<CheckpointEntry> tensors;  // names unique
};

// InvalidArgument naming the step unless 0 <= global_step <= kMaxCheckpointStep.
Status CheckCheckpointStep(int64_t global_step);

// "ckpt-<step>" and its inverse (nullopt for any other name, e.g. a temporary
// file's: only "ckpt-" followed by an optional '-' and decimal digits).
std::string CheckpointBasename(int64_t global_step);
std::optional<int64_t> ParseCheckpointBasename(std::string_view basename);

// The manifest for `tensors` (in that order; names unique), laid out back to back
// from offset 0 with their checksums computed. Precondition: each tensor is
// initialized.
CheckpointManifest BuildManifest(int64_t global_step,
                                 const std::vector<std::pair<std::string, Tensor>>& tensors);

// The manifest as JSON text (one tensor per line, newline-terminated).
std::string ManifestToJsonText(const CheckpointManifest& manifest);

// Parses and checks a manifest read from `path` (named in every error). All
// InvalidArgument: malformed JSON ("<path>: malformed JSON at line L, column C: ..."),
// another format, a missing or mistyped key, an unknown dtype, a negative dimension,
// a duplicate name, a size that does not match dtype and shape, or tensors that
// overlap in the data file.
StatusOr<CheckpointManifest> ParseManifest(std::string_view text, const std::string& path);

// The steps of the checkpoints among `names` (a directory listing) that have a
// "ckpt-<step><suffix>" file, ascending: kCheckpointManifestSuffix gives the complete
// checkpoints, kCheckpointDataSuffix every data file (orphans without a manifest too).
std::vector<int64_t> CheckpointStepsWithSuffix(const std::vector<std::string>& names,
                                               const std::string& suffix);

// Reads and parses the manifest "<prefix>.json": NotFound naming the checkpoint and
// its manifest when the file does not exist; ParseManifest's errors.
StatusOr<CheckpointManifest> ReadManifestFile(const std::string& prefix);

// OK unless `tensor` is float32/float64 and holds a NaN or an infinity: then
// InvalidArgument naming `name`, the first such element and its value. Checkpoints
// refuse non-finite weights on save and on load (a diverged model is not one to keep
// or to serve).
Status CheckFiniteValues(const std::string& name, const Tensor& tensor);

// Reads every tensor of `manifest` from the data file `data_path` and verifies it.
// Errors: NotFound when the data file is missing; Internal (the checkpoint is
// corrupted; actorflow has no DataLoss code) naming the file when its size is not
// what the manifest describes, and naming the tensor with "checksum mismatch" when a
// tensor's bytes do not have its checksum (and "invalid bool" for a bool byte that is
// neither 0 nor 1); InvalidArgument (CheckFiniteValues') naming the data file and the
// tensor for a NaN or infinite float; Unavailable for an I/O error.
StatusOr<std::map<std::string, Tensor>> ReadCheckpointTensors(const CheckpointManifest& manifest,
                                                              const std::string& data_path);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_CHECKPOINT_CHECKPOINT_FORMAT_H_
