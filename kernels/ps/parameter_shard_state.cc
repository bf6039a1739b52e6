#include "kernels/ps/parameter_shard_state.h"

#include <algorithm>

#include "kernels/denormal.h"

namespace actorflow {
namespace {

// At most the first 20 of `xs`, then how many more: a message about thousands of
// workers stays short.
std::string ListOf(const std::set<int>& xs) {
  constexpr size_t kShown = 20;
  std::string out;
  size_t shown = 0;
  for (int x : xs) {
    if (shown++ == kShown) return out + " and " + std::to_string(xs.size() - kShown) + " more";
    out += (out.empty() ? "" : ", ") + std::to_string(x);
  }
  return out;
}

// (g_0 + g_1 + ... + g_k) * factor, summed in the given order: the value the zero-filled
// sum of each gradient in turn gives (0 + g_0 turns a -0 into +0, as here), in three
// passes over fresh memory that the compiler vectorizes.
template <typename T>
Tensor Average(const std::vector<const Tensor*>& gradients, double factor) {
  const Tensor& first = *gradients.front();
  const int64_t n = first.NumElements();
  Tensor out = Tensor::Uninitialized(first.dtype(), first.shape());
  T* __restrict o = out.data<T>();
  const T* __restrict g0 = first.data<T>();
  for (int64_t i = 0; i < n; ++i) o[i] = T(0) + g0[i];
  for (size_t k = 1; k < gradients.size(); ++k) {
    const T* __restrict g = gradients[k]->data<T>();
    for (int64_t i = 0; i < n; ++i) o[i] += g[i];
  }
  const T f = static_cast<T>(factor);
  for (int64_t i = 0; i < n; ++i) o[i] *= f;
  return out;
}

}  // namespace

StatusOr<std::unique_ptr<ParameterShardState>> ParameterShardState::Create(std::string name,
                                                                           ShardConfig config) {
  Status valid = ValidateShardConfig(config);
  if (!valid.ok()) return valid.WithContext(name);
  auto optimizer = ShardOptimizer::Create(config.optimizer, config.learning_rate);
  if (!optimizer.ok()) return optimizer.status();
  return std::unique_ptr<ParameterShardState>(
      new ParameterShardState(std::move(name), std::move(config), std::move(optimizer).value()));
}

ParameterShardState::ParameterShardState(std::string name, ShardConfig config,
                                         std::unique_ptr<ShardOptimizer> optimizer)
    : name_(std::move(name)),
      config_(std::move(config)),
      optimizer_(std::move(optimizer)),
      clocks_(config_.total_replicas, 0),
      applied_by_worker_(config_.total_replicas, 0),
      last_sequence_(config_.total_replicas, 0),
      updates_by_aggregated_(config_.total_replicas + 1, 0) {}

Status ParameterShardState::CheckVariables(const std::vector<std::string>& names,
                                           const std::vector<Tensor>& values,
                                           std::map<std::string, Tensor>* vars) const {
  if (names.size() != values.size()) {
    return InvalidArgument(name_ + ": " + std::to_string(names.size()) + " names but " +
                           std::to_string(values.size()) + " values");
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const Tensor& v = values[i];
    if (names[i].empty()) return InvalidArgument(name_ + ": a variable has no name");
    if (!v.IsInitialized() || (v.dtype() != DType::kFloat32 && v.dtype() != DType::kFloat64)) {
      return InvalidArgument(name_ + ": variable '" + names[i] + "' has value " +
                             (v.IsInitialized() ? v.DebugString() : std::string("<empty>")) +
                             "; parameter servers hold float32 or float64 variables");
    }
    if (!vars->emplace(names[i], v).second) {
      return InvalidArgument(name_ + ": variable '" + names[i] + "' is given twice");
    }
  }
  return Status::OK();
}

Status ParameterShardState::Initialize(const std::vector<std::string>& names,
                                       const std::vector<Tensor>& values, Replies* out) {
  if (initialized_) {
    return AlreadyExists(name_ + " is already initialized (version " + std::to_string(version_) +
                         "): its values were kept");
  }
  std::map<std::string, Tensor> vars;
  AF_RETURN_IF_ERROR(CheckVariables(names, values, &vars));
  variables_ = std::move(vars);
  pending_.clear();
  OpenElasticVersion();
  for (const auto& [name, value] : variables_) optimizer_->AddVariable(name, value);
  values_since_ = version_;
  initialized_ = true;
  ReleasePulls(out);
  return Status::OK();
}

Status ParameterShardState::Restore(const std::vector<std::string>& names,
                                    const std::vector<Tensor>& values,
                                    const std::vector<std::string>& slot_names,
                                    const std::vector<Tensor>& slot_values, int64_t version,
                                    Replies* out) {
  if (version < 0) {
    return InvalidArgument(name_ + ": cannot restore to negative version " +
                           std::to_string(version));
  }
  std::map<std::string, Tensor> vars;
  AF_RETURN_IF_ERROR(CheckVariables(names, values, &vars));
  if (slot_names.size() != slot_values.size()) {
    return InvalidArgument(name_ + ": " + std::to_string(slot_names.size()) + " slot names but " +
                           std::to_string(slot_values.size()) + " slot values");
  }
  std::map<std::string, Tensor> slots;
  for (size_t i = 0; i < slot_names.size(); ++i) {
    if (!slots.emplace(slot_names[i], slot_values[i]).second) {
      return InvalidArgument(name_ + ": slot '" + slot_names[i] + "' is given twice");
    }
  }
  auto created = ShardOptimizer::Create(config_.optimizer, config_.learning_rate);
  if (!created.ok()) return created.status();
  std::unique_ptr<ShardOptimizer> optimizer = std::move(created).value();
  for (const auto& [name, value] : vars) optimizer->AddVariable(name, value);
  Status imported = optimizer->ImportSlots(slots);
  if (!imported.ok()) return imported.WithContext(name_);
  optimizer_ = std::move(optimizer);
  variables_ = std::move(vars);
  previous_.clear();
  previous_slots_.clear();
  pending_.clear();
  OpenElasticVersion();
  const Status aborted = Aborted(name_ + " was restored to version " + std::to_string(version) +
                                 " while this push waited: pull and compute it again");
  for (const auto& [id, parked] : parked_pushes_) {
    out->pushes.push_back(PushReply{id, aborted, false, 0, version});
  }
  parked_pushes_.clear();
  for (const HeldPush& h : held_) out->pushes.push_back(PushReply{h.id, aborted, false, 0, version});
  held_.clear();
  std::fill(last_sequence_.begin(), last_sequence_.end(), 0);
  version_ = std::max(version, version_floor_);
  values_since_ = version_;
  initialized_ = true;
  ReleasePulls(out);
  return Status::OK();
}

void ParameterShardState::RaiseVersion(int64_t floor, Replies* out) {
  version_floor_ = std::max(version_floor_, floor);
  if (!initialized_ || floor <= version_) return;
  const int64_t old = version_;
  updates_lost_ += floor - old;
  version_ = floor;
  previous_.clear();  // no longer the values of version_ - 1
  previous_slots_.clear();
  if (config_.mode == UpdateMode::kSync) {
    for (const auto& [id, parked] : parked_pushes_) {
      out->pushes.push_back(PushReply{id, Status::OK(), false, floor - old, version_});
      ++dropped_stale_;
    }
    parked_pushes_.clear();
    pending_.clear();
    OpenElasticVersion();
  }
  ReleasePulls(out);
}

void ParameterShardState::SnapshotAt(RequestId id, int64_t version, int64_t deadline,
                                     Replies* out) {
  parked_snapshots_[id] = {version, deadline};
  ReleaseSnapshots(out);
}

void ParameterShardState::ReleaseSnapshots(Replies* out) {
  if (!initialized_) return;
  for (auto it = parked_snapshots_.begin(); it != parked_snapshots_.end();) {
    const int64_t want = it->second.first;
    if (want > version_) {
      ++it;
      continue;
    }
    PullReply r;
    r.id = it->first;
    r.version = want;
    // A cut may ask for a version the shard has since relabeled (RaiseVersion, as a
    // reconnecting worker advances the global step between the cutter's reading of
    // the versions and its cut): those values are still the current ones.
    if (want >= values_since_ || (want == values_since_ - 1 && !previous_.empty())) {
      const bool current = want >= values_since_;
      for (const auto& [name, value] : current ? variables_ : previous_) {
        r.names.push_back(name);
        r.values.push_back(value);
      }
      const std::map<std::string, Tensor> slots =
          current ? optimizer_->ExportSlots() : previous_slots_;
      for (const auto& [name, value] : slots) {
        r.slot_names.push_back(name);
        r.slot_values.push_back(value);
      }
    } else {
      r.status = FailedPrecondition(
          name_ + " is at version " + std::to_string(version_) + " and no longer has version " +
          std::to_string(want) + " (only the previous version is kept): cut at a newer version");
    }
    out->pulls.push_back(std::move(r));
    it = parked_snapshots_.erase(it);
  }
}

void ParameterShardState::Hold(bool hold, Replies* out) {
  hold_ = hold;
  if (hold) return;
  std::vector<HeldPush> held;
  held.swap(held_);
  for (const HeldPush& h : held) Push(h.id, h.push, h.deadline, out);
}

ParameterShardState::PullReply ParameterShardState::Snapshot(RequestId id) const {
  PullReply r;
  r.id = id;
  r.version = version_;
  for (const auto& [name, value] : variables_) {
    r.names.push_back(name);
    r.values.push_back(value);
  }
  if (Elastic()) r.membership = Membership();
  return r;
}

void ParameterShardState::ExportCurrent(std::vector<std::string>* names,
                                        std::vector<Tensor>* values,
                                        std::vector<std::string>* slot_names,
                                        std::vector<Tensor>* slot_values) const {
  for (const auto& [name, value] : variables_) {
    names->push_back(name);
    values->push_back(value);
  }
  for (const auto& [name, value] : optimizer_->ExportSlots()) {
    slot_names->push_back(name);
    slot_values->push_back(value);
  }
}

void ParameterShardState::FillValues(PushReply* reply) const {
  reply->names.clear();
  reply->values.clear();
  for (const auto& [name, value] : variables_) {
    reply->names.push_back(name);
    reply->values.push_back(value);
  }
  reply->values_version = version_;
  if (Elastic()) reply->membership = Membership();
}

void ParameterShardState::Pull(RequestId id, int64_t min_version, int64_t deadline, Replies* out) {
  if (initialized_ && min_version <= version_) {
    out->pulls.push_back(Snapshot(id));
    return;
  }
  parked_pulls_[id] = ParkedPull{min_version, deadline};
}

Status ParameterShardState::CheckPush(const ShardPushArgs& push) const {
  const std::string who = "push from worker " + std::to_string(push.worker);
  if (push.names.size() != push.gradients.size()) {
    return InvalidArgument(name_ + ": " + who + " has " + std::to_string(push.names.size()) +
                           " names but " + std::to_string(push.gradients.size()) +
                           " gradients; nothing was applied");
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < push.names.size(); ++i) {
    const std::string& name = push.names[i];
    auto it = variables_.find(name);
    if (it == variables_.end()) {
      return InvalidArgument(name_ + ": " + who + " has a gradient for variable '" + name +
                             "', which this shard does not hold; nothing was applied");
    }
    if (!seen.insert(name).second) {
      return InvalidArgument(name_ + ": " + who + " has two gradients for variable '" + name +
                             "'; nothing was applied");
    }
    const Tensor& g = push.gradients[i];
    const Tensor& v = it->second;
    if (!g.IsInitialized() || g.dtype() != v.dtype() || g.shape() != v.shape()) {
      return InvalidArgument(name_ + ": " + who + ": gradient for variable '" + name + "' is " +
                             (g.IsInitialized() ? g.DebugString() : std::string("<empty>")) +
                             " but the variable is " + v.DebugString() + "; nothing was applied");
    }
  }
  for (const auto& [name, value] : variables_) {
    if (!seen.count(name)) {
      return InvalidArgument(name_ + ": " + who + " has no gradient for variable '" + name +
                             "'; nothing was applied");
    }
  }
  return Status::OK();
}

void ParameterShardState::Push(RequestId id, const ShardPushArgs& push, int64_t deadline,
                               Replies* out) {
  auto reply = [&](Status status, bool applied, int64_t staleness) {
    out->pushes.push_back(PushReply{id, std::move(status), applied, staleness, version_});
  };
  const int w = push.worker;
  const std::string who = "worker " + std::to_string(w);
  if (hold_ && initialized_) {
    held_.push_back(HeldPush{id, push, deadline});
    return;
  }
  if (!initialized_) {
    return reply(FailedPrecondition(name_ + ": " + who +
                                    " pushed before the variables were initialized (the "
                                    "chief must Initialize them first)"),
                 false, 0);
  }
  if (w < 0 || w >= config_.total_replicas) {
    return reply(InvalidArgument(name_ + ": " + who + " is not one of the " +
                                 std::to_string(config_.total_replicas) + " workers"),
                 false, 0);
  }
  if (!IsLive(w)) {
    return reply(FailedPrecondition(name_ + ": " + who +
                                    (lost_.count(w)   ? " was lost"
                                     : left_.count(w) ? " left"
                                                      : " has not joined this elastic training") +
                                    "; it " + kRegisterAgainText + " before pushing"),
                 false, 0);
  }
  if (push.sequence != 0 && push.sequence <= last_sequence_[w]) {
    return reply(Aborted(name_ + ": duplicate push " + std::to_string(push.sequence) + " of " +
                         who + " ignored"),
                 false, 0);
  }
  Status valid = CheckPush(push);
  if (!valid.ok()) return reply(valid, false, 0);
  if (push.base_version > version_) {
    return reply(FailedPrecondition(name_ + ": " + who + " pushed a gradient computed on version " +
                                    std::to_string(push.base_version) + ", but the shard is at " +
                                    std::to_string(version_) + " (was it restarted?)"),
                 false, 0);
  }
  if (push.sequence != 0) last_sequence_[w] = push.sequence;
  const int64_t staleness = version_ - push.base_version;

  if (config_.mode == UpdateMode::kSync) {
    if (staleness > 0) {
      ++dropped_stale_;
      return reply(Status::OK(), false, staleness);
    }
    if (!Elastic()) {
      Status coverage = SyncCoverage();
      if (!coverage.ok()) return reply(coverage, false, 0);
    }
    AddPending(id, push, out);
    ++clocks_[w];
    parked_pushes_[id] = ParkedPush{w, 0, deadline};
    if (Elastic()) return TryCompleteElasticVersion(out);
    if (static_cast<int>(pending_.size()) < config_.replicas_to_aggregate) return;
    CompleteSyncVersion(out);
    return;
  }

  // kAsync and kStaleSynchronous: apply now.
  std::map<std::string, const Tensor*> by_name;
  for (size_t i = 0; i < push.names.size(); ++i) by_name[push.names[i]] = &push.gradients[i];
  std::vector<Tensor> ordered;
  for (const auto& [name, value] : variables_) ordered.push_back(*by_name[name]);
  ApplyUpdate(ordered);
  ++applied_by_worker_[w];
  ++clocks_[w];
  staleness_sum_ += staleness;
  ++staleness_count_;
  max_staleness_ = std::max(max_staleness_, staleness);
  if (config_.mode == UpdateMode::kStaleSynchronous &&
      clocks_[w] - MinLiveClock() > config_.staleness_bound) {
    parked_pushes_[id] = ParkedPush{w, staleness, deadline};
  } else {
    reply(Status::OK(), true, staleness);
  }
  ReleaseSsp(out);
  ReleasePulls(out);
}

void ParameterShardState::AddPending(RequestId id, const ShardPushArgs& push, Replies* out) {
  const int w = push.worker;
  auto earlier = pending_.find(w);
  if (earlier != pending_.end()) {
    // A worker contributes once per version: its newer push (sent after its own
    // deadline for the older one passed) replaces the older, which is answered as
    // not applied.
    auto parked = parked_pushes_.find(earlier->second.request);
    if (parked != parked_pushes_.end()) {
      out->pushes.push_back(PushReply{
          parked->first,
          Aborted(name_ + ": push of worker " + std::to_string(w) + " for version " +
                  std::to_string(version_) + " was replaced by its push " +
                  std::to_string(push.sequence)),
          false, 0, version_});
      parked_pushes_.erase(parked);
    }
  }
  std::map<std::string, const Tensor*> by_name;
  for (size_t i = 0; i < push.names.size(); ++i) by_name[push.names[i]] = &push.gradients[i];
  PendingGradient& pending = pending_[w];
  pending.request = id;
  pending.gradients.clear();
  for (const auto& [name, value] : variables_) pending.gradients.push_back(*by_name[name]);
}

void ParameterShardState::ApplyPending() {
  // Summed in worker order, whatever order the pushes came in: the update depends
  // only on which gradients it averages. Summed as the graph's kernels would sum them
  // (kernels/denormal.h).
  ScopedFlushDenormal flush_denormals;
  std::vector<Tensor> average;
  const double f = 1.0 / static_cast<double>(pending_.size());
  std::vector<const Tensor*> parts;
  for (size_t i = 0; i < variables_.size(); ++i) {
    parts.clear();
    for (const auto& [w, pending] : pending_) parts.push_back(&pending.gradients[i]);
    average.push_back(parts.front()->dtype() == DType::kFloat32 ? Average<float>(parts, f)
                                                                 : Average<double>(parts, f));
  }
  staleness_count_ += static_cast<int64_t>(pending_.size());
  for (const auto& [w, pending] : pending_) ++applied_by_worker_[w];
  pending_.clear();
  ApplyUpdate(average);
}

void ParameterShardState::ApplyUpdate(const std::vector<Tensor>& gradients) {
  // Both share the buffers: Apply copies a variable or slot before writing it.
  previous_ = variables_;
  previous_slots_ = optimizer_->ExportSlots();
  optimizer_->set_schedule_scale(config_.lr_decay.ScaleAt(version_));
  size_t i = 0;
  for (auto& [name, value] : variables_) optimizer_->Apply(name, &value, gradients[i++]);
  optimizer_->FinishUpdate();
  ++version_;
  values_since_ = version_;
}

void ParameterShardState::ReleasePulls(Replies* out) {
  if (!initialized_) return;
  ReleaseSnapshots(out);  // every caller follows a change of version or of values
  for (auto it = parked_pulls_.begin(); it != parked_pulls_.end();) {
    if (it->second.min_version <= version_) {
      out->pulls.push_back(Snapshot(it->first));
      it = parked_pulls_.erase(it);
    } else {
      ++it;
    }
  }
}

void ParameterShardState::ReleaseSsp(Replies* out) {
  if (config_.mode != UpdateMode::kStaleSynchronous) return;
  const int64_t slowest = MinLiveClock();
  for (auto it = parked_pushes_.begin(); it != parked_pushes_.end();) {
    const ParkedPush& p = it->second;
    if (slowest < 0 || !IsLive(p.worker) ||
        clocks_[p.worker] - slowest <= config_.staleness_bound) {
      out->pushes.push_back(PushReply{it->first, Status::OK(), true, p.staleness, version_});
      it = parked_pushes_.erase(it);
    } else {
      ++it;
    }
  }
}

std::string ParameterShardState::MissingPushers() const {
  std::set<int> missing;
  for (int w = 0; w < config_.total_replicas; ++w) {
    if (IsLive(w) && pending_.count(w) == 0) missing.insert(w);
  }
  if (missing.empty()) return "";
  return "; none from worker" + std::string(missing.size() > 1 ? "s " : " ") + ListOf(missing);
}

Status ParameterShardState::SyncCoverage() const {
  // lost_ and left_ are disjoint (Leave moves a worker from one to the other,
  // WorkerLost ignores one that left): counted, not merged, since every worker that
  // leaves asks this again.
  const int live =
      config_.total_replicas - static_cast<int>(lost_.size()) - static_cast<int>(left_.size());
  if (live >= config_.replicas_to_aggregate) return Status::OK();
  std::string why;
  if (!lost_.empty()) why += "lost: worker " + ListOf(lost_);
  if (!left_.empty()) why += std::string(why.empty() ? "" : "; ") + "left: worker " + ListOf(left_);
  return Unavailable(
      name_ + ": only " + std::to_string(live) + " of " + std::to_string(config_.total_replicas) +
      " workers remain (" + why +
      "), fewer than replicas_to_aggregate=" + std::to_string(config_.replicas_to_aggregate) +
      ": version " + std::to_string(version_) + " cannot complete");
}

void ParameterShardState::CheckSyncCoverage(Replies* out) {
  if (config_.mode != UpdateMode::kSync) return;
  if (parked_pushes_.empty() && pending_.empty()) return;  // no one to tell
  Status coverage = SyncCoverage();
  if (coverage.ok()) return;
  for (const auto& [id, parked] : parked_pushes_) {
    out->pushes.push_back(PushReply{id, coverage, false, 0, version_});
  }
  parked_pushes_.clear();
  // Every contributor was told its push failed: none of it may be applied later.
  pending_.clear();
}

bool ParameterShardState::IsLive(int worker) const {
  if (Elastic()) return members_.count(worker) > 0;
  return !lost_.count(worker) && !left_.count(worker);
}

int64_t ParameterShardState::MinLiveClock() const {
  int64_t slowest = -1;
  for (int w = 0; w < config_.total_replicas; ++w) {
    if (IsLive(w) && (slowest < 0 || clocks_[w] < slowest)) slowest = clocks_[w];
  }
  return slowest;
}

Status ParameterShardState::Join(int worker, Replies* out) {
  if (worker < 0 || worker >= config_.total_replicas) {
    return InvalidArgument(name_ + ": worker " + std::to_string(worker) + " is not one of the " +
                           std::to_string(config_.total_replicas) + " workers (total_replicas)");
  }
  if (!IsLive(worker)) {
    const int64_t slowest = MinLiveClock();
    if (slowest > clocks_[worker]) clocks_[worker] = slowest;
    lost_.erase(worker);
    lost_how_.erase(worker);
    left_.erase(worker);
  }
  last_sequence_[worker] = 0;
  if (Elastic()) MemberJoined(worker, out);
  ReleaseSsp(out);
  return Status::OK();
}

void ParameterShardState::Leave(int worker, Replies* out) {
  if (worker < 0 || worker >= config_.total_replicas) return;
  lost_.erase(worker);
  lost_how_.erase(worker);
  left_.insert(worker);
  if (Elastic()) return MemberGone(worker, "leave", out);
  CheckSyncCoverage(out);
  ReleaseSsp(out);
}

void ParameterShardState::WorkerLost(int worker, Replies* out, std::string how) {
  if (worker < 0 || worker >= config_.total_replicas || left_.count(worker)) return;
  lost_.insert(worker);
  if (!how.empty()) lost_how_[worker] = std::move(how);
  if (Elastic()) return MemberGone(worker, "lost", out);
  CheckSyncCoverage(out);
  ReleaseSsp(out);
}

ParameterShardState::Stats ParameterShardState::GetStats() const {
  Stats s;
  s.initialized = initialized_;
  s.variables = static_cast<int64_t>(variables_.size());
  s.version = version_;
  s.gradients_dropped_stale = dropped_stale_;
  s.staleness_sum = staleness_sum_;
  s.staleness_count = staleness_count_;
  s.max_staleness = max_staleness_;
  s.workers_lost.assign(lost_.begin(), lost_.end());
  for (int w : lost_) {
    auto how = lost_how_.find(w);
    s.lost_causes.push_back(how == lost_how_.end() ? "" : how->second);
  }
  s.workers_left.assign(left_.begin(), left_.end());
  s.clocks = clocks_;
  s.parked_pulls = static_cast<int64_t>(parked_pulls_.size());
  s.parked_pushes = static_cast<int64_t>(parked_pushes_.size() + held_.size());
  s.accumulated = static_cast<int64_t>(pending_.size());
  s.applied_by_worker = applied_by_worker_;
  s.members.assign(members_.begin(), members_.end());
  s.membership_epoch = membership_epoch_;
  s.updates_by_aggregated = updates_by_aggregated_;
  s.membership_changes = membership_changes_;
  s.updates_lost = updates_lost_;
  return s;
}

}  // namespace actorflow
