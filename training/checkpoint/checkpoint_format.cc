#include "training/checkpoint/checkpoint_format.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <set>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include "graph/checked_size.h"
#include "graph/tensor_json.h"
#include "training/checkpoint/checkpoint_file.h"

namespace actorflow {

// The data file holds the host's bytes as they are; the format says little-endian.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "checkpoint data files are little-endian; a big-endian host needs byte swaps");

namespace {

using Json = nlohmann::json;

std::array<uint32_t, 256> MakeCrc32Table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}

std::string Hex32(uint32_t v) {
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "0x%08x", v);
  return buffer;
}

// A JSON unsigned integer no larger than `max`, else nullopt.
std::optional<uint64_t> AsUnsigned(const Json& j, uint64_t max) {
  if (!j.is_number_unsigned()) return std::nullopt;
  uint64_t v = j.get<uint64_t>();
  if (v > max) return std::nullopt;
  return v;
}

StatusOr<CheckpointEntry> ParseEntry(const Json& j, size_t index, const std::string& path) {
  const std::string where = path + ": tensors[" + std::to_string(index) + "]";
  if (!j.is_object()) return InvalidArgument(where + " is not an object");
  for (const char* key : {"name", "dtype", "shape", "offset", "size", "checksum"}) {
    if (!j.contains(key)) return InvalidArgument(where + " has no \"" + key + "\"");
  }
  CheckpointEntry entry;
  if (!j["name"].is_string() || j["name"].get<std::string>().empty()) {
    return InvalidArgument(where + ": \"name\" must be a non-empty string");
  }
  entry.name = j["name"].get<std::string>();
  const std::string culprit = path + ": tensor '" + entry.name + "'";
  if (!j["dtype"].is_string()) return InvalidArgument(culprit + ": \"dtype\" must be a string");
  auto dtype = DTypeFromName(j["dtype"].get<std::string>());
  if (!dtype.ok()) return dtype.status().WithContext(culprit);
  entry.dtype = *dtype;

  const Json& shape = j["shape"];
  if (!shape.is_array()) return InvalidArgument(culprit + ": \"shape\" must be a list");
  std::vector<int64_t> dims;
  for (const Json& d : shape) {
    auto dim = AsUnsigned(d, uint64_t{1} << 62);
    if (!dim) {
      return InvalidArgument(culprit + ": shape " + shape.dump() +
                             " is not a list of non-negative integers");
    }
    dims.push_back(static_cast<int64_t>(*dim));
  }
  entry.shape = Shape(std::move(dims));
  // Checked before anything is allocated from it: the data file's size must match.
  StatusOr<int64_t> bytes = CheckedByteSize(entry.dtype, entry.shape);
  if (!bytes.ok()) return bytes.status().WithContext(culprit);

  auto offset = AsUnsigned(j["offset"], uint64_t{1} << 62);
  auto size = AsUnsigned(j["size"], uint64_t{1} << 62);
  auto checksum = AsUnsigned(j["checksum"], 0xFFFFFFFFu);
  if (!offset || !size) {
    return InvalidArgument(culprit + ": \"offset\" and \"size\" must be non-negative integers");
  }
  if (!checksum) return InvalidArgument(culprit + ": \"checksum\" must be a 32-bit unsigned integer");
  entry.offset = *offset;
  entry.size = *size;
  entry.checksum = static_cast<uint32_t>(*checksum);
  if (static_cast<uint64_t>(*bytes) != entry.size) {
    return InvalidArgument(culprit + ": size " + std::to_string(entry.size) + " does not match " +
                           DTypeName(entry.dtype) + entry.shape.ToString() + " (" +
                           std::to_string(*bytes) + " bytes)");
  }
  return entry;
}

}  // namespace

