#include "placement/device_name.h"

#include <cctype>
#include <vector>

namespace actorflow {
namespace {

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(sep, start);
    if (end == std::string::npos) {
      parts.push_back(text.substr(start));
      return parts;
    }
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

bool IsJobName(const std::string& s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

bool IsTypeName(const std::string& s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// "*" -> nullopt; digits -> the number; anything else -> error text.
Status ParseIndex(const std::string& text, const std::string& what, std::optional<int>* out) {
  if (text == "*") {
    out->reset();
    return Status::OK();
  }
  if (text.empty() || text.size() > 9 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgument(what + " must be a non-negative integer or '*', got '" + text + "'");
  }
  *out = std::stoi(text);
  return Status::OK();
}

// Sets `field` once; a second mention of the same field is an error.
template <typename T>
Status SetOnce(std::optional<T>* field, bool* seen, const std::optional<T>& value,
               const std::string& what) {
  if (*seen) return InvalidArgument(what + " is given twice");
  *seen = true;
  *field = value;
  return Status::OK();
}

Status ParseDevicePart(const std::string& type_text, const std::string* id_text,
                       const std::string& component, DeviceSpec* spec, bool* seen_device) {
  if (*seen_device) return InvalidArgument("the device type is given twice");
  *seen_device = true;
  if (type_text != "*") {
    if (!IsTypeName(type_text)) {
      return InvalidArgument("bad device type '" + type_text + "' in '" + component +
                             "': expected letters, digits or '_' (e.g. CPU, GPU)");
    }
    spec->type = Upper(type_text);
  }
  if (id_text != nullptr) AF_RETURN_IF_ERROR(ParseIndex(*id_text, "device id", &spec->id));
  return Status::OK();
}

Status ParseComponent(const std::string& component, DeviceSpec* spec, bool seen[4]) {
  if (component.empty()) return InvalidArgument("empty component (doubled or trailing '/')");
  std::vector<std::string> parts = Split(component, ':');
  const std::string key = Lower(parts[0]);
  if (key == "job") {
    if (parts.size() != 2 || !IsJobName(parts[1])) {
      return InvalidArgument("bad job '" + component +
                             "': expected job:NAME (a letter, then letters, digits, '_', '-')");
    }
    return SetOnce(&spec->job, &seen[0], std::optional<std::string>(parts[1]), "the job");
  }
  if (key == "replica" || key == "task") {
    if (parts.size() != 2) {
      return InvalidArgument("bad component '" + component + "': expected " + key + ":N");
    }
    std::optional<int> value;
    AF_RETURN_IF_ERROR(ParseIndex(parts[1], key, &value));
    if (key == "replica") return SetOnce(&spec->replica, &seen[1], value, "the replica");
    return SetOnce(&spec->task, &seen[2], value, "the task");
  }
  if (key == "device") {
    if (parts.size() != 2 && parts.size() != 3) {
      return InvalidArgument("bad component '" + component +
                             "': expected device:TYPE:ID, device:TYPE:* or device:TYPE");
    }
    return ParseDevicePart(parts[1], parts.size() == 3 ? &parts[2] : nullptr, component, spec,
                           &seen[3]);
  }
  // Legacy short form TYPE:ID ("cpu:0", "GPU:1").
  if (parts.size() == 2 && IsTypeName(parts[0])) {
    return ParseDevicePart(parts[0], &parts[1], component, spec, &seen[3]);
  }
  return InvalidArgument("unknown component '" + component +
                         "': expected job:NAME, replica:N, task:N, device:TYPE:ID or TYPE:ID");
}

}  // namespace

std::string DeviceSpec::ToString() const {
  std::string out;
  if (job) out += "/job:" + *job;
  if (replica) out += "/replica:" + std::to_string(*replica);
  if (task) out += "/task:" + std::to_string(*task);
  if (type || id) {
    out += "/device:" + (type ? *type : std::string("*")) + ":" +
           (id ? std::to_string(*id) : std::string("*"));
  }
  return out;
}

bool DeviceSpec::IsFullySpecified() const { return job && replica && task && type && id; }

DeviceSpec DeviceSpec::TaskPart() const {
  DeviceSpec task_part = *this;
  task_part.type.reset();
  task_part.id.reset();
  return task_part;
}

StatusOr<DeviceSpec> ParseDeviceSpec(const std::string& spec) {
  DeviceSpec out;
  if (spec.empty()) return out;
  std::string body = spec[0] == '/' ? spec.substr(1) : spec;
  bool seen[4] = {false, false, false, false};  // job, replica, task, device
  for (const std::string& component : Split(body, '/')) {
    Status s = ParseComponent(component, &out, seen);
    if (!s.ok()) return InvalidArgument("invalid device spec '" + spec + "': " + s.message());
  }
  return out;
}

bool Matches(const DeviceSpec& spec, const DeviceSpec& device) {
  return (!spec.job || spec.job == device.job) &&
         (!spec.replica || spec.replica == device.replica) &&
         (!spec.task || spec.task == device.task) && (!spec.type || spec.type == device.type) &&
         (!spec.id || spec.id == device.id);
}

bool IsCompatible(const DeviceSpec& a, const DeviceSpec& b) {
  auto agree = [](const auto& x, const auto& y) { return !x || !y || *x == *y; };
  return agree(a.job, b.job) && agree(a.replica, b.replica) && agree(a.task, b.task) &&
         agree(a.type, b.type) && agree(a.id, b.id);
}

DeviceSpec MergeDefaults(const DeviceSpec& spec, const DeviceSpec& defaults) {
  DeviceSpec out = spec;
  if (!out.job) out.job = defaults.job;
  if (!out.replica) out.replica = defaults.replica;
  if (!out.task) out.task = defaults.task;
  const bool same_type = !spec.type || spec.type == defaults.type;
  if (!out.type) out.type = defaults.type;
  if (!out.id && same_type) out.id = defaults.id;
  return out;
}

}  // namespace actorflow
