#include "training/data/tfrecord.h"

#include <sys/stat.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

#include "training/data/proto_wire.h"

namespace actorflow {
namespace {

using proto_wire::AppendLittleEndian;
using proto_wire::ReadLittleEndian;

constexpr char kDataLossPrefix[] = "data loss: ";
// stdio's buffer for a reader: large sequential reads, few system calls.
constexpr size_t kReadBufferBytes = size_t{1} << 20;

std::array<uint32_t, 256> MakeCrc32cTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? 0x82F63B78u : 0u);
    table[i] = crc;
  }
  return table;
}

uint32_t MaskedCrcOf(const char* data, size_t size) { return MaskCrc(Crc32c(data, size)); }

// The size of an open file now; `fallback` when it cannot be found out.
uint64_t FileSize(std::FILE* file, uint64_t fallback) {
  struct stat info {};
  if (fstat(fileno(file), &info) != 0 || info.st_size < 0) return fallback;
  return static_cast<uint64_t>(info.st_size);
}

}  // namespace

uint32_t Crc32c(const void* data, size_t size) {
  static const std::array<uint32_t, 256> kTable = MakeCrc32cTable();
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) crc = kTable[(crc ^ bytes[i]) & 0xff] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

std::string FrameRecord(std::string_view data) {
  std::string record;
  record.reserve(data.size() + kTFRecordHeaderBytes + kTFRecordFooterBytes);
  AppendLittleEndian(data.size(), 8, &record);
  AppendLittleEndian(MaskedCrcOf(record.data(), 8), 4, &record);
  record.append(data.data(), data.size());
  AppendLittleEndian(MaskedCrcOf(data.data(), data.size()), 4, &record);
  return record;
}

Status DataLoss(const std::string& message) {
  return Status(Code::kInternal, kDataLossPrefix + message);
}

bool IsDataLoss(const Status& status) {
  return status.code() == Code::kInternal && status.message().rfind(kDataLossPrefix, 0) == 0;
}

StatusOr<std::vector<std::string>> SplitRecords(const std::string& bytes, const std::string& name,
                                                std::string* warning) {
  std::vector<std::string> records;
  size_t at = 0;
  auto truncated = [&](const std::string& what) {
    if (warning != nullptr) {
      *warning = name + ": truncated record at offset " + std::to_string(at) + " (" + what +
                 "); read the " + std::to_string(records.size()) + " records before it";
    }
  };
  while (at < bytes.size()) {
    const size_t left = bytes.size() - at;
    if (left < kTFRecordHeaderBytes) {
      truncated("header of " + std::to_string(left) + " of 12 bytes");
      break;
    }
    const auto length_crc = static_cast<uint32_t>(ReadLittleEndian(bytes.data() + at + 8, 4));
    if (length_crc != MaskedCrcOf(bytes.data() + at, 8)) {
      return DataLoss(name + ": length CRC mismatch in the record at offset " + std::to_string(at) +
                      ": the file is corrupt");
    }
    const uint64_t length = ReadLittleEndian(bytes.data() + at, 8);
    if (length > left - kTFRecordHeaderBytes ||
        left - kTFRecordHeaderBytes - length < kTFRecordFooterBytes) {
      truncated(std::to_string(left) + " bytes left of a record of " +
                std::to_string(length + kTFRecordHeaderBytes + kTFRecordFooterBytes));
      break;
    }
    std::string data = bytes.substr(at + kTFRecordHeaderBytes, length);
    const auto data_crc = static_cast<uint32_t>(
        ReadLittleEndian(bytes.data() + at + kTFRecordHeaderBytes + length, 4));
    if (data_crc != MaskedCrcOf(data.data(), data.size())) {
      return DataLoss(name + ": data CRC mismatch in the record at offset " + std::to_string(at) +
                      ": the file is corrupt");
    }
    records.push_back(std::move(data));
    at += kTFRecordHeaderBytes + length + kTFRecordFooterBytes;
  }
  return records;
}

// --- TFRecordReader ----------------------------------------------------------------------

StatusOr<std::unique_ptr<TFRecordReader>> TFRecordReader::Open(
    const std::string& path, const TFRecordReaderOptions& options) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return NotFound("cannot open TFRecord file " + path + ": " + std::strerror(errno));
  }
  return std::unique_ptr<TFRecordReader>(
      new TFRecordReader(path, file, FileSize(file, 0), options));
}

TFRecordReader::TFRecordReader(std::string path, std::FILE* file, uint64_t size,
                               const TFRecordReaderOptions& options)
    : path_(std::move(path)),
      file_(file),
      size_(size),
      options_(options),
      buffer_(new char[kReadBufferBytes]) {
  std::setvbuf(file_, buffer_.get(), _IOFBF, kReadBufferBytes);
}

TFRecordReader::~TFRecordReader() { std::fclose(file_); }

bool TFRecordReader::ReadExactly(char* out, size_t size, Status* error) {
  if (size == 0) return true;
  if (std::fread(out, 1, size, file_) == size) return true;
  if (std::ferror(file_)) {
    *error = Internal("cannot read TFRecord file " + path_ + " at offset " +
                      std::to_string(offset_) + ": " + std::strerror(errno));
  }
  return false;
}

