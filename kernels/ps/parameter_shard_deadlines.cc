// ParameterShardState's deadlines (kernels/ps/parameter_shard_state.h): requests parked
// past theirs are answered with DeadlineExceeded, saying what they waited for.
#include <algorithm>
#include <string>

#include "kernels/ps/parameter_shard_state.h"

namespace actorflow {

void ParameterShardState::Expire(int64_t now, Replies* out) {
  for (auto it = parked_pulls_.begin(); it != parked_pulls_.end();) {
    if (it->second.deadline > now) {
      ++it;
      continue;
    }
    PullReply r;
    r.id = it->first;
    r.version = version_;
    r.status = DeadlineExceeded(
        name_ + ": pull waited past its deadline: " +
        (initialized_ ? "the shard is at version " + std::to_string(version_) + ", wanted " +
                            std::to_string(it->second.min_version)
                      : std::string("the variables are not initialized yet (the chief's "
                                    "Initialize has not reached this shard)")));
    out->pulls.push_back(std::move(r));
    it = parked_pulls_.erase(it);
  }
  for (auto it = parked_snapshots_.begin(); it != parked_snapshots_.end();) {
    if (it->second.second > now) {
      ++it;
      continue;
    }
    PullReply r;
    r.id = it->first;
    r.version = it->second.first;
    r.status = DeadlineExceeded(name_ + ": snapshot of version " +
                                std::to_string(it->second.first) +
                                " waited past its deadline: the shard is at version " +
                                std::to_string(version_) +
                                (initialized_ ? "" : " and not initialized"));
    out->pulls.push_back(std::move(r));
    it = parked_snapshots_.erase(it);
  }
  for (auto it = held_.begin(); it != held_.end();) {
    if (it->deadline > now) {
      ++it;
      continue;
    }
    out->pushes.push_back(
        PushReply{it->id,
                  DeadlineExceeded(name_ + ": push of worker " + std::to_string(it->push.worker) +
                                   " was held for a checkpoint past its deadline; not applied"),
                  false, 0, version_});
    it = held_.erase(it);
  }
  if (Elastic() && static_cast<int>(pending_.size()) >= config_.min_workers) {
    // The step deadline ends the wait for members that have not pushed (hung, or
    // dead without their connection closing yet): they leave the membership (a
    // "timeout" change), so that later versions do not wait for them again, and
    // the version completes with the gradients that arrived. A worker evicted so
    // must register again before its next push.
    for (const auto& [id, parked] : parked_pushes_) {
      if (parked.deadline <= now) {
        EvictSilentMembers();
        CompleteSyncVersion(out);
        break;
      }
    }
  }
  const int64_t slowest = MinLiveClock();
  for (auto it = parked_pushes_.begin(); it != parked_pushes_.end();) {
    const ParkedPush& p = it->second;
    if (p.deadline > now) {
      ++it;
      continue;
    }
    std::string why = config_.mode == UpdateMode::kSync
                          ? std::to_string(pending_.size()) + " of " +
                                std::to_string(config_.replicas_to_aggregate) +
                                " gradients for version " + std::to_string(version_) +
                                " arrived" + MissingPushers()
                          : "it is " + std::to_string(clocks_[p.worker] - slowest) +
                                " pushes ahead of the slowest live worker (bound " +
                                std::to_string(config_.staleness_bound) + ")";
    out->pushes.push_back(
        PushReply{it->first,
                  Elastic() ? Unavailable(PausedReason() + " (push of worker " +
                                          std::to_string(p.worker) + " not applied)")
                            : DeadlineExceeded(name_ + ": push of worker " +
                                               std::to_string(p.worker) +
                                               " waited past its deadline: " + why),
                  config_.mode != UpdateMode::kSync, p.staleness, version_});
    // The worker was told its gradient was not applied: it must not be later.
    if (config_.mode == UpdateMode::kSync) {
      auto pending = pending_.find(p.worker);
      if (pending != pending_.end() && pending->second.request == it->first) pending_.erase(pending);
    }
    it = parked_pushes_.erase(it);
  }
}

void ParameterShardState::Cancel(RequestId id) {
  parked_pulls_.erase(id);
  parked_pushes_.erase(id);
  parked_snapshots_.erase(id);
  held_.erase(std::remove_if(held_.begin(), held_.end(),
                             [id](const HeldPush& h) { return h.id == id; }),
              held_.end());
}

int64_t ParameterShardState::NextDeadline() const {
  int64_t next = kNoDeadline;
  for (const auto& [id, p] : parked_pulls_) next = std::min(next, p.deadline);
  for (const auto& [id, p] : parked_pushes_) next = std::min(next, p.deadline);
  for (const auto& [id, p] : parked_snapshots_) next = std::min(next, p.second);
  for (const HeldPush& h : held_) next = std::min(next, h.deadline);
  return next;
}

}  // namespace actorflow
