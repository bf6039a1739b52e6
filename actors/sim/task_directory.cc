#include "actors/sim/task_directory.h"

#include <utility>

#include "placement/cluster_spec.h"

namespace actorflow {

void TaskRegistry::Put(const std::string& address, const TaskId& task, const FrontActor& front) {
  std::lock_guard<std::mutex> lock(mu_);
  fronts_[address] = {task, front};
}

void TaskRegistry::Remove(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  fronts_.erase(address);
}

bool TaskRegistry::Find(const std::string& address, TaskId* task, FrontActor* front) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = fronts_.find(address);
  if (it == fronts_.end()) return false;
  *task = it->second.first;
  *front = it->second.second;
  return true;
}

namespace {

struct TaskDirectoryState {
  std::shared_ptr<TaskRegistry> registry;
  TaskId viewer;
  std::shared_ptr<SimNetwork> network;
  const char* name = "actorflow_task_directory";
};

ConnectorActor::behavior_type TaskDirectoryBehavior(
    ConnectorActor::stateful_pointer<TaskDirectoryState> self, std::shared_ptr<TaskRegistry> registry,
    TaskId viewer, std::shared_ptr<SimNetwork> network) {
  self->state.registry = std::move(registry);
  self->state.viewer = std::move(viewer);
  self->state.network = std::move(network);
  return {
      [self](connect_atom, const std::string& host, uint16_t port, int64_t,
             const std::string& who) -> std::tuple<Status, FrontActor> {
        const std::string address = TaskAddress{host, port}.ToString();
        TaskId task;
        FrontActor front;
        if (!self->state.registry->Find(address, &task, &front)) {
          return {Unavailable("cannot reach " + who + " at " + address +
                              ": no task of the simulated cluster runs there"),
                  FrontActor()};
        }
        if (self->state.network) front = self->state.network->LinkHandle(self->state.viewer, task, front);
        return {Status::OK(), front};
      },
  };
}

}  // namespace

ConnectorActor SpawnTaskDirectory(caf::actor_system& system, std::shared_ptr<TaskRegistry> registry,
                                  TaskId viewer, std::shared_ptr<SimNetwork> network) {
  return system.spawn(TaskDirectoryBehavior, std::move(registry), std::move(viewer),
                      std::move(network));
}

}  // namespace actorflow
