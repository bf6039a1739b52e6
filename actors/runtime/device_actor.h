// The device actor: one per device (CPU:n, later GPU:n). It owns the variables placed
// on its device, runs the partitions registered with it using the foundation's
// Executor, and is the receiving end of every Send addressed to its device.
//
// Its protocol (messages, replies, contracts) is documented at DeviceActor in
// actors/protocol/device_protocol.h.
// The actor never blocks its thread: a Recv that has no tensor yet parks a callback
// that the tensor's arrival (or the step's abort) fires.
// Queue ops: the device is its kernels' QueueService (actors/runtime/device_queue_client.h):
// it creates and finds the task's queue actors in DeviceConfig::services and waits
// for their answers as messages; an abort withdraws the step's waiting queue
// requests (their queues stay usable), operation_timeout_in_ms bounds each wait.
// A kernel that throws fails only its step (kernels/executor.h); a device actor that
// ends anyway is restarted by its owner (a Server) from the same DeviceConfig.
#ifndef ACTORFLOW_ACTORS_RUNTIME_DEVICE_ACTOR_H_
#define ACTORFLOW_ACTORS_RUNTIME_DEVICE_ACTOR_H_

#include <memory>
#include <string>

#include "actors/transport/bulk_channel.h"
#include "actors/protocol/device_protocol.h"
#include "actors/runtime/task_services.h"
#include "kernels/file_access.h"
#include "kernels/resource.h"

namespace actorflow {

struct DeviceConfig {
  std::string name;  // full device name
  std::string type;  // "CPU", "GPU", ...
  // Variables of this device; shared so that they can outlive a session (servers).
  std::shared_ptr<ResourceManager> resources;
  // Deadline for each blocking op (Recv, queue ops without their own) in ms; 0 = none.
  int64_t operation_timeout_in_ms = 0;
  // The task's shared registries (queues, parameter shards); never null once spawned
  // by a session or server.
  std::shared_ptr<TaskServices> services;
  // Where its kernels may open files named by a graph (kernels/file_access.h); null:
  // anywhere (an in-process session). A server always sets one.
  std::shared_ptr<const FileAccessPolicy> file_access;
  // Sends of at least bulk_min_bytes to a device of another process that advertises
  // a bulk endpoint go through this channel (and over CAF when it cannot deliver);
  // null or 0: every Send goes over CAF.
  std::shared_ptr<BulkSender> bulk_sender;
  int64_t bulk_min_bytes = 0;
};

DeviceActor SpawnDeviceActor(caf::actor_system& system, DeviceConfig config);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_RUNTIME_DEVICE_ACTOR_H_
