// The parameter shard protocol: its atoms, the `inspect` overloads of its payloads
// (the payload structs themselves are the CAF-free ones of
// kernels/ps/shard_payloads.h) and the shard's typed interface, ShardActor.
// RegisterMessageTypes (actors/protocol/wire.cc) registers the payloads; tensors travel
// through Tensor's own overload (one raw byte block). The front actor's
// get-or-create message (get_shard_atom) is part of FrontActor
// (actors/protocol/front_protocol.h). Included only by actors/*.cc and actors headers that
// are themselves included only there (CAF).
#ifndef ACTORFLOW_ACTORS_PROTOCOL_SHARD_MESSAGES_H_
#define ACTORFLOW_ACTORS_PROTOCOL_SHARD_MESSAGES_H_

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <caf/all.hpp>

#include "kernels/ps/shard_payloads.h"
#include "actors/protocol/wire_core.h"

namespace actorflow {

using shard_check_atom = caf::atom_constant<caf::atom("scheck")>;
using shard_init_atom = caf::atom_constant<caf::atom("sinit")>;
using shard_pull_atom = caf::atom_constant<caf::atom("spull")>;
using shard_push_atom = caf::atom_constant<caf::atom("spush")>;
using shard_join_atom = caf::atom_constant<caf::atom("sjoin")>;
using shard_leave_atom = caf::atom_constant<caf::atom("sleave")>;
using shard_skip_atom = caf::atom_constant<caf::atom("sskip")>;
using shard_stats_atom = caf::atom_constant<caf::atom("sstats")>;
using shard_snap_atom = caf::atom_constant<caf::atom("ssnap")>;
using shard_restore_atom = caf::atom_constant<caf::atom("srestore")>;
using shard_hold_atom = caf::atom_constant<caf::atom("shold")>;
using shard_floor_atom = caf::atom_constant<caf::atom("sfloor")>;
using shard_sweep_atom = caf::atom_constant<caf::atom("ssweep")>;
using shard_standby_atom = caf::atom_constant<caf::atom("sstandby")>;
using shard_bulk_atom = caf::atom_constant<caf::atom("sbulk")>;
// (shard_values_atom, string key, Tensor value): one value of a push reply sent apart
// (PushReply::values_key), to the worker's parameter client: from its bulk receiver,
// or from the shard when the bulk channel could not carry it.
using shard_values_atom = caf::atom_constant<caf::atom("svalues")>;

// The learning rate travels as its IEEE-754 bits (exact, whatever the value): CAF
// 0.17's portable encoding of a double (detail::pack754) never returns for an
// infinity and converts a NaN to an integer (undefined), so a non-finite rate
// would hang the sender. The shard refuses a non-finite rate itself
// (ValidateShardConfig), with a Status the requester sees.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ShardConfig& x) {
  int32_t mode = static_cast<int32_t>(x.mode);
  static_assert(sizeof(uint64_t) == sizeof(double), "IEEE-754 binary64 expected");
  uint64_t learning_rate_bits = 0;
  std::memcpy(&learning_rate_bits, &x.learning_rate, sizeof(learning_rate_bits));
  uint64_t decay_rate_bits = 0;
  std::memcpy(&decay_rate_bits, &x.lr_decay.decay_rate, sizeof(decay_rate_bits));
  int64_t decay_steps = x.lr_decay.decay_steps;
  auto load = caf::meta::load_callback([&]() -> caf::error {
    if (mode < 0 || mode > static_cast<int32_t>(UpdateMode::kStaleSynchronous)) {
      return caf::make_error(caf::sec::invalid_argument, "bad update mode");
    }
    x.mode = static_cast<UpdateMode>(mode);
    std::memcpy(&x.learning_rate, &learning_rate_bits, sizeof(learning_rate_bits));
    std::memcpy(&x.lr_decay.decay_rate, &decay_rate_bits, sizeof(decay_rate_bits));
    x.lr_decay.decay_steps = decay_steps;
    return caf::none;
  });
  if constexpr (std::is_base_of<caf::serializer, Inspector>::value ||
                std::is_base_of<caf::deserializer, Inspector>::value) {
    return f(caf::meta::type_name("actorflow.ShardConfig"), mode, x.total_replicas,
             x.replicas_to_aggregate, x.staleness_bound, x.optimizer, learning_rate_bits,
             x.elastic, x.min_workers, x.lr_scaling, decay_steps, decay_rate_bits, load);
  } else {  // logging: the rate as a number
    return f(caf::meta::type_name("actorflow.ShardConfig"), mode, x.total_replicas,
             x.replicas_to_aggregate, x.staleness_bound, x.optimizer, x.learning_rate,
             x.elastic, x.min_workers, x.lr_scaling, decay_steps, x.lr_decay.decay_rate);
  }
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, MembershipView& x) {
  return f(caf::meta::type_name("actorflow.MembershipView"), x.members, x.epoch,
           x.applied_gradients);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, MembershipChange& x) {
  return f(caf::meta::type_name("actorflow.MembershipChange"), x.kind, x.worker, x.global_step);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ShardPushArgs& x) {
  return f(caf::meta::type_name("actorflow.ShardPushArgs"), x.worker, x.sequence, x.base_version,
           x.names, x.gradients, x.bulk_key, x.values_endpoint, x.values_key, x.return_values);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ShardPullReply& x) {
  return f(caf::meta::type_name("actorflow.ShardPullReply"), x.id, x.status, x.version, x.names,
           x.values, x.slot_names, x.slot_values, x.membership);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ShardPushReply& x) {
  return f(caf::meta::type_name("actorflow.ShardPushReply"), x.id, x.status, x.applied, x.staleness,
           x.version, x.names, x.values, x.values_version, x.values_key, x.aggregated,
           x.membership);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ShardStats& x) {
  return f(caf::meta::type_name("actorflow.ShardStats"), x.initialized, x.variables, x.version,
           x.gradients_dropped_stale, x.staleness_sum, x.staleness_count, x.max_staleness,
           x.workers_lost, x.lost_causes, x.workers_left, x.clocks, x.parked_pulls, x.parked_pushes,
           x.accumulated, x.applied_by_worker, x.members, x.membership_epoch,
           x.updates_by_aggregated, x.membership_changes, x.updates_lost);
}

