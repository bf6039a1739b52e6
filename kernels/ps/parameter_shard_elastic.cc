// ParameterShardState's elastic membership (kernels/ps/parameter_shard_state.h): which
// workers a synchronous version waits for while workers join and leave, and the
// completion of a version, shared with the fixed-membership protocol.
#include <string>

#include "kernels/ps/parameter_shard_state.h"

namespace actorflow {

void ParameterShardState::CompleteSyncVersion(Replies* out) {
  const int aggregated = static_cast<int>(pending_.size());
  if (config_.lr_scaling == "linear") {
    optimizer_->set_rate_scale(static_cast<double>(aggregated) / config_.total_replicas);
  }
  ApplyPending();
  optimizer_->set_rate_scale(1.0);
  applied_gradients_ += aggregated;
  if (aggregated < static_cast<int>(updates_by_aggregated_.size())) {
    ++updates_by_aggregated_[aggregated];
  }
  for (const auto& [id, parked] : parked_pushes_) {
    PushReply reply{id, Status::OK(), true, 0, version_};
    reply.aggregated = aggregated;
    out->pushes.push_back(std::move(reply));
  }
  parked_pushes_.clear();
  OpenElasticVersion();
  ReleasePulls(out);
}

void ParameterShardState::OpenElasticVersion() {
  if (Elastic()) version_members_ = members_;
}

void ParameterShardState::TryCompleteElasticVersion(Replies* out) {
  if (pending_.empty() || static_cast<int>(version_members_.size()) < config_.min_workers) return;
  for (int member : version_members_) {
    if (!pending_.count(member)) return;
  }
  CompleteSyncVersion(out);
}

void ParameterShardState::MemberJoined(int worker, Replies* out) {
  if (!members_.insert(worker).second) return;  // a repeated Join changes nothing
  RecordMembershipChange("join", worker);
  // A version no gradient has reached yet, or one paused for want of workers, takes
  // the newcomer; otherwise it contributes from the next version (the others'
  // gradients must not wait for its first pull).
  if (pending_.empty() || static_cast<int>(version_members_.size()) < config_.min_workers) {
    version_members_.insert(worker);
  }
  TryCompleteElasticVersion(out);
}

void ParameterShardState::MemberGone(int worker, const char* kind, Replies* out) {
  if (members_.erase(worker) == 0) return;
  RecordMembershipChange(kind, worker);
  // Its gradient, if it arrived, still counts for this version; the version no
  // longer waits for it.
  version_members_.erase(worker);
  TryCompleteElasticVersion(out);
}

void ParameterShardState::WillPushFrom(int worker, int64_t version, Replies* out) {
  if (!Elastic() || version <= version_ || !version_members_.count(worker) ||
      pending_.count(worker) ||
      static_cast<int>(version_members_.size()) - 1 < config_.min_workers) {
    return;
  }
  version_members_.erase(worker);
  TryCompleteElasticVersion(out);
}

void ParameterShardState::EvictSilentMembers() {
  std::vector<int> silent;
  for (int member : version_members_) {
    if (!pending_.count(member)) silent.push_back(member);
  }
  for (int worker : silent) {
    lost_.insert(worker);
    members_.erase(worker);
    version_members_.erase(worker);
    RecordMembershipChange("timeout", worker);
  }
}

void ParameterShardState::RecordMembershipChange(const char* kind, int worker) {
  ++membership_epoch_;
  membership_changes_.push_back(MembershipChange{kind, worker, version_});
}

MembershipView ParameterShardState::Membership() const {
  MembershipView view;
  view.members.assign(version_members_.begin(), version_members_.end());
  view.epoch = membership_epoch_;
  view.applied_gradients = applied_gradients_;
  return view;
}

std::string ParameterShardState::PausedReason() const {
  return name_ + ": " + kTrainingPausedText + ": version " + std::to_string(version_) + " has " +
         std::to_string(version_members_.size()) + " live worker(s), fewer than min_workers=" +
         std::to_string(config_.min_workers) + "; it resumes when workers join";
}

}  // namespace actorflow
