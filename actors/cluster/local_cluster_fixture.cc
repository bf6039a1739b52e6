#include "actors/cluster/local_cluster_fixture.h"

#include <cassert>
#include <sstream>
#include <utility>

namespace actorflow {
namespace {

std::string DescribeShape(const std::map<std::string, int>& shape) {
  std::ostringstream text;
  const char* separator = "";
  for (const auto& [job, tasks] : shape) {
    text << separator << job << "=" << tasks;
    separator = ",";
  }
  return text.str();
}

}  // namespace

LocalCluster* LocalClusterTest::StartCluster(const std::map<std::string, int>& shape,
                                             int cpus_per_task) {
  StatusOr<std::unique_ptr<LocalCluster>> started = LocalCluster::Start(shape, cpus_per_task);
  if (!started.ok()) {
    ADD_FAILURE() << "LocalCluster " << DescribeShape(shape) << " did not start: "
                  << started.status();
    return nullptr;
  }
  clusters_.push_back(std::move(started).value());
  return clusters_.back().get();
}

LocalCluster& LocalClusterTest::cluster() {
  assert(!clusters_.empty() && "StartCluster first");
  return *clusters_.back();
}

std::string LocalClusterTest::Target(const std::string& job, int index) {
  if (clusters_.empty()) {
    ADD_FAILURE() << "Target(" << job << ", " << index << ") before StartCluster";
    return "";
  }
  StatusOr<std::string> target = clusters_.back()->Target(job, index);
  if (!target.ok()) {
    ADD_FAILURE() << target.status();
    return "";
  }
  return *target;
}

LocalClusterTest::PsClientFactory LocalClusterTest::PsClients(
    const LocalCluster& cluster, const ParameterServerOptions& options,
    int64_t connect_timeout_ms, const std::string& ps_job) {
  const ClusterSpec spec = cluster.spec();
  return [spec, options, connect_timeout_ms, ps_job](int) {
    return ConnectParameterServers(spec, ps_job, options, connect_timeout_ms);
  };
}

void LocalClusterTest::TearDown() {
  while (!clusters_.empty()) clusters_.pop_back();
}

}  // namespace actorflow
