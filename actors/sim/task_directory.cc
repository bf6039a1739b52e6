#include "actors/sim/task_directory.h"

#include <map>

namespace actorflow {
namespace {

struct TaskDirectoryState {
  std::map<std::string, FrontActor> fronts;  // by "host:port"
  const char* name = "actorflow_task_directory";
};

TaskDirectoryActor::behavior_type TaskDirectoryBehavior(
    TaskDirectoryActor::stateful_pointer<TaskDirectoryState> self) {
  return {
      [self](connect_atom, const std::string& host, uint16_t port, int64_t,
             const std::string& who) -> std::tuple<Status, FrontActor> {
        const std::string address = host + ":" + std::to_string(port);
        auto it = self->state.fronts.find(address);
        if (it == self->state.fronts.end()) {
          return {Unavailable("cannot reach " + who + " at " + address +
                              ": no task of the simulated cluster runs there"),
                  FrontActor()};
        }
        return {Status::OK(), it->second};
      },
      [self](directory_put_atom, const std::string& address, const FrontActor& front) {
        if (front) {
          self->state.fronts[address] = front;
        } else {
          self->state.fronts.erase(address);
        }
      },
  };
}

}  // namespace

TaskDirectoryActor SpawnTaskDirectory(caf::actor_system& system) {
  return system.spawn(TaskDirectoryBehavior);
}

}  // namespace actorflow
