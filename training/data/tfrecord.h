// TFRecord files (TensorFlow's record format): a sequence of framed records, each a
// payload of any bytes with two masked CRC-32Cs. Training data (tf.train.Example
// records, training/data/example.h) and TensorBoard event files (training/summary/)
// both use it; this is the one implementation of the framing.
//
// Wire contract:
//   record = uint64 length (little endian) | uint32 MaskCrc(Crc32c(the 8 length bytes))
//            | data (length bytes) | uint32 MaskCrc(Crc32c(data))
//
// Damage: graph/status.h has no DataLoss code (TensorFlow's 15), so a damaged file is
// Internal with a message starting "data loss: " (DataLoss() below), naming the file and
// the byte offset of the record: "data loss: PATH: data CRC mismatch in the record at
// offset N: the file is corrupt".
//
// TFRecordReader streams a file one record at a time (memory: one record plus a read
// buffer, whatever the file's size). What it does with damage:
//  - a record whose length CRC does not match: the length cannot be trusted, so
//    nothing after it can be found again (scanning for the next plausible header would
//    accept garbage that happens to match a 32-bit CRC, and TensorFlow does not either).
//    An error, also when skipping corrupt records; the reader is at its end after it.
//  - a record whose length CRC matches but whose data CRC does not: by default an error
//    for that record, and the next ReadRecord goes on with the record after it; with
//    skip_corrupt_records it is skipped and counted (skipped_records()).
//  - a file that ends inside a record (cut short, or a writer still running): by default
//    an error naming the offset where the partial record starts; with
//    skip_corrupt_records that tail is counted as one skipped record. Either way the
//    reader is at its end after it.
// SplitRecords (whole buffers, for event files) instead treats a cut-short tail as a
// warning, as TensorBoard does.
//
// Thread safety: Crc32c, MaskCrc, FrameRecord and SplitRecords are pure and reentrant.
// A TFRecordReader or TFRecordWriter is used by one thread at a time.
#ifndef ACTORFLOW_TRAINING_DATA_TFRECORD_H_
#define ACTORFLOW_TRAINING_DATA_TFRECORD_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graph/status.h"

namespace actorflow {

// The frame around a record's data: length and its CRC before, the data's CRC after.
inline constexpr size_t kTFRecordHeaderBytes = 12;
inline constexpr size_t kTFRecordFooterBytes = 4;

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of `size` bytes at `data`.
uint32_t Crc32c(const void* data, size_t size);

// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t MaskCrc(uint32_t crc);

// `data` framed as one TFRecord (length, masked length CRC, data, masked data CRC).
std::string FrameRecord(std::string_view data);

// Internal("data loss: " + message): a damaged file.
Status DataLoss(const std::string& message);
// True for a status DataLoss() made.
bool IsDataLoss(const Status& status);

// The records of one file's bytes, each a payload whose CRCs were checked. `name`
// names the bytes in messages (the file's path). A trailing partial record sets
// `*warning` (when non-null) to "NAME: truncated record at offset N (...)"; it stays
// untouched otherwise. Error: a CRC mismatch (DataLoss), naming `name`, the offset and
// which CRC.
StatusOr<std::vector<std::string>> SplitRecords(const std::string& bytes, const std::string& name,
                                                std::string* warning);

struct TFRecordReaderOptions {
  // Off: every damaged record is an error. On: a record with a bad data CRC and a
  // cut-short tail are skipped and counted instead (a bad length CRC stays an error;
  // see the top of this file).
  bool skip_corrupt_records = false;
};

// Reads a TFRecord file front to back.
class TFRecordReader {
 public:
  // NotFound naming `path` when it cannot be opened.
  static StatusOr<std::unique_ptr<TFRecordReader>> Open(
      const std::string& path, const TFRecordReaderOptions& options = TFRecordReaderOptions());
  ~TFRecordReader();
  TFRecordReader(const TFRecordReader&) = delete;
  TFRecordReader& operator=(const TFRecordReader&) = delete;

  // Stores the next record's data in *record. OutOfRange ("End of sequence") at the end
  // of the file, and on every later call. DataLoss for damage (see the top of this
  // file), Internal when the file cannot be read; each such error stands for one
  // record: call again to go on (OutOfRange when nothing after it can be read).
  Status ReadRecord(std::string* record);

  // The byte offset where the next record starts.
  uint64_t offset() const { return offset_; }
  // Records skipped so far (skip_corrupt_records only).
  int64_t skipped_records() const { return skipped_; }
  const std::string& path() const { return path_; }

 private:
  TFRecordReader(std::string path, std::FILE* file, uint64_t size,
                 const TFRecordReaderOptions& options);
  // A cut-short record at offset_: the end, skipped or an error.
  Status Truncated(const std::string& what);
  // Whether a record of `length` data bytes at offset_ ends within size_.
  bool RecordFits(uint64_t length) const;
  // Reads exactly `size` bytes into `out`; false at a short read (*error set when the
  // file could not be read, as opposed to ending).
  bool ReadExactly(char* out, size_t size, Status* error);

  std::string path_;
  std::FILE* file_;
  uint64_t size_;  // the file's size when opened: no length past it is allocated
  TFRecordReaderOptions options_;
  uint64_t offset_ = 0;
  int64_t skipped_ = 0;
  bool done_ = false;
  std::unique_ptr<char[]> buffer_;  // stdio's read buffer
};

// Writes a TFRecord file. Records are buffered; Flush() pushes them to the file and
// Close() flushes and closes it. After the first error every call returns it.
class TFRecordWriter {
 public:
  // Creates `path`, or truncates an existing file. FailedPrecondition naming it when it
  // cannot be opened for writing.
  static StatusOr<std::unique_ptr<TFRecordWriter>> Create(const std::string& path);
  // Closes the file if Close() was not called; an error then is lost (call Close()).
  ~TFRecordWriter();
  TFRecordWriter(const TFRecordWriter&) = delete;
  TFRecordWriter& operator=(const TFRecordWriter&) = delete;

  // Appends one record. Internal naming the file when it cannot be written;
  // FailedPrecondition after Close().
  Status Write(std::string_view record);
  Status Flush();
  // Flushes and closes; later calls return the first Close's result.
  Status Close();

  const std::string& path() const { return path_; }
  // Records written so far.
  int64_t records() const { return records_; }

 private:
  TFRecordWriter(std::string path, std::FILE* file);
  Status Fail(const std::string& what);

  std::string path_;
  std::FILE* file_;  // null once closed
  Status error_;
  Status close_status_;
  bool closed_ = false;
  int64_t records_ = 0;
};

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DATA_TFRECORD_H_
