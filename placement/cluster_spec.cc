#include "placement/cluster_spec.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>

#include <nlohmann/json.hpp>

#include "graph/tensor_json.h"

namespace actorflow {

using Json = nlohmann::json;

namespace {

// The job-name grammar of device_name.h, so that every task name parses back.
bool IsJobName(std::string_view s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

std::string LowerCase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A string as a JSON literal: quoted, with control characters escaped.
std::string JsonQuoted(std::string_view s) {
  return Json(std::string(s)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

// "number 5", "array [1,2]", "null": what a user wrote instead of what was expected.
std::string Describe(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  if (value.is_null()) return "null";
  return std::string(value.type_name()) + " " + text;
}

std::string Plural(size_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string JoinJobs(const std::vector<std::string>& jobs) {
  std::string out;
  for (const std::string& job : jobs) out += (out.empty() ? "" : ", ") + job;
  return out;
}

// nlohmann keeps the last of repeated keys silently; a job listed twice would lose the
// first list's tasks. Returns the first key repeated within one object, if any.
// Precondition: `text` is well-formed JSON.
std::optional<std::string> FindRepeatedKey(std::string_view text) {
  std::vector<std::set<std::string>> open_objects;
  std::optional<std::string> repeated;
  Json::parser_callback_t callback = [&](int, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
        open_objects.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!repeated && !open_objects.empty() && parsed.is_string() &&
            !open_objects.back().insert(parsed.get<std::string>()).second) {
          repeated = parsed.get<std::string>();
        }
        break;
      default:
        break;
    }
    return true;
  };
  const Json walked = Json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/false);
  (void)walked;  // Only the callback's findings matter.
  return repeated;
}

// Parses JSON text and rejects repeated keys; errors start with `source`.
StatusOr<Json> ParseStrictJson(std::string_view text, const std::string& source) {
  AF_ASSIGN_OR_RETURN(Json json, ParseJsonText(text, source));
  if (std::optional<std::string> key = FindRepeatedKey(text)) {
    return InvalidArgument(source + ": key " + JsonQuoted(*key) +
                           " appears more than once in the same object; give each key once");
  }
  return json;
}

}  // namespace

StatusOr<TaskAddress> ParseHostPort(const std::string& entry) {
  const size_t colon = entry.rfind(':');
  if (colon == std::string::npos) return InvalidArgument("missing \":port\"");
  std::string host = entry.substr(0, colon);
  const std::string port = entry.substr(colon + 1);
  if (host.empty() || host == "[]") return InvalidArgument("empty host");
  for (char c : host) {
    if (std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c))) {
      return InvalidArgument("host " + JsonQuoted(host) +
                             " contains whitespace or a control character");
    }
  }
  const bool bracketed = host.front() == '[' && host.back() == ']';
  if (host.find(':') != std::string::npos && !bracketed) {
    return InvalidArgument(
        "host " + JsonQuoted(host) +
        " contains ':'; write an IPv6 address in brackets, as in \"[::1]:2222\"");
  }
  if (port.empty()) return InvalidArgument("missing port after ':'");
  if (port.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgument("port " + JsonQuoted(port) + " is not a number");
  }
  if (port.size() > 5 || std::stol(port) > 65535) {
    return InvalidArgument("port " + port + " is out of range (1 to 65535)");
  }
  const long value = std::stol(port);
  if (value == 0) return InvalidArgument("port 0 is not a valid port (1 to 65535)");
  TaskAddress out;
  out.host = std::move(host);
  out.port = static_cast<uint16_t>(value);
  return out;
}