// The parameter shard actor (SpawnParameterShard, actors/ps/parameter_shard.h). It
// never blocks: a request that must wait is parked as a response promise. Every
// timeout_ms below is the requester's: <= 0 means no deadline; a parked request
// past it is answered with DeadlineExceeded by the shard itself (a requester's own
// timeout tells the shard nothing). A requester that dies loses its parked requests.
//
//   (shard_check_atom, ShardConfig) -> Status
//       OK when the shard serves this config; FailedPrecondition naming both configs
//       otherwise (the front's get-or-create asks this of an existing shard).
//   (shard_init_atom, vector<string> names, vector<Tensor> values) -> Status
//       The chief's initial values; releases pulls parked before it.
//       AlreadyExists (values and version kept) when already initialized.
//   (shard_pull_atom, int64 min_version, int64 timeout_ms) -> PullReply
//       The values once the shard is initialized and at version >= min_version.
//   (shard_push_atom, ShardPushArgs, int64 timeout_ms) -> PushReply
//       A worker's gradients, applied per the shard's UpdateMode (async: at once;
//       sync: once replicas_to_aggregate gradients for the version came, stale ones
//       dropped and said so; SSP: parked while more than staleness_bound versions
//       ahead of the slowest live worker). With return_values the reply carries the
//       values after the push.
//   (shard_join_atom, int32 worker, actor who) -> Status
//       Registers worker index `worker`; the shard monitors `who` and counts the
//       worker lost when it dies (no longer waited for by sync or SSP).
//   (shard_leave_atom, int32 worker) -> Status      a clean goodbye; always OK
//   (shard_skip_atom, int32 worker, int64 version)
//       Elastic: the worker's next gradient is computed on `version` or later; an
//       earlier version stops waiting for it (ParameterShardState::WillPushFrom).
//   (shard_snap_atom, int64 version, int64 timeout_ms) -> PullReply
//       Values and optimizer slots at exactly `version` (parked until then).
//   (shard_restore_atom, vector<string> names, vector<Tensor> values,
//    vector<string> slot_names, vector<Tensor> slot_values, int64 version) -> Status
//       Replaces the shard's contents with a checkpoint's, at `version`.
//   (shard_hold_atom, bool hold) -> Status          park (true) / apply (false) pushes
//   (shard_floor_atom, int64 floor) -> Status       version := max(version, floor)
//   (shard_stats_atom) -> ShardStats
//   (shard_standby_atom, actor standby) -> Status
//       From now on the shard copies its contents (values, optimizer slots, version)
//       to `standby`, a shard of another ps task, with a restore message after every
//       change of version (and once at once when initialized). The copy is
//       asynchronous: a standby lags by the messages in flight when its primary
//       dies; a standby that is itself a primary's is refused.
//   (shard_bulk_atom, string key, Tensor gradient)
//       One gradient of a push whose ShardPushArgs::bulk_key is set, keyed
//       BulkGradientKey(bulk_key, i): sent by the ps task's bulk receiver (the frame
//       a worker wrote on the bulk channel) or, when the channel could not carry it,
//       by the worker itself. It may come before or after its push; a push waits for
//       its gradients until its deadline (60 s without one), then is answered
//       DeadlineExceeded, not applied. A gradient whose push never comes is dropped
//       after 60 s.
//   (shard_sweep_atom, int64 at_ms)
//       Internal: the delayed message the shard sends itself to expire parked
//       requests whose deadline is at or before `at_ms`.
using ShardActor = caf::typed_actor<
    caf::replies_to<shard_check_atom, ShardConfig>::with<Status>,
    caf::replies_to<shard_init_atom, std::vector<std::string>, std::vector<Tensor>>::with<Status>,
    caf::replies_to<shard_pull_atom, int64_t, int64_t>::with<ShardPullReply>,
    caf::replies_to<shard_push_atom, ShardPushArgs, int64_t>::with<ShardPushReply>,
    caf::replies_to<shard_join_atom, int32_t, caf::actor>::with<Status>,
    caf::replies_to<shard_leave_atom, int32_t>::with<Status>,
    caf::replies_to<shard_snap_atom, int64_t, int64_t>::with<ShardPullReply>,
    caf::replies_to<shard_restore_atom, std::vector<std::string>, std::vector<Tensor>,
                    std::vector<std::string>, std::vector<Tensor>, int64_t>::with<Status>,
    caf::replies_to<shard_hold_atom, bool>::with<Status>,
    caf::replies_to<shard_floor_atom, int64_t>::with<Status>,
    caf::replies_to<shard_stats_atom>::with<ShardStats>,
    caf::replies_to<shard_standby_atom, caf::actor>::with<Status>,
    caf::reacts_to<shard_skip_atom, int32_t, int64_t>,
    caf::reacts_to<shard_bulk_atom, std::string, Tensor>,
    caf::reacts_to<shard_sweep_atom, int64_t>>;

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_PROTOCOL_SHARD_MESSAGES_H_
