#include "actors/sim/sim_cluster_spec.h"

#include <cctype>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

namespace actorflow {

namespace {

int64_t AvailableMemoryBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return std::numeric_limits<int64_t>::max();  // unknown: do not refuse
}

std::string Mib(int64_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

}  // namespace

bool ParseSmallCount(std::string_view digits, int* count) {
  if (digits.empty() || digits.size() > 9) return false;
  int value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  *count = value;
  return true;
}

int64_t SimClusterShape::TotalTasks() const {
  int64_t total = 0;
  for (const auto& [job, count] : tasks) total += count;
  return total;
}

StatusOr<ClusterSpec> SimClusterShape::ToClusterSpec() const {
  nlohmann::json cluster = nlohmann::json::object();
  for (const auto& [job, count] : tasks) {
    nlohmann::json addresses = nlohmann::json::array();
    for (int i = 0; i < count; ++i) addresses.push_back(job + "-" + std::to_string(i) + ".sim:1");
    cluster[job] = std::move(addresses);
  }
  return ClusterSpec::FromJson(cluster.dump(), "simulated cluster");
}

StatusOr<SimClusterShape> ParseSimClusterSpec(std::string_view text) {
  const std::string quoted = "'" + std::string(text) + "'";
  constexpr std::string_view kPrefix = "sim:";
  if (text.substr(0, kPrefix.size()) != kPrefix) {
    return InvalidArgument("simulated cluster " + quoted +
                           " must start with \"sim:\" (e.g. sim:ps=1,worker=4,devices=2)");
  }
  SimClusterShape shape;
  bool devices_given = false;
  std::string_view rest = text.substr(kPrefix.size());
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view entry = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t eq = entry.find('=');
    int count = 0;
    if (eq == std::string_view::npos || !ParseSmallCount(entry.substr(eq + 1), &count)) {
      return InvalidArgument("simulated cluster " + quoted + ": '" + std::string(entry) +
                             "' is not key=count");
    }
    const std::string key(entry.substr(0, eq));
    if (key == "devices") {
      if (devices_given) return InvalidArgument("simulated cluster " + quoted + ": devices given twice");
      if (count < 1 || count > kMaxSimDevicesPerTask) {
        return InvalidArgument("simulated cluster " + quoted + ": devices must be in 1.." +
                               std::to_string(kMaxSimDevicesPerTask) + ", not " +
                               std::to_string(count));
      }
      devices_given = true;
      shape.devices_per_task = count;
      continue;
    }
    // Only the jobs the simulator runs: a typo ("workers=4") or any other job would be
    // tasks that exist in the spec and do nothing.
    if (key != "ps" && key != "worker") {
      return InvalidArgument("simulated cluster " + quoted + ": unknown key '" + key +
                             "' (a simulated cluster takes ps=P, worker=W and devices=D)");
    }
    if (shape.tasks.count(key) != 0) {
      return InvalidArgument("simulated cluster " + quoted + ": job '" + key + "' given twice");
    }
    if (count > kMaxSimTasksPerJob) {
      return InvalidArgument("simulated cluster " + quoted + ": job '" + key + "' has " +
                             std::to_string(count) + " tasks; at most " +
                             std::to_string(kMaxSimTasksPerJob));
    }
    shape.tasks[key] = count;
  }
  const auto worker = shape.tasks.find("worker");
  if (worker == shape.tasks.end() || worker->second == 0) {
    return InvalidArgument("simulated cluster " + quoted +
                           ": a simulated cluster needs at least one worker (worker=W, W >= 1)");
  }
  // No ps job is a cluster of workers only (all-reduce training); ps=0 says so
  // twice and is refused below like any empty job.
  for (const auto& [job, count] : shape.tasks) {
    if (count == 0) {
      return InvalidArgument("simulated cluster " + quoted + ": job '" + job + "' has 0 tasks");
    }
  }
  return shape;
}

int64_t EstimateSimulationBytes(const SimClusterShape& shape, int64_t model_bytes) {
  const int64_t per_device = kSimBytesPerDevice + 3 * model_bytes;
  const auto ps = shape.tasks.find("ps");
  const int64_t ps_tasks = ps == shape.tasks.end() ? 0 : ps->second;
  // The ps tasks together hold the variables once, with two optimizer slots.
  const int64_t ps_bytes = ps_tasks > 0 ? 3 * model_bytes : 0;
  return shape.TotalDevices() * per_device + ps_bytes;
}

Status CheckSimulationFits(const SimClusterShape& shape, int64_t model_bytes,
                           int64_t available_bytes) {
  if (available_bytes < 0) available_bytes = AvailableMemoryBytes();
  const int64_t needed = EstimateSimulationBytes(shape, model_bytes);
  if (needed <= available_bytes) return Status::OK();
  std::ostringstream message;
  message << "a simulated cluster of " << shape.TotalTasks() << " tasks and "
          << shape.TotalDevices() << " devices with a model of " << Mib(model_bytes)
          << " needs an estimated " << Mib(needed) << " (" << kSimBytesPerDevice / 1024
          << " KiB per device plus 3 copies of the model per device), but " << Mib(available_bytes)
          << " is available; simulate fewer workers or devices";
  return ResourceExhausted(message.str());
}

}  // namespace actorflow
