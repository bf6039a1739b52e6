// Supervision of a task's device actors (a Server's): the roster of its devices and
// how to respawn each, and the restart decision taken when one of them ends.
//
// A device actor ends abnormally only when something escaped its handlers (kernel
// exceptions are caught by the executor, kernels/executor.h) or someone killed it.
// Its variables live in its DeviceConfig's ResourceManager, so a respawn from the same
// config under the same name keeps them; its registered partitions, early tensors and
// running steps are lost, and the masters that used it drop their plans and register
// again on their next step (device_restarted_atom, actors/protocol/master_protocol.h).
//
// More than `max_restarts` restarts within `window` (all devices together) mean the
// failure is not transient: the roster stops restarting, records the failure and
// calls `on_failure` once, so that the process can exit and its own supervisor (a
// process manager) start a fresh one.
//
// Thread safety: every member is guarded by `mu`; the front actor (restarts) and the
// Server (Stop, failure) use it from different threads. Includes CAF: include only
// from actors/*.cc.
#ifndef ACTORFLOW_ACTORS_RUNTIME_DEVICE_SUPERVISOR_H_
#define ACTORFLOW_ACTORS_RUNTIME_DEVICE_SUPERVISOR_H_

#include <chrono>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "actors/runtime/device_actor.h"
#include "graph/status.h"

namespace actorflow {

struct DeviceRoster {
  std::mutex mu;
  std::string task_name;                 // for log lines
  std::vector<DeviceConfig> configs;     // how to respawn each device
  std::vector<DevicePeer> devices;       // the live actors, parallel to configs
  int max_restarts = 5;
  std::chrono::milliseconds window{60000};
  std::function<void(const std::string& line)> log;  // null: standard error
  std::function<void(const Status& failure)> on_failure;
  // Set by Stop(): devices that end now are being stopped, not failing.
  bool stopping = false;
  Status failure;  // OK until the restarts ran out
  std::deque<std::chrono::steady_clock::time_point> restarts;  // within `window`
};

// Spawns the roster's devices from its configs (before anyone can reach them).
void SpawnRosterDevices(caf::actor_system& system, DeviceRoster& roster);

// Decides what a device's down message means: nothing (not a device of the roster,
// a stop, or the server already failed), a restart (returns the new actor, already
// in the roster, and logs it), or a failure of the whole server (records it, logs
// it and calls on_failure). `reason` is the rendered exit reason, for the log.
std::optional<DevicePeer> RestartFailedDevice(caf::actor_system& system, DeviceRoster& roster,
                                              const caf::actor_addr& source,
                                              const std::string& reason);

// Marks the roster stopping and returns the live device actors, to be stopped; no
// device is restarted after this.
std::vector<DeviceActor> StopRoster(DeviceRoster& roster);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_RUNTIME_DEVICE_SUPERVISOR_H_
