#include "kernels/ps/shard_worker_protocol.h"

#include <algorithm>
#include <utility>

#include "kernels/ps/shard_results.h"

namespace actorflow {
namespace {

int64_t NewestHeld(const ParameterSnapshot& snapshot, const std::vector<bool>& holds) {
  int64_t newest = 0;
  for (size_t s = 0; s < holds.size(); ++s) {
    if (holds[s]) newest = std::max(newest, snapshot.shard_versions[s]);
  }
  return newest;
}

}  // namespace

ShardWorkerProtocol::ShardWorkerProtocol(ShardWorkerOptions options)
    : options_(std::move(options)) {
  snapshot_.shard_versions.assign(options_.num_shards, 0);
  holds_.assign(options_.num_shards, false);
}

void ShardWorkerProtocol::JoinedAs(int worker) {
  worker_ = worker;
  next_sequence_ = 1;
}

void ShardWorkerProtocol::Remember(const std::string& name, int shard, const Tensor& value) {
  location_[name] = shard;
  like_[name] = Like{value.dtype(), value.shape()};
}

StatusOr<InitializationPlan> ShardWorkerProtocol::PlanInitialization(
    const std::map<std::string, Tensor>& values, const std::string& described_as) const {
  std::map<std::string, int64_t> bytes;
  for (const auto& [name, value] : values) {
    if (!value.IsInitialized() ||
        (value.dtype() != DType::kFloat32 && value.dtype() != DType::kFloat64)) {
      return InvalidArgument("variable '" + name + "' has " + described_as + " " +
                             (value.IsInitialized() ? value.DebugString() : "<empty>") +
                             "; parameter servers hold float32 or float64 variables");
    }
    bytes[name] = static_cast<int64_t>(value.TotalBytes());
  }
  InitializationPlan plan;
  AF_ASSIGN_OR_RETURN(plan.shard_of, options_.assign(bytes, options_.num_shards));
  plan.names.resize(options_.num_shards);
  plan.values.resize(options_.num_shards);
  for (const auto& [name, shard] : plan.shard_of) {  // sorted by name
    plan.names[shard].push_back(name);
    plan.values[shard].push_back(values.at(name));
  }
  return plan;
}

void ShardWorkerProtocol::Initialized(const InitializationPlan& plan) {
  for (int s = 0; s < static_cast<int>(plan.names.size()); ++s) {
    for (size_t i = 0; i < plan.names[s].size(); ++i) {
      Remember(plan.names[s][i], s, plan.values[s][i]);
    }
  }
}

PullRound ShardWorkerProtocol::StartPull() {
  pulling_ = ParameterSnapshot();
  pulling_.shard_versions.assign(options_.num_shards, 0);
  pulling_holds_.assign(options_.num_shards, false);
  membership_from_ = options_.num_shards;
  PullRound round;
  for (int s = 0; s < options_.num_shards; ++s) round.shards.push_back(s);
  return round;
}

Status ShardWorkerProtocol::AddPullReply(int shard, const ShardPullReply& reply) {
  AF_RETURN_IF_ERROR(reply.status);
  pulling_.shard_versions[shard] = reply.version;
  pulling_holds_[shard] = !reply.names.empty();
  if (pulling_holds_[shard] && shard < membership_from_) {
    pulling_.membership = reply.membership;
    membership_from_ = shard;
  }
  for (size_t i = 0; i < reply.names.size() && i < reply.values.size(); ++i) {
    Remember(reply.names[i], shard, reply.values[i]);
    pulling_.values[reply.names[i]] = reply.values[i];
  }
  return Status::OK();
}

PullRound ShardWorkerProtocol::NextPullRound() {
  const int64_t newest = NewestHeld(pulling_, pulling_holds_);
  pulling_.global_step = newest;
  PullRound again;
  if (options_.mode == UpdateMode::kSync && options_.catch_up == SyncCatchUp::kPullShardsBehind) {
    again.min_version = newest;
    for (int s = 0; s < options_.num_shards; ++s) {
      if (pulling_holds_[s] && pulling_.shard_versions[s] < newest) again.shards.push_back(s);
    }
  }
  if (again.shards.empty()) {
    snapshot_ = pulling_;
    holds_ = pulling_holds_;
  }
  return again;
}

int64_t ShardWorkerProtocol::NewestVersion() const { return NewestHeld(snapshot_, holds_); }

int64_t ShardWorkerProtocol::OldestVersion() const {
  int64_t oldest = -1;
  for (size_t s = 0; s < holds_.size(); ++s) {
    const int64_t version = snapshot_.shard_versions[s];
    if (holds_[s] && (oldest < 0 || version < oldest)) oldest = version;
  }
  return std::max<int64_t>(oldest, 0);
}

int64_t ShardWorkerProtocol::BytesHeldBy(int shard) const {
  int64_t bytes = 0;
  for (const auto& [name, at] : location_) {
    const Like& like = like_.at(name);
    if (at == shard) bytes += like.shape.num_elements() * DTypeSize(like.dtype);
  }
  return bytes;
}

Status ShardWorkerProtocol::ValidateGradients(
    const std::map<std::string, Tensor>& gradients) const {
  for (const auto& [name, g] : gradients) {
    if (!location_.count(name)) {
      return InvalidArgument("gradient for unknown variable '" + name +
                             "' (not in the last Pull); nothing was pushed");
    }
    const Like& like = like_.at(name);
    if (!g.IsInitialized() || g.dtype() != like.dtype || g.shape() != like.shape) {
      return InvalidArgument("gradient for variable '" + name + "' is " +
                             (g.IsInitialized() ? g.DebugString() : "<empty>") +
                             " but the variable is " + DTypeName(like.dtype) +
                             like.shape.ToString() + "; nothing was pushed");
    }
  }
  for (const auto& [name, shard] : location_) {
    if (!gradients.count(name)) {
      return InvalidArgument("no gradient for variable '" + name +
                             "': every variable needs one (push zeros for a variable the "
                             "loss does not depend on); nothing was pushed");
    }
  }
  return Status::OK();
}

StatusOr<PushPlan> ShardWorkerProtocol::PlanPush(const ParameterSnapshot& base,
                                                 const std::map<std::string, Tensor>& gradients,
                                                 bool return_values) {
  if (worker_ < 0) return FailedPrecondition("Push before Register: join as a worker first");
  if (static_cast<int>(base.shard_versions.size()) != options_.num_shards) {
    return InvalidArgument("the snapshot has " + std::to_string(base.shard_versions.size()) +
                           " shard versions but there are " +
                           std::to_string(options_.num_shards) +
                           " ps tasks: push on a snapshot from this client's Pull");
  }
  AF_RETURN_IF_ERROR(ValidateGradients(gradients));
  std::vector<ShardPushArgs> per_shard(options_.num_shards);
  for (const auto& [name, g] : gradients) {
    ShardPushArgs& push = per_shard[location_.at(name)];
    push.names.push_back(name);
    push.gradients.push_back(g);
  }
  // kPushToShardsBehind: a shard ahead completed a version the others did not; it
  // waits for them, so the gradient goes to the shards behind only.
  int64_t oldest = -1;
  for (int s = 0; s < options_.num_shards; ++s) {
    const int64_t version = base.shard_versions[s];
    if (!per_shard[s].names.empty() && (oldest < 0 || version < oldest)) oldest = version;
  }
  const bool behind_only = options_.mode == UpdateMode::kSync &&
                           options_.catch_up == SyncCatchUp::kPushToShardsBehind;
  PushPlan plan;
  for (int s = 0; s < options_.num_shards; ++s) {
    if (per_shard[s].names.empty()) continue;
    if (behind_only && base.shard_versions[s] != oldest) continue;
    ShardPushArgs& push = per_shard[s];
    push.worker = worker_;
    push.base_version = base.shard_versions[s];
    push.return_values = return_values;
    plan.shards.push_back(s);
    plan.args.push_back(std::move(push));
  }
  // One number per push that reaches a shard, the same on every shard.
  if (!plan.shards.empty()) {
    const uint64_t sequence = next_sequence_++;
    for (ShardPushArgs& push : plan.args) push.sequence = sequence;
  }
  return plan;
}

StatusOr<PushResult> ShardWorkerProtocol::PushResultOf(
    const std::vector<ShardPushReply>& replies) {
  PushResult result;
  for (const ShardPushReply& r : replies) AF_RETURN_IF_ERROR(AddShardPushReply(r, &result));
  return result;
}

ParameterSnapshot ShardWorkerProtocol::SnapshotFromPushReplies(
    const ParameterSnapshot& base, const PushPlan& plan,
    const std::vector<ShardPushReply>& replies) {
  for (int s = 0; s < options_.num_shards; ++s) {
    if (holds_[s] && std::find(plan.shards.begin(), plan.shards.end(), s) == plan.shards.end()) {
      return ParameterSnapshot();
    }
  }
  ParameterSnapshot next;
  next.shard_versions = base.shard_versions;  // shards without variables keep theirs
  for (size_t pos = 0; pos < plan.shards.size(); ++pos) {
    const ShardPushReply& r = replies[pos];
    if (r.names.empty() || r.names.size() != r.values.size()) return ParameterSnapshot();
    if (options_.mode == UpdateMode::kSync && r.values_version != replies[0].values_version) {
      return ParameterSnapshot();
    }
    next.shard_versions[plan.shards[pos]] = r.values_version;
    next.global_step = std::max(next.global_step, r.values_version);
    if (pos == 0) next.membership = r.membership;
    for (size_t i = 0; i < r.names.size(); ++i) next.values[r.names[i]] = r.values[i];
  }
  for (size_t pos = 0; pos < plan.shards.size(); ++pos) {
    const ShardPushReply& r = replies[pos];
    for (size_t i = 0; i < r.names.size(); ++i) Remember(r.names[i], plan.shards[pos], r.values[i]);
  }
  snapshot_ = next;
  return next;
}

}  // namespace actorflow
