// The bytes of TensorBoard event files (TensorFlow's format), encoded by hand so
// that no protobuf library is needed: the `tensorflow.Event` / `Summary` messages that
// scalar summaries use. An event file is a TFRecord file of Events; the framing
// (Crc32c, MaskCrc, FrameRecord) is training/data/tfrecord.h's, included here.
//
// Wire contract (what TensorBoard reads):
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

#include "training/data/tfrecord.h"

namespace actorflow {

// The file_version of an event file's first record.
constexpr char kEventFileVersion[] = "brain.Event:2";

// The serialized Event that opens an event file: wall_time and file_version.
std::string EncodeFileVersionEvent(double wall_time);

// The serialized Event holding scalar summaries (tag, value) at `step`.
std::string EncodeScalarsEvent(double wall_time, int64_t step,
                               const std::vector<std::pair<std::string, float>>& scalars);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_SUMMARY_EVENT_FILE_H_
