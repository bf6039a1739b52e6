// The parameter shard actor: one ps task's share of a model's variables, an
// event-based actor over ParameterShardState (kernels/ps/parameter_shard_state.h holds
// the protocols; actors/protocol/shard_messages.h the messages). It never blocks: a request
// that must wait (a pull before the chief's Initialize or for a later version, a
// sync push waiting for the other replicas, an SSP push too far ahead) is parked as
// a response promise and answered by the message that releases it.
//
// A requester's own timeout tells the shard nothing, so parked requests are bounded
// here too: each request carries its timeout, the shard computes a deadline on its
// clock and sweeps with a delayed message to itself (DeadlineExceeded to the
// promise), and it monitors every requester that has a parked request, forgetting
// its requests when it dies. Registered workers (join) are monitored as well: their
// death makes them lost (no longer counted by SSP or sync, reported in stats).
//
// Servers create shards through their front actor (get-or-create by name in the
// task's TaskServices, actors/cluster/server.cc); tests spawn them directly.
#ifndef ACTORFLOW_ACTORS_PS_PARAMETER_SHARD_H_
#define ACTORFLOW_ACTORS_PS_PARAMETER_SHARD_H_

#include <memory>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "actors/transport/bulk_channel.h"
#include "kernels/ps/parameter_shard_state.h"
#include "actors/protocol/shard_messages.h"
#include "actors/runtime/task_services.h"
#include "graph/status.h"

namespace actorflow {

// Spawns a shard named `name` (the name starts its error messages). The config's
// errors (ValidateShardConfig) come back without spawning anything. Its protocol is
// documented at ShardActor (actors/protocol/shard_messages.h).
// `bulk`, when given, writes the values of push replies that a worker asked to get
// apart (ShardPushArgs::values_endpoint); without it they stay in the reply.
StatusOr<ShardActor> SpawnParameterShard(caf::actor_system& system, const std::string& name,
                                         const ShardConfig& config,
                                         std::shared_ptr<BulkSender> bulk = nullptr);

// The front actor's (get_shard_atom, name, config) handler: the shard `name` of the
// task (created on first use, under services.mu) if its config equals `config`;
// InvalidArgument for a bad config, FailedPrecondition naming both configs when the
// shard exists with another one. Answers (Status, shard or a null handle) through
// `self`'s response promise.
caf::result<Status, ShardActor> GetOrCreateShard(caf::local_actor* self,
                                                 TaskServices& services, const std::string& name,
                                                 const ShardConfig& config);

// Stops the shards whose key's container ("container/name") is in `containers`
// (every shard when empty) and forgets them; their clients see them go down.
void ClearShards(TaskServices& services, const std::vector<std::string>& containers);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_PS_PARAMETER_SHARD_H_
