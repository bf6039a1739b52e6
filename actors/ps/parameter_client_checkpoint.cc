// ParameterClientImpl (actors/ps/parameter_client_internal.h): coordinated Snapshot
// and Restore of every shard, as ParameterClient (kernels/parameter_client.h)
// promises them; training/checkpoint/ps_checkpoint.h builds checkpoints on them.
#include <algorithm>

#include "actors/protocol/messages.h"
#include "actors/ps/parameter_client_internal.h"
#include "actors/ps/shard_fanout.h"
#include "actors/protocol/shard_messages.h"
#include "kernels/ps/shard_optimizer.h"

namespace actorflow {
namespace parameter_client_internal {

StatusOr<ParameterSnapshot> ParameterClientImpl::Snapshot(int64_t version, int64_t timeout_ms) {
  const Deadline deadline = Deadline::After(timeout_ms);
  const bool sync = options_.mode == UpdateMode::kSync;
  if (!sync && version >= 0) {
    return InvalidArgument("a snapshot at a chosen version (" + std::to_string(version) +
                           ") needs sync mode: async cuts are taken where the shards are");
  }
  if (!sync) AF_RETURN_IF_ERROR(HoldAll(true, deadline));
  StatusOr<ParameterSnapshot> cut = SnapshotAt(version, deadline);
  if (!sync) {
    Status released = HoldAll(false, Deadline::After(setup_timeout_ms_));
    if (cut.ok() && !released.ok()) return released;
  }
  return cut;
}

Status ParameterClientImpl::Restore(const std::map<std::string, Tensor>& values, int64_t version,
                                    int64_t timeout_ms) {
  // Variables and slots ("V/S" with V a variable), by the naming convention.
  std::map<std::string, Tensor> variables;
  std::map<std::string, std::string> slot_of;  // slot name -> variable
  ShardOptimizer::SplitVariablesAndSlots(values, options_.optimizer, &variables, &slot_of);
  AF_ASSIGN_OR_RETURN(InitializationPlan plan, protocol_.PlanInitialization(variables, "value"));
  std::vector<std::vector<std::string>> slot_names(NumShards());
  std::vector<std::vector<Tensor>> slot_values(NumShards());
  for (const auto& [slot, var] : slot_of) {
    const int t = plan.shard_of.at(var);
    slot_names[t].push_back(slot);
    slot_values[t].push_back(values.at(slot));
  }
  const Deadline deadline = Deadline::After(timeout_ms);
  auto call = Fan<Status>(AllShards(), deadline, [&](size_t t) {
    return std::make_tuple(shard_restore_atom::value, plan.names[t], plan.values[t],
                           slot_names[t], slot_values[t], version);
  });
  AF_RETURN_IF_ERROR(WaitFor(call, deadline, "Restore"));
  for (const Status& s : call->replies()) AF_RETURN_IF_ERROR(s);
  protocol_.Initialized(plan);
  return Status::OK();
}

Status ParameterClientImpl::HoldAll(bool hold, const Deadline& deadline) {
  auto call = Fan<Status>(AllShards(), deadline,
                          [&](size_t) { return std::make_tuple(shard_hold_atom::value, hold); });
  AF_RETURN_IF_ERROR(WaitFor(call, deadline, hold ? "Snapshot (hold)" : "Snapshot (release)"));
  for (const Status& s : call->replies()) AF_RETURN_IF_ERROR(s);
  return Status::OK();
}

StatusOr<ParameterSnapshot> ParameterClientImpl::SnapshotAt(int64_t version,
                                                            const Deadline& deadline) {
  std::vector<int64_t> at(NumShards(), version);
  if (version < 0) {
    auto call = Fan<ShardStats>(AllShards(), deadline,
                                [](size_t) { return std::make_tuple(shard_stats_atom::value); });
    AF_RETURN_IF_ERROR(WaitFor(call, deadline, "Snapshot (versions)"));
    int64_t newest = 0;
    for (size_t t = 0; t < call->replies().size(); ++t) {
      const ShardStats& s = call->replies()[t];
      if (!s.initialized) {
        return FailedPrecondition(names_[t] + " holds no initialized variables: nothing to " +
                                  "snapshot (restore or initialize it first)");
      }
      at[t] = s.version;
      if (s.variables > 0) newest = std::max(newest, s.version);
    }
    if (options_.mode == UpdateMode::kSync) at.assign(NumShards(), newest);
  }
  auto call = Fan<PullReply>(AllShards(), deadline, [&](size_t t) {
    return std::make_tuple(shard_snap_atom::value, at[t], deadline.LeftMs());
  });
  AF_RETURN_IF_ERROR(WaitFor(call, deadline, "Snapshot"));
  ParameterSnapshot snapshot;
  for (size_t t = 0; t < call->replies().size(); ++t) {
    PullReply& r = call->replies()[t];
    AF_RETURN_IF_ERROR(r.status);
    snapshot.shard_versions.push_back(r.version);
    if (!r.names.empty()) snapshot.global_step = std::max(snapshot.global_step, r.version);
    for (size_t i = 0; i < r.names.size() && i < r.values.size(); ++i) {
      snapshot.values[r.names[i]] = r.values[i];
    }
    for (size_t i = 0; i < r.slot_names.size() && i < r.slot_values.size(); ++i) {
      snapshot.slots[r.slot_names[i]] = r.slot_values[i];
    }
  }
  return snapshot;
}

}  // namespace parameter_client_internal
}  // namespace actorflow
