// The parameter shard protocol's vocabulary: atoms and the `inspect` overloads of its
// payloads (the payload structs themselves are the CAF-free ones of
// actors/parameter_shard_state.h). RegisterMessageTypes (actors/wire.cc) registers
// them; tensors travel through Tensor's own overload (one raw byte block).
//
// Messages (a shard is the actor SpawnParameterShard made; a front is a Server's):
//   front: (shard_atom, name, ShardConfig) -> (Status, shard actor)   get-or-create
//   shard: (shard_atom, ShardConfig) -> Status          FailedPrecondition on a conflict
//          (shard_init_atom, names, values) -> Status
//          (shard_pull_atom, min_version, timeout_ms) -> PullReply
//          (shard_push_atom, ShardPushArgs, timeout_ms) -> PushReply   (with the values
//                                                         when return_values)
//          (shard_join_atom, worker, worker actor) -> Status   the shard monitors it
//          (shard_leave_atom, worker) -> Status
//          (shard_stats_atom) -> Stats
//          (shard_snap_atom, version, timeout_ms) -> PullReply   values and optimizer
//                                                   slots at exactly version
//          (shard_restore_atom, names, values, slot_names, slot_values, version) -> Status
//          (shard_hold_atom, bool hold) -> Status              park / apply pushes
//          (shard_floor_atom, floor) -> Status      version := max(version, floor)
// timeout_ms <= 0: no deadline. Included only by actors/*.cc.
#ifndef ACTORFLOW_ACTORS_SHARD_MESSAGES_H_
#define ACTORFLOW_ACTORS_SHARD_MESSAGES_H_

#include <caf/all.hpp>

#include "actors/parameter_shard_state.h"

namespace actorflow {

using shard_atom = caf::atom_constant<caf::atom("shard")>;
using shard_init_atom = caf::atom_constant<caf::atom("sinit")>;
using shard_pull_atom = caf::atom_constant<caf::atom("spull")>;
using shard_push_atom = caf::atom_constant<caf::atom("spush")>;
using shard_join_atom = caf::atom_constant<caf::atom("sjoin")>;
using shard_leave_atom = caf::atom_constant<caf::atom("sleave")>;
using shard_stats_atom = caf::atom_constant<caf::atom("sstats")>;
using shard_snap_atom = caf::atom_constant<caf::atom("ssnap")>;
using shard_restore_atom = caf::atom_constant<caf::atom("srestore")>;
using shard_hold_atom = caf::atom_constant<caf::atom("shold")>;
using shard_floor_atom = caf::atom_constant<caf::atom("sfloor")>;
using shard_sweep_atom = caf::atom_constant<caf::atom("ssweep")>;  // to itself

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ShardConfig& x) {
  int32_t mode = static_cast<int32_t>(x.mode);
  auto load = caf::meta::load_callback([&]() -> caf::error {
    if (mode < 0 || mode > static_cast<int32_t>(UpdateMode::kStaleSynchronous)) {
      return caf::make_error(caf::sec::invalid_argument, "bad update mode");
    }
    x.mode = static_cast<UpdateMode>(mode);
    return caf::none;
  });
  return f(caf::meta::type_name("actorflow.ShardConfig"), mode, x.total_replicas,
           x.replicas_to_aggregate, x.staleness_bound, x.optimizer, x.learning_rate, load);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ShardPushArgs& x) {
  return f(caf::meta::type_name("actorflow.ShardPushArgs"), x.worker, x.sequence, x.base_version,
           x.names, x.gradients, x.return_values);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ParameterShardState::PullReply& x) {
  return f(caf::meta::type_name("actorflow.ShardPullReply"), x.id, x.status, x.version, x.names,
           x.values, x.slot_names, x.slot_values);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ParameterShardState::PushReply& x) {
  return f(caf::meta::type_name("actorflow.ShardPushReply"), x.id, x.status, x.applied, x.staleness,
           x.version, x.names, x.values, x.values_version);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ParameterShardState::Stats& x) {
  return f(caf::meta::type_name("actorflow.ShardStats"), x.initialized, x.variables, x.version,
           x.gradients_dropped_stale, x.staleness_sum, x.staleness_count, x.max_staleness,
           x.workers_lost, x.workers_left, x.clocks, x.parked_pulls, x.parked_pushes,
           x.accumulated);
}

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SHARD_MESSAGES_H_