// Builds specs from parsed JSON; a friend of ClusterSpec.
class ClusterSpecReader {
 public:
  static StatusOr<ClusterSpec> FromValue(const Json& value, const std::string& source) {
    static const char kShape[] = "a JSON object mapping job names to lists of \"host:port\" strings";
    if (!value.is_object()) {
      return InvalidArgument(source + ": expected " + kShape + ", got " + Describe(value));
    }
    if (value.empty()) {
      return InvalidArgument(source + ": the cluster has no jobs; expected " + kShape +
                             ", e.g. {\"worker\": [\"localhost:2222\"]}");
    }
    ClusterSpec spec;
    std::map<std::string, TaskId> owner;  // lowercase "host:port" -> the task using it
    for (auto it = value.begin(); it != value.end(); ++it) {  // sorted by job name
      const std::string& job = it.key();
      const std::string where = source + ": job " + JsonQuoted(job);
      if (!IsJobName(job)) {
        return InvalidArgument(where + " is not a valid job name (a letter, then letters, "
                               "digits, '_' or '-')");
      }
      const Json& list = it.value();
      if (!list.is_array()) {
        return InvalidArgument(where + " must be a list of \"host:port\" strings, got " +
                               Describe(list));
      }
      if (list.empty()) {
        return InvalidArgument(where + " has no tasks; list at least one \"host:port\"");
      }
      std::vector<TaskAddress>& addresses = spec.jobs_[job];
      for (size_t i = 0; i < list.size(); ++i) {
        const std::string task_where = where + " task " + std::to_string(i);
        if (!list[i].is_string()) {
          return InvalidArgument(task_where + " must be a \"host:port\" string, got " +
                                 Describe(list[i]));
        }
        const std::string& entry = list[i].get_ref<const std::string&>();
        StatusOr<TaskAddress> parsed = ParseHostPort(entry);
        if (!parsed.ok()) {
          return InvalidArgument(task_where + ": bad address " + JsonQuoted(entry) + ": " +
                                 parsed.status().message());
        }
        const TaskAddress address = *parsed;
        const TaskId task{job, static_cast<int>(i)};
        auto [first, inserted] = owner.emplace(LowerCase(address.ToString()), task);
        if (!inserted) {
          return InvalidArgument(source + ": duplicate address " + address.ToString() +
                                 ": used by both " + first->second.ToString() + " and " +
                                 task.ToString() + "; each task needs its own host:port");
        }
        addresses.push_back(std::move(address));
      }
    }
    return spec;
  }
};

namespace {

StatusOr<TfConfig> ParseTfConfigFrom(std::string_view text, const std::string& source) {
  AF_ASSIGN_OR_RETURN(Json root, ParseStrictJson(text, source));
  if (!root.is_object()) {
    return InvalidArgument(source + ": expected an object with \"cluster\" and \"task\", got " +
                           Describe(root));
  }
  auto cluster_it = root.find("cluster");
  if (cluster_it == root.end()) {
    return InvalidArgument(source + ": missing field \"cluster\" (the jobs and their addresses)");
  }
  AF_ASSIGN_OR_RETURN(ClusterSpec cluster,
                      ClusterSpecReader::FromValue(*cluster_it, source + ": cluster"));

  auto task_it = root.find("task");
  if (task_it == root.end()) {
    return InvalidArgument(source + ": missing field \"task\" (e.g. {\"type\": \"worker\", "
                           "\"index\": 0})");
  }
  const Json& task = *task_it;
  if (!task.is_object()) {
    return InvalidArgument(source + ": task must be an object like {\"type\": \"worker\", "
                           "\"index\": 0}, got " + Describe(task));
  }
  const std::string jobs = JoinJobs(cluster.jobs());
  auto type_it = task.find("type");
  if (type_it == task.end()) {
    return InvalidArgument(source + ": missing field task.type (one of the cluster's jobs: " +
                           jobs + ")");
  }
  if (!type_it->is_string()) {
    return InvalidArgument(source + ": task.type must be a string naming a job of the cluster (" +
                           jobs + "), got " + Describe(*type_it));
  }
  const std::string& job = type_it->get_ref<const std::string&>();
  const int num_tasks = cluster.num_tasks(job);
  if (num_tasks == 0) {
    return InvalidArgument(source + ": task.type " + JsonQuoted(job) +
                           " is not a job of the cluster (jobs: " + jobs + ")");
  }

  uint64_t index = 0;  // absent means 0, as in TensorFlow
  auto index_it = task.find("index");
  if (index_it != task.end()) {
    if (!index_it->is_number_unsigned()) {
      return InvalidArgument(source + ": task.index must be a non-negative integer, got " +
                             Describe(*index_it));
    }
    index = index_it->get<uint64_t>();
    if (index >= static_cast<uint64_t>(num_tasks)) {
      return InvalidArgument(source + ": task.index " + std::to_string(index) +
                             " is out of range: job " + JsonQuoted(job) + " has " +
                             Plural(num_tasks, "task") + " (indices 0 to " +
                             std::to_string(num_tasks - 1) + ")");
    }
  }
  return TfConfig{std::move(cluster), TaskId{job, static_cast<int>(index)}};
}

}  // namespace

std::string TaskAddress::ToString() const { return host + ":" + std::to_string(port); }

std::string TaskId::ToString() const {
  return "/job:" + job + "/task:" + std::to_string(index);
}

StatusOr<ClusterSpec> ClusterSpec::FromJson(std::string_view text, const std::string& source) {
  AF_ASSIGN_OR_RETURN(Json json, ParseStrictJson(text, source));
  return ClusterSpecReader::FromValue(json, source);
}

