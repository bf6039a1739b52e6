#include "training/summary/event_file_reader.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include "training/summary/event_file.h"

namespace actorflow {
namespace {

namespace fs = std::filesystem;

// Protobuf wire types.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t kLengthDelimited = 2;
constexpr uint32_t kFixed32 = 5;

// TFRecord: uint64 length, uint32 length CRC, data, uint32 data CRC.
constexpr size_t kHeaderBytes = 12;
constexpr size_t kFooterBytes = 4;

// A damaged file. graph/status.h has no DataLoss code (TensorFlow's 15): Internal, with
// the message saying what it is.
Status DataLoss(const std::string& message) {
  return Status(Code::kInternal, "data loss: " + message);
}

uint64_t ReadLittleEndian(const std::string& bytes, size_t at, int size) {
  uint64_t value = 0;
  for (int i = size - 1; i >= 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[at + i]);
  }
  return value;
}

// A cursor over one protobuf message's bytes.
class WireReader {
 public:
  explicit WireReader(const std::string& bytes) : bytes_(bytes) {}

  bool done() const { return at_ >= bytes_.size(); }

  StatusOr<uint64_t> Varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= bytes_.size()) return Malformed("varint runs past the end");
      const auto byte = static_cast<unsigned char>(bytes_[at_++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    return Malformed("varint longer than 10 bytes");
  }

  StatusOr<uint64_t> Fixed(int size) {
    if (bytes_.size() - at_ < static_cast<size_t>(size)) {
      return Malformed("fixed" + std::to_string(8 * size) + " runs past the end");
    }
    const uint64_t value = ReadLittleEndian(bytes_, at_, size);
    at_ += size;
    return value;
  }

  StatusOr<std::string> LengthDelimited() {
    AF_ASSIGN_OR_RETURN(uint64_t length, Varint());
    if (length > bytes_.size() - at_)
      return Malformed("length " + std::to_string(length) + " runs past the end");
    std::string value = bytes_.substr(at_, length);
    at_ += length;
    return value;
  }

  // Skips a field of `wire_type` whose tag was just read.
  Status Skip(uint32_t wire_type) {
    switch (wire_type) {
      case kVarint: return Varint().status();
      case kFixed64: return Fixed(8).status();
      case kLengthDelimited: return LengthDelimited().status();
      case kFixed32: return Fixed(4).status();
      default: return Malformed("unsupported wire type " + std::to_string(wire_type));
    }
  }

  Status Malformed(const std::string& what) const {
    return InvalidArgument("malformed protobuf at byte " + std::to_string(at_) + ": " + what);
  }

 private:
  const std::string& bytes_;
  size_t at_ = 0;
};

Status ExpectWireType(const WireReader& reader, uint32_t field, uint32_t wire_type,
                      uint32_t expected) {
  if (wire_type == expected) return Status::OK();
  return reader.Malformed("field " + std::to_string(field) + " has wire type " +
                          std::to_string(wire_type) + ", expected " + std::to_string(expected));
}

// Summary.Value: appends (tag, simple_value) to `scalars` when it has a simple_value.
Status DecodeValue(const std::string& bytes, std::vector<std::pair<std::string, float>>* scalars) {
  WireReader reader(bytes);
  std::string tag;
  bool has_simple_value = false;
  float simple_value = 0.0f;
  while (!reader.done()) {
    AF_ASSIGN_OR_RETURN(uint64_t key, reader.Varint());
    const auto field = static_cast<uint32_t>(key >> 3);
    const auto wire_type = static_cast<uint32_t>(key & 7);
    if (field == 1) {
      AF_RETURN_IF_ERROR(ExpectWireType(reader, field, wire_type, kLengthDelimited));
      AF_ASSIGN_OR_RETURN(tag, reader.LengthDelimited());
    } else if (field == 2) {
      AF_RETURN_IF_ERROR(ExpectWireType(reader, field, wire_type, kFixed32));
      AF_ASSIGN_OR_RETURN(uint64_t bits, reader.Fixed(4));
      const auto bits32 = static_cast<uint32_t>(bits);
      std::memcpy(&simple_value, &bits32, sizeof(simple_value));
      has_simple_value = true;
    } else {
      AF_RETURN_IF_ERROR(reader.Skip(wire_type));
    }
  }
  if (has_simple_value) scalars->emplace_back(std::move(tag), simple_value);
  return Status::OK();
}

Status DecodeSummary(const std::string& bytes, Event* event) {
  WireReader reader(bytes);
  while (!reader.done()) {
    AF_ASSIGN_OR_RETURN(uint64_t key, reader.Varint());
    const auto field = static_cast<uint32_t>(key >> 3);
    const auto wire_type = static_cast<uint32_t>(key & 7);
    if (field == 1) {
      AF_RETURN_IF_ERROR(ExpectWireType(reader, field, wire_type, kLengthDelimited));
      AF_ASSIGN_OR_RETURN(std::string value, reader.LengthDelimited());
      AF_RETURN_IF_ERROR(DecodeValue(value, &event->scalars).WithContext("Summary.Value"));
    } else {
      AF_RETURN_IF_ERROR(reader.Skip(wire_type));
    }
  }
  return Status::OK();
}

}  // namespace

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
    if (left < kHeaderBytes) {
      truncated("header of " + std::to_string(left) + " of 12 bytes");
      break;
    }
    const uint32_t length_crc = static_cast<uint32_t>(ReadLittleEndian(bytes, at + 8, 4));
    if (length_crc != MaskCrc(Crc32c(bytes.data() + at, 8))) {
      return DataLoss(name + ": length CRC mismatch in the record at offset " + std::to_string(at) +
                      ": the file is corrupt");
    }
    const uint64_t length = ReadLittleEndian(bytes, at, 8);
    if (length > left - kHeaderBytes || left - kHeaderBytes - length < kFooterBytes) {
      truncated(std::to_string(left) + " bytes left of a record of " +
                std::to_string(length + kHeaderBytes + kFooterBytes));
      break;
    }
    std::string data = bytes.substr(at + kHeaderBytes, length);
    const uint32_t data_crc =
        static_cast<uint32_t>(ReadLittleEndian(bytes, at + kHeaderBytes + length, 4));
    if (data_crc != MaskCrc(Crc32c(data.data(), data.size()))) {
      return DataLoss(name + ": data CRC mismatch in the record at offset " + std::to_string(at) +
                      ": the file is corrupt");
    }
    records.push_back(std::move(data));
    at += kHeaderBytes + length + kFooterBytes;
  }
  return records;
}

