// LocalCluster: a whole cluster in one process, for tests and for
// `actorflow train --cluster local:ps=1,worker=2`. Each task is a real Server with
// its own actor system, published on 127.0.0.1 on a free port, so the tasks talk
// through CAF's middleman over loopback exactly as separate processes do.
// CAF-free header.
#ifndef ACTORFLOW_ACTORS_CLUSTER_LOCAL_CLUSTER_H_
#define ACTORFLOW_ACTORS_CLUSTER_LOCAL_CLUSTER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/cluster/server.h"
#include "graph/status.h"
#include "placement/cluster_spec.h"

namespace actorflow {

class LocalCluster {
 public:
  // `shape`: job -> number of tasks (e.g. {"ps": 1, "worker": 2}); every task gets
  // `cpus_per_task` CPU devices.
  static StatusOr<std::unique_ptr<LocalCluster>> Start(const std::map<std::string, int>& shape,
                                                       int cpus_per_task = 1);
  ~LocalCluster();

  const ClusterSpec& spec() const { return spec_; }
  // "actorflow://127.0.0.1:PORT" of a task; InvalidArgument for an unknown task.
  StatusOr<std::string> Target(const std::string& job, int index) const;
  // Stops one task (as if its process died) / starts it again on the same port.
  Status StopTask(const std::string& job, int index);
  Status RestartTask(const std::string& job, int index);
  // A running task's server (its bulk channel's traffic, its failure), or null for an
  // unknown or stopped task.
  const Server* server(const std::string& job, int index) const;

 private:
  LocalCluster() = default;
  ClusterSpec spec_;
  int cpus_per_task_ = 1;
  std::map<std::string, std::vector<std::unique_ptr<Server>>> servers_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_CLUSTER_LOCAL_CLUSTER_H_
