#include "tests/process_cluster.h"

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <vector>

namespace actorflow {
namespace subprocess {
namespace {

std::string JsonString(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

StatusOr<std::unique_ptr<ProcessCluster>> ProcessCluster::Start(ProcessClusterOptions options) {
  // A drawn port can still be taken by someone else between the draw and the task's
  // bind; the whole cluster is then drawn and started again (its tasks' specs name
  // each other's ports, so one task cannot move alone).
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    auto cluster = StartOnce(options);
    if (cluster.ok() || attempt == kAttempts ||
        cluster.status().message().find("port in use") == std::string::npos) {
      return cluster;
    }
  }
}

StatusOr<std::unique_ptr<ProcessCluster>> ProcessCluster::StartOnce(
    const ProcessClusterOptions& options) {
  std::unique_ptr<ProcessCluster> cluster(new ProcessCluster(options));
  const ProcessClusterOptions& o = cluster->options_;
  // Each cluster of a process gets its own spec file.
  static std::atomic<int> next_id{0};
  cluster->spec_path_ = o.dir + "/cluster_" + std::to_string(next_id++) + ".json";

  // Every port drawn stays held until all are drawn: a port released at once could be
  // handed out again for the next task (two tasks on one host:port).
  std::vector<std::unique_ptr<PortHolder>> held;
  std::string json = "{";
  for (const auto& [job, count] : o.shape) {
    if (json.size() > 1) json += ", ";
    json += JsonString(job) + ": [";
    for (int i = 0; i < count; ++i) {
      const TaskKey key{job, i};
      auto fixed = o.fixed_ports.find(key);
      int port = 0;
      if (fixed != o.fixed_ports.end()) {
        port = fixed->second;
      } else {
        held.push_back(std::make_unique<PortHolder>());
        port = held.back()->port();
      }
      if (port == 0) return Internal("no free port on 127.0.0.1 for /job:" + job);
      cluster->ports_[key] = port;
      json += (i > 0 ? ", " : "") + JsonString("127.0.0.1:" + std::to_string(port));
    }
    json += "]";
  }
  json += "}\n";
  held.clear();  // the tasks bind them now
  {
    std::ofstream file(cluster->spec_path_);
    file << json;
    if (!file.good()) return Internal("cannot write " + cluster->spec_path_);
  }
  for (const auto& [key, port] : cluster->ports_) {
    if (o.not_started.count(key)) continue;
    AF_RETURN_IF_ERROR(cluster->StartTask(key));
  }
  return cluster;
}

Status ProcessCluster::StartTask(const TaskKey& task) {
  const std::string name = "/job:" + task.first + "/task:" + std::to_string(task.second);
  std::vector<std::string> args = {"server", "--cluster", spec_path_, "--job", task.first,
                                   "--task", std::to_string(task.second)};
  args.insert(args.end(), options_.server_args.begin(), options_.server_args.end());
  std::string error;
  auto child = ChildProcess::Start(options_.binary, args, &error);
  if (child == nullptr) return Internal("cannot start " + name + ": " + error);
  std::string line;
  if (!child->WaitForLine("actorflow server ready: ", options_.ready_timeout, &line)) {
    child->Kill();
    child->WaitForExit(std::chrono::seconds(5));
    return Unavailable(name + " (" + Address(task.first, task.second) +
                       ") did not print its ready line within " +
                       std::to_string(options_.ready_timeout.count()) + " ms; stderr: " +
                       child->err());
  }
  processes_[task] = std::move(child);
  return Status::OK();
}

ProcessCluster::~ProcessCluster() {
  processes_.clear();
  if (!spec_path_.empty()) std::remove(spec_path_.c_str());
}

std::string ProcessCluster::Address(const std::string& job, int index) const {
  auto it = ports_.find({job, index});
  return it == ports_.end() ? std::string() : "127.0.0.1:" + std::to_string(it->second);
}

std::string ProcessCluster::Target(const std::string& job, int index) const {
  std::string address = Address(job, index);
  return address.empty() ? std::string() : "actorflow://" + address;
}

Status ProcessCluster::Kill(const std::string& job, int index) {
  auto it = processes_.find({job, index});
  if (it == processes_.end() || !it->second->running()) {
    return NotFound("/job:" + job + "/task:" + std::to_string(index) + " has no running process");
  }
  it->second->Kill();
  return Status::OK();
}

Status ProcessCluster::Restart(const std::string& job, int index) {
  if (!ports_.count({job, index})) {
    return InvalidArgument("/job:" + job + "/task:" + std::to_string(index) + " is not in the cluster");
  }
  processes_.erase({job, index});  // kills and reaps a process still running
  return StartTask({job, index});
}

ChildProcess* ProcessCluster::process(const std::string& job, int index) {
  auto it = processes_.find({job, index});
  return it == processes_.end() ? nullptr : it->second.get();
}

}  // namespace subprocess
}  // namespace actorflow