StatusOr<Event> DecodeEvent(const std::string& payload) {
  Event event;
  WireReader reader(payload);
  while (!reader.done()) {
    AF_ASSIGN_OR_RETURN(uint64_t key, reader.Varint());
    const auto field = static_cast<uint32_t>(key >> 3);
    const auto wire_type = static_cast<uint32_t>(key & 7);
    if (field == 1) {
      AF_RETURN_IF_ERROR(ExpectWireType(reader, field, wire_type, kFixed64));
      AF_ASSIGN_OR_RETURN(uint64_t bits, reader.Fixed(8));
      std::memcpy(&event.wall_time, &bits, sizeof(event.wall_time));
    } else if (field == 2) {
      AF_RETURN_IF_ERROR(ExpectWireType(reader, field, wire_type, kVarint));
      AF_ASSIGN_OR_RETURN(uint64_t step, reader.Varint());
      event.step = static_cast<int64_t>(step);  // int64: two's complement varint
    } else if (field == 3) {
      AF_RETURN_IF_ERROR(ExpectWireType(reader, field, wire_type, kLengthDelimited));
      AF_ASSIGN_OR_RETURN(event.file_version, reader.LengthDelimited());
    } else if (field == 5) {
      AF_RETURN_IF_ERROR(ExpectWireType(reader, field, wire_type, kLengthDelimited));
      AF_ASSIGN_OR_RETURN(std::string summary, reader.LengthDelimited());
      AF_RETURN_IF_ERROR(DecodeSummary(summary, &event).WithContext("Summary"));
    } else {
      AF_RETURN_IF_ERROR(reader.Skip(wire_type));
    }
  }
  return event;
}

StatusOr<EventFileContents> ReadEventFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read event file " + path);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) return NotFound("cannot read event file " + path);
  EventFileContents contents;
  AF_ASSIGN_OR_RETURN(std::vector<std::string> records,
                      SplitRecords(bytes, path, &contents.warning));
  size_t offset = 0;
  for (const std::string& record : records) {
    StatusOr<Event> event = DecodeEvent(record);
    if (!event.ok()) {
      return event.status().WithContext(path + ": the Event in the record at offset " +
                                        std::to_string(offset));
    }
    contents.events.push_back(std::move(*event));
    offset += kHeaderBytes + record.size() + kFooterBytes;
  }
  return contents;
}

StatusOr<LogdirScalars> ReadLogdirScalars(const std::string& logdir) {
  std::error_code error;
  if (!fs::is_directory(logdir, error)) {
    return NotFound("log directory " + logdir + " does not exist or is not a directory");
  }
  // run -> its event files.
  std::map<std::string, std::vector<fs::path>> files;
  fs::recursive_directory_iterator it(logdir, fs::directory_options::skip_permission_denied, error);
  for (; !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    const fs::path& path = it->path();
    if (!it->is_regular_file(error)) continue;
    if (path.filename().string().rfind(kEventFileNamePrefix, 0) != 0) continue;
    const std::string run = path.parent_path().lexically_relative(logdir).string();
    files[run.empty() ? "." : run].push_back(path);
  }
  if (error) return NotFound("cannot list log directory " + logdir + ": " + error.message());
  if (files.empty()) {
    return NotFound("no event files (" + std::string(kEventFileNamePrefix) + "*) in " + logdir +
                    ": write some with `actorflow train --logdir " + logdir + "`");
  }
  LogdirScalars scalars;
  for (auto& [run, paths] : files) {
    std::sort(paths.begin(), paths.end());
    auto& tags = scalars.runs[run];
    for (const fs::path& path : paths) {
      AF_ASSIGN_OR_RETURN(EventFileContents contents, ReadEventFile(path.string()));
      ++scalars.event_files;
      if (!contents.warning.empty()) scalars.warnings.push_back(contents.warning);
      for (const Event& event : contents.events) {
        for (const auto& [tag, value] : event.scalars) {
          tags[tag].push_back(ScalarPoint{event.step, value});
        }
      }
    }
  }
  return scalars;
}

}  // namespace actorflow