Status TFRecordReader::Truncated(const std::string& what) {
  done_ = true;
  if (options_.skip_corrupt_records) {
    ++skipped_;
    return OutOfRange("End of sequence");
  }
  return DataLoss(path_ + ": truncated record at offset " + std::to_string(offset_) + " (" + what +
                  "): the file was cut short");
}

bool TFRecordReader::RecordFits(uint64_t length) const {
  const uint64_t end_of_header = offset_ + kTFRecordHeaderBytes;
  if (size_ < end_of_header) return false;
  const uint64_t left = size_ - end_of_header;
  return length <= left && left - length >= kTFRecordFooterBytes;
}

Status TFRecordReader::ReadRecord(std::string* record) {
  while (!done_) {
    char header[kTFRecordHeaderBytes];
    const size_t got = std::fread(header, 1, sizeof(header), file_);
    if (got < sizeof(header)) {
      if (std::ferror(file_)) {
        done_ = true;
        return Internal("cannot read TFRecord file " + path_ + " at offset " +
                        std::to_string(offset_) + ": " + std::strerror(errno));
      }
      if (got == 0) break;  // the end, between records
      return Truncated("header of " + std::to_string(got) + " of 12 bytes");
    }
    if (static_cast<uint32_t>(ReadLittleEndian(header + 8, 4)) != MaskedCrcOf(header, 8)) {
      done_ = true;
      return DataLoss(path_ + ": length CRC mismatch in the record at offset " +
                      std::to_string(offset_) +
                      ": the file is corrupt, and nothing after it can be found");
    }
    const uint64_t length = ReadLittleEndian(header, 8);
    const uint64_t record_bytes = kTFRecordHeaderBytes + length + kTFRecordFooterBytes;
    // Checked against the file's size before anything is allocated: a length that
    // passed its CRC may still belong to a record that was cut short.
    if (!RecordFits(length)) size_ = FileSize(file_, size_);  // a file being written grows
    if (!RecordFits(length)) {
      const uint64_t left = size_ > offset_ ? size_ - offset_ : 0;
      return Truncated(std::to_string(left) + " bytes left of a record of " +
                       std::to_string(record_bytes));
    }
    record->resize(static_cast<size_t>(length));
    char footer[kTFRecordFooterBytes];
    Status error;
    if (!ReadExactly(record->data(), record->size(), &error) ||
        !ReadExactly(footer, sizeof(footer), &error)) {
      if (!error.ok()) {
        done_ = true;
        return error;
      }
      return Truncated("the file ended inside a record of " + std::to_string(record_bytes) +
                       " bytes");
    }
    const uint64_t start = offset_;
    offset_ += record_bytes;
    if (static_cast<uint32_t>(ReadLittleEndian(footer, 4)) !=
        MaskedCrcOf(record->data(), record->size())) {
      if (options_.skip_corrupt_records) {
        ++skipped_;
        continue;
      }
      return DataLoss(path_ + ": data CRC mismatch in the record at offset " +
                      std::to_string(start) + ": the file is corrupt");
    }
    return Status::OK();
  }
  done_ = true;
  return OutOfRange("End of sequence");
}

// --- TFRecordWriter ----------------------------------------------------------------------

StatusOr<std::unique_ptr<TFRecordWriter>> TFRecordWriter::Create(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return FailedPrecondition("cannot create TFRecord file " + path + ": " + std::strerror(errno));
  }
  return std::unique_ptr<TFRecordWriter>(new TFRecordWriter(path, file));
}

TFRecordWriter::TFRecordWriter(std::string path, std::FILE* file)
    : path_(std::move(path)), file_(file) {}

TFRecordWriter::~TFRecordWriter() { static_cast<void>(Close()); }

Status TFRecordWriter::Fail(const std::string& what) {
  error_ = Internal("cannot " + what + " TFRecord file " + path_ + ": " + std::strerror(errno));
  return error_;
}

Status TFRecordWriter::Write(std::string_view record) {
  if (closed_) return FailedPrecondition("TFRecord file " + path_ + " is closed");
  if (!error_.ok()) return error_;
  // Framed piece by piece, so the data is not copied into a framed string first.
  std::string header;
  AppendLittleEndian(record.size(), 8, &header);
  AppendLittleEndian(MaskedCrcOf(header.data(), 8), 4, &header);
  std::string footer;
  AppendLittleEndian(MaskedCrcOf(record.data(), record.size()), 4, &footer);
  if (std::fwrite(header.data(), 1, header.size(), file_) != header.size() ||
      std::fwrite(record.data(), 1, record.size(), file_) != record.size() ||
      std::fwrite(footer.data(), 1, footer.size(), file_) != footer.size()) {
    return Fail("write");
  }
  ++records_;
  return Status::OK();
}

Status TFRecordWriter::Flush() {
  if (closed_) return FailedPrecondition("TFRecord file " + path_ + " is closed");
  if (!error_.ok()) return error_;
  if (std::fflush(file_) != 0) return Fail("flush");
  return Status::OK();
}

Status TFRecordWriter::Close() {
  if (closed_) return close_status_;
  closed_ = true;
  close_status_ = error_;
  if (close_status_.ok() && std::fflush(file_) != 0) close_status_ = Fail("flush");
  if (std::fclose(file_) != 0 && close_status_.ok()) close_status_ = Fail("close");
  file_ = nullptr;
  return close_status_;
}

}  // namespace actorflow