StatusOr<ClusterSpec> ClusterSpec::FromFile(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return NotFound("cluster spec file '" + path + "' is a directory, not a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open cluster spec file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return NotFound("cannot read cluster spec file '" + path + "'");
  return FromJson(text.str(), path);
}

std::vector<std::string> ClusterSpec::jobs() const {
  std::vector<std::string> names;
  names.reserve(jobs_.size());
  for (const auto& [job, addresses] : jobs_) names.push_back(job);
  return names;
}

int ClusterSpec::num_tasks(const std::string& job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : static_cast<int>(it->second.size());
}

StatusOr<TaskAddress> ClusterSpec::Address(const TaskId& task) const {
  auto it = jobs_.find(task.job);
  if (it == jobs_.end()) {
    return InvalidArgument("unknown job " + JsonQuoted(task.job) + " in " + task.ToString() +
                           " (the cluster's jobs: " + JoinJobs(jobs()) + ")");
  }
  const std::vector<TaskAddress>& addresses = it->second;
  if (task.index < 0 || static_cast<size_t>(task.index) >= addresses.size()) {
    return InvalidArgument("task index " + std::to_string(task.index) + " of " + task.ToString() +
                           " is out of range: job " + JsonQuoted(task.job) + " has " +
                           Plural(addresses.size(), "task") + " (indices 0 to " +
                           std::to_string(addresses.size() - 1) + ")");
  }
  return addresses[task.index];
}

std::vector<TaskId> ClusterSpec::AllTasks() const {
  std::vector<TaskId> tasks;
  for (const auto& [job, addresses] : jobs_) {
    for (size_t i = 0; i < addresses.size(); ++i) tasks.push_back({job, static_cast<int>(i)});
  }
  return tasks;
}

std::string ClusterSpec::ToJson() const {
  Json json = Json::object();
  for (const auto& [job, addresses] : jobs_) {
    Json list = Json::array();
    for (const TaskAddress& address : addresses) list.push_back(address.ToString());
    json[job] = std::move(list);
  }
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string ClusterSpec::TaskName(const TaskId& task) {
  return "/job:" + task.job + "/replica:0/task:" + std::to_string(task.index);
}

StatusOr<TfConfig> ParseTfConfig(std::string_view text) {
  return ParseTfConfigFrom(text, "TF_CONFIG");
}

namespace {
thread_local const TfConfig* thread_tf_config = nullptr;
}  // namespace

ScopedTfConfig::ScopedTfConfig(TfConfig config)
    : config_(std::move(config)), previous_(thread_tf_config) {
  thread_tf_config = &config_;
}

ScopedTfConfig::~ScopedTfConfig() { thread_tf_config = previous_; }

StatusOr<TfConfig> TfConfigFromEnv(const char* var) {
  if (thread_tf_config != nullptr) return *thread_tf_config;
  const char* value = std::getenv(var);
  if (value == nullptr || *value == '\0') {
    return NotFound(std::string("environment variable ") + var + " is not set (or empty)");
  }
  return ParseTfConfigFrom(value, var);
}

StatusOr<std::map<std::string, int>> ParseLocalClusterShape(std::string_view spec) {
  static const char kPrefix[] = "local:";
  const std::string where = "cluster shape " + JsonQuoted(spec);
  const std::string example = "expected \"local:JOB=COUNT,...\", e.g. \"local:ps=1,worker=2\"";
  if (spec.substr(0, sizeof(kPrefix) - 1) != kPrefix) {
    return InvalidArgument(where + ": missing the \"local:\" prefix; " + example);
  }
  std::string_view rest = spec.substr(sizeof(kPrefix) - 1);
  if (rest.empty()) return InvalidArgument(where + ": no jobs; " + example);

  std::map<std::string, int> shape;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    const std::string part_where = where + ": entry " + JsonQuoted(part);
    if (part.empty()) {
      return InvalidArgument(where + ": empty entry (a stray ','); " + example);
    }
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument(part_where + " is not JOB=COUNT; " + example);
    }
    const std::string job(part.substr(0, eq));
    const std::string_view count = part.substr(eq + 1);
    if (!IsJobName(job)) {
      return InvalidArgument(part_where + ": " + JsonQuoted(job) +
                             " is not a valid job name (a letter, then letters, digits, '_' "
                             "or '-')");
    }
    if (count.empty() || count.find_first_not_of("0123456789") != std::string_view::npos) {
      return InvalidArgument(part_where + ": task count " + JsonQuoted(count) +
                             " is not a positive integer");
    }
    const int value = count.size() > 9 ? kMaxLocalTasksPerJob + 1 : std::stoi(std::string(count));
    if (value < 1 || value > kMaxLocalTasksPerJob) {
      return InvalidArgument(part_where + ": task count " + std::string(count) +
                             " is out of range (1 to " + std::to_string(kMaxLocalTasksPerJob) +
                             ")");
    }
    if (!shape.emplace(job, value).second) {
      return InvalidArgument(part_where + ": job " + JsonQuoted(job) + " is given twice");
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return shape;
}

}  // namespace actorflow
