// SummaryWriter: writes scalar summaries (a tag, a float, a step) to a TensorBoard
// event file, `events.out.tfevents.<unix seconds>.<hostname>` in a run directory,
// so that `tensorboard --logdir` plots them. The bytes are training/summary/event_file.h's.
//
// Contract: the file starts with the file_version event; each AddScalar/AddScalars
// call appends one Event record. Records reach the disk on Flush(), every
// kFlushEveryRecords records or kFlushEverySeconds seconds, and on destruction.
// After a failed write the writer keeps returning that error (naming the file).
//
// Thread safety: every method may be called from several threads at once (a mutex
// orders the records).
#ifndef ACTORFLOW_TRAINING_SUMMARY_SUMMARY_WRITER_H_
#define ACTORFLOW_TRAINING_SUMMARY_SUMMARY_WRITER_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "graph/status.h"

namespace actorflow {

class SummaryWriter {
 public:
  static constexpr int kFlushEveryRecords = 32;
  static constexpr double kFlushEverySeconds = 5.0;

  // Creates `logdir` (and its parents) and a new event file in it. An error names
  // `logdir` (or the file) when either cannot be created or written.
  static StatusOr<std::unique_ptr<SummaryWriter>> Create(const std::string& logdir);

  ~SummaryWriter();
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;

  // Appends one Event holding `tag` = `value` at `step`.
  Status AddScalar(const std::string& tag, float value, int64_t step);

  // Appends one Event holding every (tag, value) of `scalars` at `step`.
  Status AddScalars(const std::vector<std::pair<std::string, float>>& scalars, int64_t step);

  // Writes buffered records through to the file.
  Status Flush();

  // The event file's path.
  const std::string& path() const { return path_; }

 private:
  SummaryWriter(std::string path, std::FILE* file);

  // Requires mu_ held.
  Status WriteRecordLocked(const std::string& event);
  Status FlushLocked();

  const std::string path_;
  std::mutex mu_;
  std::FILE* file_;  // guarded by mu_
  Status error_;     // guarded by mu_: the first write failure, sticky
  int unflushed_records_ = 0;
  std::chrono::steady_clock::time_point last_flush_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_SUMMARY_SUMMARY_WRITER_H_
