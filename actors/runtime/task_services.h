// Per-task registries shared by a task's actors (its device actors, its front
// actor): named queue actors and parameter shard actors live here, so that every
// device of the task, and every remote client through the front actor, reaches the
// same one by name. Created once per task (a Server, or an in-process session).
//
// Thread safety: guarded by `mu`; entries are actor handles, cheap to copy out.
// Includes the queue and shard protocols (CAF): include only from actors/.
#ifndef ACTORFLOW_ACTORS_RUNTIME_TASK_SERVICES_H_
#define ACTORFLOW_ACTORS_RUNTIME_TASK_SERVICES_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "actors/transport/bulk_channel.h"
#include "actors/protocol/master_protocol.h"
#include "actors/protocol/queue_protocol.h"
#include "actors/protocol/shard_messages.h"

namespace actorflow {

struct TaskServices {
  std::string task_name;  // "/job:ps/replica:0/task:0", or the local task
  std::mutex mu;
  // Keyed by "container/name".
  std::map<std::string, QueueActor> queues;
  std::map<std::string, ShardActor> shards;
  // The task's bulk channel sender (null without one): shards write the values of
  // push replies that a worker asked to get apart with it.
  std::shared_ptr<BulkSender> bulk_sender;
  // The masters of the sessions the front opened, by session id, held weakly (the
  // front owns them): the step channel (actors/cluster/step_channel.h) finds a step's master
  // here.
  std::map<uint64_t, caf::weak_actor_ptr> masters;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_RUNTIME_TASK_SERVICES_H_
