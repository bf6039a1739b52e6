#include "training/summary/event_file_reader.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>
#include <system_error>

#include "training/data/proto_wire.h"
#include "training/summary/event_file.h"

namespace actorflow {
namespace {

namespace fs = std::filesystem;

using proto_wire::kFixed32;
using proto_wire::kFixed64;
using proto_wire::kLengthDelimited;
using proto_wire::kVarint;
using proto_wire::WireReader;

// Summary.Value: appends (tag, simple_value) to `scalars` when it has a simple_value.
Status DecodeValue(std::string_view bytes, std::vector<std::pair<std::string, float>>* scalars) {
  WireReader reader(bytes);
  std::string tag;
  bool has_simple_value = false;
  float simple_value = 0.0f;
  while (!reader.done()) {
    AF_ASSIGN_OR_RETURN(uint64_t key, reader.Varint());
    const auto field = static_cast<uint32_t>(key >> 3);
    const auto wire_type = static_cast<uint32_t>(key & 7);
    if (field == 1) {
      AF_RETURN_IF_ERROR(reader.ExpectWireType({field, wire_type}, kLengthDelimited));
      AF_ASSIGN_OR_RETURN(tag, reader.LengthDelimited());
    } else if (field == 2) {
      AF_RETURN_IF_ERROR(reader.ExpectWireType({field, wire_type}, kFixed32));
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

Status DecodeSummary(std::string_view bytes, Event* event) {
  WireReader reader(bytes);
  while (!reader.done()) {
    AF_ASSIGN_OR_RETURN(uint64_t key, reader.Varint());
    const auto field = static_cast<uint32_t>(key >> 3);
    const auto wire_type = static_cast<uint32_t>(key & 7);
    if (field == 1) {
      AF_RETURN_IF_ERROR(reader.ExpectWireType({field, wire_type}, kLengthDelimited));
      AF_ASSIGN_OR_RETURN(std::string_view value, reader.LengthDelimited());
      AF_RETURN_IF_ERROR(DecodeValue(value, &event->scalars).WithContext("Summary.Value"));
    } else {
      AF_RETURN_IF_ERROR(reader.Skip(wire_type));
    }
  }
  return Status::OK();
}

}  // namespace

StatusOr<Event> DecodeEvent(const std::string& payload) {
  Event event;
  WireReader reader(payload);
  while (!reader.done()) {
    AF_ASSIGN_OR_RETURN(uint64_t key, reader.Varint());
    const auto field = static_cast<uint32_t>(key >> 3);
    const auto wire_type = static_cast<uint32_t>(key & 7);
    if (field == 1) {
      AF_RETURN_IF_ERROR(reader.ExpectWireType({field, wire_type}, kFixed64));
      AF_ASSIGN_OR_RETURN(uint64_t bits, reader.Fixed(8));
      std::memcpy(&event.wall_time, &bits, sizeof(event.wall_time));
    } else if (field == 2) {
      AF_RETURN_IF_ERROR(reader.ExpectWireType({field, wire_type}, kVarint));
      AF_ASSIGN_OR_RETURN(uint64_t step, reader.Varint());
      event.step = static_cast<int64_t>(step);  // int64: two's complement varint
    } else if (field == 3) {
      AF_RETURN_IF_ERROR(reader.ExpectWireType({field, wire_type}, kLengthDelimited));
      AF_ASSIGN_OR_RETURN(event.file_version, reader.LengthDelimited());
    } else if (field == 5) {
      AF_RETURN_IF_ERROR(reader.ExpectWireType({field, wire_type}, kLengthDelimited));
      AF_ASSIGN_OR_RETURN(std::string_view summary, reader.LengthDelimited());
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
    offset += kTFRecordHeaderBytes + record.size() + kTFRecordFooterBytes;
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