uint32_t Crc32(const void* data, size_t size, uint32_t crc) {
  static const std::array<uint32_t, 256> table = MakeCrc32Table();
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

Status CheckCheckpointStep(int64_t global_step) {
  if (global_step < 0 || global_step > kMaxCheckpointStep) {
    return InvalidArgument("\"global_step\" " + std::to_string(global_step) +
                           " is outside [0, 2^62]: a checkpoint's step counts the updates made");
  }
  return Status::OK();
}

std::string CheckpointBasename(int64_t global_step) {
  return "ckpt-" + std::to_string(global_step);
}

std::optional<int64_t> ParseCheckpointBasename(std::string_view basename) {
  constexpr std::string_view kPrefix = "ckpt-";
  if (basename.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  std::string_view digits = basename.substr(kPrefix.size());
  bool negative = !digits.empty() && digits.front() == '-';
  if (negative) digits.remove_prefix(1);
  if (digits.empty() || digits.size() > 18) return std::nullopt;
  int64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  // Only the canonical spelling, so that a step has exactly one basename.
  if (CheckpointBasename(negative ? -value : value) != basename) return std::nullopt;
  return negative ? -value : value;
}

CheckpointManifest BuildManifest(int64_t global_step,
                                 const std::vector<std::pair<std::string, Tensor>>& tensors) {
  CheckpointManifest manifest;
  manifest.global_step = global_step;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    CheckpointEntry entry;
    entry.name = name;
    entry.dtype = tensor.dtype();
    entry.shape = tensor.shape();
    entry.offset = offset;
    entry.size = tensor.TotalBytes();
    entry.checksum = Crc32(tensor.raw_data(), tensor.TotalBytes());
    offset += entry.size;
    manifest.tensors.push_back(std::move(entry));
  }
  return manifest;
}

std::string ManifestToJsonText(const CheckpointManifest& manifest) {
  std::string text = "{\"format\": " + Json(kCheckpointFormat).dump() +
                     ", \"global_step\": " + std::to_string(manifest.global_step) +
                     ", \"tensors\": [";
  for (size_t i = 0; i < manifest.tensors.size(); ++i) {
    const CheckpointEntry& e = manifest.tensors[i];
    text += i == 0 ? "\n  " : ",\n  ";
    text += "{\"name\": " + Json(e.name).dump() + ", \"dtype\": \"" + DTypeName(e.dtype) +
            "\", \"shape\": " + Json(e.shape.dims()).dump() +
            ", \"offset\": " + std::to_string(e.offset) + ", \"size\": " + std::to_string(e.size) +
            ", \"checksum\": " + std::to_string(e.checksum) + "}";
  }
  text += manifest.tensors.empty() ? "]}\n" : "\n]}\n";
  return text;
}

StatusOr<CheckpointManifest> ParseManifest(std::string_view text, const std::string& path) {
  AF_ASSIGN_OR_RETURN(Json json, ParseJsonText(text, path));
  if (!json.is_object()) return InvalidArgument(path + ": a manifest must be a JSON object");
  if (!json.contains("format") || json["format"] != kCheckpointFormat) {
    return InvalidArgument(path + ": not a checkpoint manifest (\"format\" must be \"" +
                           kCheckpointFormat + "\")");
  }
  CheckpointManifest manifest;
  if (!json.contains("global_step") || !json["global_step"].is_number_integer()) {
    return InvalidArgument(path + ": \"global_step\" must be an integer");
  }
  manifest.global_step = json["global_step"].get<int64_t>();
  AF_RETURN_IF_ERROR(CheckCheckpointStep(manifest.global_step).WithContext(path));
  // A manifest named "ckpt-<step>.json" (as Save names them) holds that step.
  const size_t slash = path.find_last_of('/');
  std::string_view file = std::string_view(path).substr(slash == std::string::npos ? 0 : slash + 1);
  const std::string_view suffix = kCheckpointManifestSuffix;
  if (file.size() > suffix.size() && file.substr(file.size() - suffix.size()) == suffix) {
    std::optional<int64_t> named = ParseCheckpointBasename(file.substr(0, file.size() - suffix.size()));
    if (named && *named != manifest.global_step) {
      return InvalidArgument(path + ": \"global_step\" " + std::to_string(manifest.global_step) +
                             " does not match the file's name (step " + std::to_string(*named) +
                             ")");
    }
  }
  if (!json.contains("tensors") || !json["tensors"].is_array()) {
    return InvalidArgument(path + ": \"tensors\" must be a list");
  }
  std::set<std::string> names;
  const Json& tensors = json["tensors"];
  for (size_t i = 0; i < tensors.size(); ++i) {
    AF_ASSIGN_OR_RETURN(CheckpointEntry entry, ParseEntry(tensors[i], i, path));
    if (!names.insert(entry.name).second) {
      return InvalidArgument(path + ": tensor '" + entry.name + "' appears twice");
    }
    manifest.tensors.push_back(std::move(entry));
  }
  // Byte ranges must not overlap (empty tensors take no bytes).
  std::vector<const CheckpointEntry*> by_offset;
  for (const auto& e : manifest.tensors) {
    if (e.size > 0) by_offset.push_back(&e);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const CheckpointEntry* a, const CheckpointEntry* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i - 1]->offset + by_offset[i - 1]->size > by_offset[i]->offset) {
      return InvalidArgument(path + ": tensors '" + by_offset[i - 1]->name + "' and '" +
                             by_offset[i]->name + "' overlap in the data file");
    }
  }
  return manifest;
}

