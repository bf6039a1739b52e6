// Checkpoints of a model that lives on parameter servers: the chief takes a
// coordinated cut of every shard (ParameterClient::Snapshot: under sync one global
// step for all shards; under async a hold-read-release cut) and writes it with
// training/checkpoint/checkpoint.h's format, the manifest's global_step being the cut's
// version; it also holds "global_step" (int64), as a model's own Saver checkpoint
// does, so `actorflow predict` and a worker's Saver read it like any other. The
// shards' optimizer slots at the cut are written beside the variables as ordinary
// tensors named "<var>/<suffix>" (e.g. "<var>/Adam_m"; see kernels/ps/shard_optimizer.h;
// none for sgd), which a model's Saver ignores.
// Restoring reads a checkpoint and replaces every shard's variables, slots and
// version with it (ParameterClient::Restore), e.g. after a ps task restarted empty:
// training then continues exactly as it would have from the cut, for every
// optimizer. A checkpoint without slots (sgd, or one of an older version) restores
// its variables with fresh slots.
//
// A checkpoint is written whole or not at all (WriteCheckpointTensors' atomicity):
// a failed cut writes nothing.
//
// Thread safety: as the ParameterClient passed in (one thread at a time).
#ifndef ACTORFLOW_TRAINING_CHECKPOINT_PS_CHECKPOINT_H_
#define ACTORFLOW_TRAINING_CHECKPOINT_PS_CHECKPOINT_H_

#include <cstdint>
#include <string>

#include "graph/status.h"
#include "kernels/parameter_client.h"

namespace actorflow {

struct PsCheckpointInfo {
  std::string prefix;        // "<dir>/ckpt-<version>"
  int64_t global_step = 0;   // the cut's version
};

// Cuts the shards at `version` (< 0: the newest; see ParameterClient::Snapshot) and
// writes "<dir>/ckpt-<version>", keeping `max_to_keep` checkpoints. A cut at the
// step of the newest checkpoint already in `dir` writes nothing and returns it.
// Errors: the client's (Unavailable naming a ps task), WriteCheckpointTensors';
// InvalidArgument when a slot's name is also a variable's.
StatusOr<PsCheckpointInfo> SavePsCheckpoint(ParameterClient* client, const std::string& dir,
                                            int64_t version, int64_t timeout_ms,
                                            int max_to_keep = 5);

// Restores the latest checkpoint of `dir` (or the path prefix `checkpoint`) into
// every shard. NotFound when there is none; Unavailable naming the ps task and its
// address when a shard is unreachable (nothing is partially reported as restored:
// rerun once it is back).
StatusOr<PsCheckpointInfo> RestorePsCheckpoint(ParameterClient* client,
                                               const std::string& checkpoint, int64_t timeout_ms);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_CHECKPOINT_PS_CHECKPOINT_H_
