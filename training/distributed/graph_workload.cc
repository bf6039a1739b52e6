#include "training/distributed/graph_workload.h"

#include <map>
#include <string>

namespace actorflow {
namespace {

Status BadCluster(const std::string& field, const std::string& why) {
  return InvalidArgument("TrainerCluster." + field + " " + why);
}

}  // namespace

std::vector<std::string> GraphCluster::PsDevices() const {
  std::vector<std::string> devices;
  for (int p = 0; p < num_ps; ++p) devices.push_back("/job:ps/task:" + std::to_string(p));
  return devices;
}

std::vector<std::string> GraphCluster::WorkerDevices() const {
  std::vector<std::string> devices;
  if (in_process) return devices;
  for (int w = 0; w < num_workers; ++w) {
    devices.push_back("/job:" + job + "/task:" + std::to_string(w));
  }
  return devices;
}

StatusOr<GraphCluster> GraphClusterShape(const TrainerCluster& cluster) {
  GraphCluster shape;
  if (cluster.kind == TrainerCluster::Kind::kLocal) {
    if (cluster.local_ps_tasks < 0) {
      return BadCluster("local_ps_tasks", std::to_string(cluster.local_ps_tasks) +
                                              ": must be >= 0 (0: in-process sessions)");
    }
    if (cluster.local_workers < 1) {
      return BadCluster("local_workers",
                        std::to_string(cluster.local_workers) + ": must be >= 1");
    }
    shape.num_ps = cluster.local_ps_tasks;
    shape.num_workers = cluster.local_workers;
    shape.in_process = shape.num_ps == 0;
    for (int w = 0; w < shape.num_workers; ++w) shape.workers.push_back(w);
    return shape;
  }
  if (cluster.kind == TrainerCluster::Kind::kSimulated) {
    const std::map<std::string, int>& tasks = cluster.simulation.shape.tasks;
    const auto ps = tasks.find("ps");
    const auto workers = tasks.find("worker");
    if (workers == tasks.end() || workers->second < 1) {
      return BadCluster("simulation.shape", "needs a 'worker' job (e.g. sim:ps=1,worker=2)");
    }
    shape.num_ps = ps == tasks.end() ? 0 : ps->second;
    shape.num_workers = workers->second;
    for (int w = 0; w < shape.num_workers; ++w) shape.workers.push_back(w);
    return shape;
  }
  const std::string name = cluster.name.empty() ? "the cluster spec" : cluster.name;
  shape.job = cluster.job;
  shape.num_ps = cluster.spec.num_tasks("ps");
  shape.num_workers = cluster.spec.num_tasks(cluster.job);
  if (shape.num_workers == 0) {
    return BadCluster("job", "'" + cluster.job + "': " + name + " has no such job");
  }
  if (cluster.task < -1 || cluster.task >= shape.num_workers) {
    return BadCluster("task", std::to_string(cluster.task) + ": job " + cluster.job + " of " +
                                  name + " has " + std::to_string(shape.num_workers) +
                                  " tasks (-1: this process drives them all)");
  }
  if (cluster.task >= 0) {
    shape.workers = {cluster.task};
  } else {
    for (int w = 0; w < shape.num_workers; ++w) shape.workers.push_back(w);
  }
  return shape;
}

}  // namespace actorflow