std::vector<int64_t> CheckpointStepsWithSuffix(const std::vector<std::string>& names,
                                               const std::string& suffix) {
  std::vector<int64_t> steps;
  for (const auto& name : names) {
    if (name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    auto step = ParseCheckpointBasename(std::string_view(name).substr(0, name.size() - suffix.size()));
    if (step) steps.push_back(*step);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

StatusOr<CheckpointManifest> ReadManifestFile(const std::string& prefix) {
  const std::string path = prefix + kCheckpointManifestSuffix;
  auto text = checkpoint_file::ReadFileToString(path);
  if (!text.ok()) {
    if (text.status().code() == Code::kNotFound) {
      return NotFound("no checkpoint '" + prefix + "': its manifest '" + path + "' does not exist");
    }
    return text.status();
  }
  return ParseManifest(*text, path);
}

Status CheckFiniteValues(const std::string& name, const Tensor& tensor) {
  if (!IsFloating(tensor.dtype()) || tensor.IsOnDevice()) return Status::OK();
  return VisitDType(tensor.dtype(), [&](auto zero) -> Status {
    using T = decltype(zero);
    if constexpr (std::is_floating_point_v<T>) {
      const T* values = tensor.data<T>();
      for (int64_t i = 0; i < tensor.NumElements(); ++i) {
        if (std::isfinite(values[i])) continue;
        return InvalidArgument(
            "variable '" + name + "' " + tensor.DebugString() + " holds a non-finite value (" +
            (std::isnan(values[i]) ? std::string("nan") : values[i] > 0 ? "inf" : "-inf") +
            " at element " + std::to_string(i) +
            "): non-finite weights are refused (did training diverge? lower the learning rate)");
      }
    }
    return Status::OK();
  });
}

StatusOr<std::map<std::string, Tensor>> ReadCheckpointTensors(const CheckpointManifest& manifest,
                                                              const std::string& data_path) {
  int fd = ::open(data_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return checkpoint_file::ErrnoStatus(errno, "cannot open checkpoint data file", data_path);
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};

  struct stat st;
  if (::fstat(fd, &st) != 0) {
    return checkpoint_file::ErrnoStatus(errno, "cannot stat checkpoint data file", data_path);
  }
  uint64_t expected = 0;
  for (const auto& e : manifest.tensors) expected = std::max(expected, e.offset + e.size);
  if (static_cast<uint64_t>(st.st_size) != expected) {
    return Internal("checkpoint data file '" + data_path + "' is " + std::to_string(st.st_size) +
                    " bytes but its manifest describes " + std::to_string(expected) +
                    ": the checkpoint is corrupted (truncated or overwritten)");
  }

  std::map<std::string, Tensor> tensors;
  for (const auto& e : manifest.tensors) {
    Tensor tensor(e.dtype, e.shape);
    auto* out = static_cast<char*>(tensor.raw_data());
    uint64_t done = 0;
    while (done < e.size) {
      ssize_t n = ::pread(fd, out + done, e.size - done, static_cast<off_t>(e.offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return checkpoint_file::ErrnoStatus(errno, "cannot read checkpoint data file", data_path);
      if (n == 0) return Internal("checkpoint data file '" + data_path + "' ended early");
      done += static_cast<uint64_t>(n);
    }
    const uint32_t crc = Crc32(out, e.size);
    if (crc != e.checksum) {
      return Internal("checkpoint data file '" + data_path + "': tensor '" + e.name +
                      "': checksum mismatch (manifest " + Hex32(e.checksum) + ", data " +
                      Hex32(crc) + "): the checkpoint is corrupted");
    }
    if (e.dtype == DType::kBool) {
      // Any byte other than 0 or 1 is not a valid bool; reading one is undefined.
      const auto* bytes = reinterpret_cast<const unsigned char*>(out);
      for (uint64_t i = 0; i < e.size; ++i) {
        if (bytes[i] > 1) {
          return Internal("checkpoint data file '" + data_path + "': tensor '" + e.name +
                          "': invalid bool: element " + std::to_string(i) + " is byte " +
                          std::to_string(bytes[i]) + ", not 0 or 1");
        }
      }
    }
    Status finite = CheckFiniteValues(e.name, tensor);
    if (!finite.ok()) return finite.WithContext("checkpoint data file '" + data_path + "'");
    tensors.emplace(e.name, std::move(tensor));
  }
  return tensors;
}

}  // namespace actorflow
