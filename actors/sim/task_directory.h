// The directory of a cluster whose tasks share one actor system (a simulated
// cluster): it answers a task's masters' connect requests (ConnectorActor's protocol,
// actors/transport/connect.h) with the front registered for the address, at once and without a
// network. Each task gets its own directory actor over one shared registry, so that
// the front it hands out can be a link proxy from that task (actors/sim/sim_link.h).
// Includes CAF: actors/ and tests only.
//
// Protocol (ConnectorActor):
//   (connect_atom, host, port, timeout_ms, who) -> (Status, FrontActor)
//       The front registered at host:port, through the network's link from the
//       directory's task when it has a network; Unavailable naming `who` and the
//       address when none is registered (never started, or killed).
#ifndef ACTORFLOW_ACTORS_SIM_TASK_DIRECTORY_H_
#define ACTORFLOW_ACTORS_SIM_TASK_DIRECTORY_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "actors/transport/connect.h"
#include "actors/sim/sim_link.h"

namespace actorflow {

// Which front runs at which address. Thread-safe.
class TaskRegistry {
 public:
  void Put(const std::string& address, const TaskId& task, const FrontActor& front);
  void Remove(const std::string& address);
  // False when nothing is registered at `address`.
  bool Find(const std::string& address, TaskId* task, FrontActor* front) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::pair<TaskId, FrontActor>> fronts_;
};

// The directory seen by `viewer`'s masters. `network` may be null (no link proxies).
ConnectorActor SpawnTaskDirectory(caf::actor_system& system, std::shared_ptr<TaskRegistry> registry,
                                  TaskId viewer, std::shared_ptr<SimNetwork> network);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SIM_TASK_DIRECTORY_H_
