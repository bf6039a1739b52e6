// The bytes of TensorBoard event files (TensorFlow's format), encoded by hand so
// that no protobuf library is needed: CRC-32C, TFRecord framing and the
// `tensorflow.Event` / `Summary` messages that scalar summaries use.
//
// Wire contract (what TensorBoard reads):
//   record = uint64 length (little endian) | uint32 MaskCrc(Crc32c(length bytes))
//            | data | uint32 MaskCrc(Crc32c(data))
//   Event { double wall_time = 1; int64 step = 2;
//           oneof what { string file_version = 3; Summary summary = 5; } }
//   Summary { repeated Value value = 1; }  Value { string tag = 1; float simple_value = 2; }
//
// Thread safety: every function is pure and reentrant.
#ifndef ACTORFLOW_TRAINING_SUMMARY_EVENT_FILE_H_
#define ACTORFLOW_TRAINING_SUMMARY_EVENT_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace actorflow {

// The file_version of an event file's first record.
constexpr char kEventFileVersion[] = "brain.Event:2";

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of `size` bytes at `data`.
uint32_t Crc32c(const void* data, size_t size);

// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t MaskCrc(uint32_t crc);

// `data` framed as one TFRecord (length, masked length CRC, data, masked data CRC).
std::string FrameRecord(const std::string& data);

// The serialized Event that opens an event file: wall_time and file_version.
std::string EncodeFileVersionEvent(double wall_time);

// The serialized Event holding scalar summaries (tag, value) at `step`.
std::string EncodeScalarsEvent(double wall_time, int64_t step,
                               const std::vector<std::pair<std::string, float>>& scalars);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_SUMMARY_EVENT_FILE_H_
