#include "actors/runtime/device_supervisor.h"

#include <exception>
#include <iostream>

namespace actorflow {
namespace {

void Log(const DeviceRoster& roster, const std::string& line) {
  if (roster.log) {
    roster.log(line);
  } else {
    std::cerr << line << std::endl;
  }
}

}  // namespace

void SpawnRosterDevices(caf::actor_system& system, DeviceRoster& roster) {
  std::lock_guard<std::mutex> lock(roster.mu);
  roster.devices.clear();
  for (const DeviceConfig& config : roster.configs) {
    roster.devices.push_back(
        DevicePeer{config.name, config.type, SpawnDeviceActor(system, config)});
  }
}

std::optional<DevicePeer> RestartFailedDevice(caf::actor_system& system, DeviceRoster& roster,
                                              const caf::actor_addr& source,
                                              const std::string& reason) {
  std::function<void(const Status&)> notify;
  Status failed;
  std::optional<DevicePeer> restarted;
  {
    std::lock_guard<std::mutex> lock(roster.mu);
    size_t index = roster.devices.size();
    for (size_t i = 0; i < roster.devices.size(); ++i) {
      if (roster.devices[i].actor.address() == source) index = i;
    }
    if (index == roster.devices.size() || roster.stopping || !roster.failure.ok()) {
      return std::nullopt;
    }
    const std::string& device = roster.devices[index].name;
    const auto now = std::chrono::steady_clock::now();
    while (!roster.restarts.empty() && now - roster.restarts.front() > roster.window) {
      roster.restarts.pop_front();
    }
    const std::string budget = std::to_string(roster.max_restarts) + " restarts within " +
                               std::to_string(roster.window.count()) + " ms";
    if (static_cast<int>(roster.restarts.size()) < roster.max_restarts) {
      try {
        DeviceActor fresh = SpawnDeviceActor(system, roster.configs[index]);
        roster.devices[index].actor = fresh;
        roster.restarts.push_back(now);
        restarted = roster.devices[index];
        Log(roster, "actorflow server " + roster.task_name + ": device " + device + " stopped (" +
                        reason + "); restarted it (restart " +
                        std::to_string(roster.restarts.size()) + " of at most " + budget + ")");
      } catch (const std::exception& e) {
        failed = Unavailable("device " + device + " of " + roster.task_name + " stopped (" +
                             reason + ") and could not be restarted: " + e.what());
      }
    } else {
      failed = Unavailable("device " + device + " of " + roster.task_name + " stopped (" +
                           reason + ") after " + budget + ": the server has failed; restart it");
    }
    if (!failed.ok()) {
      roster.failure = failed;
      notify = roster.on_failure;
      Log(roster, "actorflow server " + roster.task_name + ": " + failed.message());
    }
  }
  // Outside the lock: the callback may ask the server for its failure().
  if (notify) notify(failed);
  return restarted;
}

std::vector<DeviceActor> StopRoster(DeviceRoster& roster) {
  std::lock_guard<std::mutex> lock(roster.mu);
  roster.stopping = true;
  std::vector<DeviceActor> actors;
  for (const DevicePeer& d : roster.devices) actors.push_back(d.actor);
  return actors;
}

}  // namespace actorflow
