// Reads TensorBoard event files back: the TFRecord framing (training/data/tfrecord.h)
// and the Event / Summary messages of training/summary/event_file.h, decoded by hand
// (training/data/proto_wire.h; no protobuf library), and a log directory's scalar series
// per run, as `tensorboard --logdir` would show them.
//
// Contract:
//  - Both masked CRC-32Cs of every record are checked. A mismatch means the file is
//    damaged: an error naming the file and the record's byte offset, its message
//    starting with "data loss: " (Internal: graph/status.h has no DataLoss code).
//  - A file that ends inside a record (a writer still running, or killed) yields the
//    complete records before it and a warning naming the file and offset, as
//    TensorBoard does: the partial record is not an error.
//  - Event fields other than wall_time (1), step (2), file_version (3) and summary (5),
//    and Summary.Value fields other than tag (1) and simple_value (2) (images,
//    histograms, tensors) are skipped, so files written by TensorFlow read too; a
//    value without simple_value is not a scalar.
//  - A run is a directory holding files named "events.out.tfevents.*": the log
//    directory itself (run ".") or any directory below it (run "worker_0",
//    "a/b"). A run's files are read in name order (their names start with the
//    creation time), so a restarted writer's points follow the earlier ones.
//
// Thread safety: pure functions of their arguments and the files they read.
#ifndef ACTORFLOW_TRAINING_SUMMARY_EVENT_FILE_READER_H_
#define ACTORFLOW_TRAINING_SUMMARY_EVENT_FILE_READER_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "graph/status.h"
#include "training/data/tfrecord.h"

namespace actorflow {

// The prefix of an event file's name (events.out.tfevents.<seconds>.<host>).
inline constexpr char kEventFileNamePrefix[] = "events.out.tfevents.";

// One decoded tensorflow.Event.
struct Event {
  double wall_time = 0.0;
  int64_t step = 0;
  std::string file_version;  // set in a file's first event only
  // Summary.Value entries that hold a simple_value, in record order.
  std::vector<std::pair<std::string, float>> scalars;
};

// The records of a file's bytes: SplitRecords (training/data/tfrecord.h, included here).

// Decodes one record's payload as an Event. InvalidArgument for bytes that are no
// protobuf message (a truncated varint, a length past the end, a bad wire type).
StatusOr<Event> DecodeEvent(const std::string& payload);

// What one event file holds.
struct EventFileContents {
  std::vector<Event> events;
  std::string warning;  // empty, or why the file's last record was dropped
};

// Reads and decodes the event file at `path`. NotFound when it cannot be read; a
// CRC or decoding error names the file and the record's offset.
StatusOr<EventFileContents> ReadEventFile(const std::string& path);

// One scalar: the step it was logged at and its value.
struct ScalarPoint {
  int64_t step = 0;
  double value = 0.0;
};

// Everything scalar in a log directory: run -> tag -> points in file order.
struct LogdirScalars {
  std::map<std::string, std::map<std::string, std::vector<ScalarPoint>>> runs;
  std::vector<std::string> warnings;  // one per truncated file
  int event_files = 0;
};

// Reads every event file under `logdir` (recursively). NotFound naming `logdir` when
// it is not a directory or holds no event file; the first file error otherwise.
StatusOr<LogdirScalars> ReadLogdirScalars(const std::string& logdir);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_SUMMARY_EVENT_FILE_READER_H_
