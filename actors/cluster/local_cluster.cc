#include "actors/cluster/local_cluster.h"

namespace actorflow {

StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::Start(const std::map<std::string, int>& shape,
                                                            int cpus_per_task) {
  if (shape.empty()) return InvalidArgument("a local cluster needs at least one job");
  std::unique_ptr<LocalCluster> cluster(new LocalCluster());
  cluster->cpus_per_task_ = cpus_per_task;
  // The ports are known only once each task has bound one, so the tasks start with
  // a provisional spec and get the final one before any session can use them.
  std::string provisional = "{";
  int next = 1;
  for (const auto& [job, count] : shape) {
    if (count < 1) return InvalidArgument("job '" + job + "' needs at least one task");
    provisional += std::string(provisional.size() > 1 ? "," : "") + "\"" + job + "\": [";
    for (int i = 0; i < count; ++i) {
      provisional += std::string(i ? "," : "") + "\"127.0.0.1:" + std::to_string(next++) + "\"";
    }
    provisional += "]";
  }
  provisional += "}";
  AF_ASSIGN_OR_RETURN(ClusterSpec spec, ClusterSpec::FromJson(provisional, "local cluster"));

  std::string actual = "{";
  for (const auto& [job, count] : shape) {
    actual += std::string(actual.size() > 1 ? "," : "") + "\"" + job + "\": [";
    for (int i = 0; i < count; ++i) {
      ServerOptions options;
      options.cluster = spec;
      options.task = TaskId{job, i};
      options.cpus = cpus_per_task;
      options.port_override = 0;
      // The tasks live in their client's process and run its own graphs.
      options.file_access = FileAccessPolicy::Unrestricted();
      AF_ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Server::Start(options));
      actual += std::string(i ? "," : "") + "\"127.0.0.1:" + std::to_string(server->port()) + "\"";
      cluster->servers_[job].push_back(std::move(server));
    }
    actual += "]";
  }
  actual += "}";
  AF_ASSIGN_OR_RETURN(cluster->spec_, ClusterSpec::FromJson(actual, "local cluster"));
  for (auto& [job, servers] : cluster->servers_) {
    for (auto& s : servers) s->SetCluster(cluster->spec_);
  }
  return cluster;
}

LocalCluster::~LocalCluster() {
  for (auto& [job, servers] : servers_) {
    for (auto& s : servers) {
      if (s) s->Stop();
    }
  }
}

const Server* LocalCluster::server(const std::string& job, int index) const {
  auto it = servers_.find(job);
  if (it == servers_.end() || index < 0 || index >= static_cast<int>(it->second.size())) {
    return nullptr;
  }
  return it->second[static_cast<size_t>(index)].get();
}

StatusOr<std::string> LocalCluster::Target(const std::string& job, int index) const {
  AF_ASSIGN_OR_RETURN(TaskAddress address, spec_.Address(TaskId{job, index}));
  return "actorflow://" + address.ToString();
}

Status LocalCluster::StopTask(const std::string& job, int index) {
  AF_RETURN_IF_ERROR(spec_.Address(TaskId{job, index}).status());
  auto& server = servers_[job][index];
  if (server) server->Stop();
  server.reset();
  return Status::OK();
}

Status LocalCluster::RestartTask(const std::string& job, int index) {
  AF_ASSIGN_OR_RETURN(TaskAddress address, spec_.Address(TaskId{job, index}));
  auto& server = servers_[job][index];
  if (server) return FailedPrecondition(TaskId{job, index}.ToString() + " is still running");
  ServerOptions options;
  options.cluster = spec_;
  options.task = TaskId{job, index};
  options.cpus = cpus_per_task_;
  options.file_access = FileAccessPolicy::Unrestricted();
  AF_ASSIGN_OR_RETURN(server, Server::Start(options));
  return Status::OK();
}

}  // namespace actorflow
