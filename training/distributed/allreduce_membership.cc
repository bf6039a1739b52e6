#include "training/distributed/allreduce_membership.h"

#include <algorithm>
#include <chrono>

namespace actorflow {

int AllReduceMembership::Epoch::Rank(int worker) const {
  auto it = std::find(members.begin(), members.end(), worker);
  return it == members.end() ? -1 : static_cast<int>(it - members.begin());
}

AllReduceMembership::AllReduceMembership(int workers, int min_members)
    : min_members_(std::max(1, min_members)) {
  for (int w = 0; w < workers; ++w) current_.members.push_back(w);
}

StatusOr<AllReduceMembership::Epoch> AllReduceMembership::WaitForEpoch(int worker, int64_t after,
                                                                     int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    if (!failure_.empty()) return FailedPrecondition(failure_);
    if (finished_) return OutOfRange("the run ended");
    if (current_.number > after && current_.Rank(worker) >= 0 && left_.count(worker) == 0) {
      return current_;
    }
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) {
      return DeadlineExceeded("worker " + std::to_string(worker) + " waited " +
                              std::to_string(timeout_ms) + " ms for a membership epoch");
    }
  }
}

bool AllReduceMembership::MayStart(int worker, int64_t epoch, int64_t step) {
  std::lock_guard<std::mutex> lock(mu_);
  (void)worker;
  if (epoch != current_.number || finished_ || !failure_.empty()) return false;
  if (stop_at_ >= 0 && step >= stop_at_) return false;
  max_started_ = std::max(max_started_, step);
  return true;
}

void AllReduceMembership::ReportEnd(int worker, int64_t epoch, End how) {
  std::lock_guard<std::mutex> lock(mu_);
  if (epoch != current_.number || current_.Rank(worker) < 0 || !left_.insert(worker).second) return;
  if (how == End::kFinished) finished_ = true;
  if (how == End::kSelfLost) {
    lost_.insert(worker);
    ++losses_;
  }
  if (left_.size() < current_.members.size()) return;
  if (!finished_) StartNextEpoch();
  changed_.notify_all();
}

void AllReduceMembership::StartNextEpoch() {
  Epoch next;
  next.number = current_.number + 1;
  for (int w : current_.members) {
    if (lost_.count(w) == 0) next.members.push_back(w);
  }
  for (int w : joiners_) {
    if (std::find(next.members.begin(), next.members.end(), w) == next.members.end()) {
      next.members.push_back(w);
      ++joins_;
    }
  }
  std::sort(next.members.begin(), next.members.end());
  for (size_t i = 0; i < next.members.size(); ++i) {
    if (current_.Rank(next.members[i]) >= 0 && lost_.count(next.members[i]) == 0) {
      next.root = static_cast<int>(i);
      break;
    }
  }
  joiners_.clear();
  lost_.clear();
  left_.clear();
  stop_at_ = -1;
  max_started_ = -1;
  if (static_cast<int>(next.members.size()) < min_members_) {
    failure_ = "only " + std::to_string(next.members.size()) +
               " worker(s) left, fewer than the " + std::to_string(min_members_) + " required";
  }
  current_ = std::move(next);
}

bool AllReduceMembership::EndForJoiners(int64_t epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  if (epoch != current_.number || joiners_.empty() || stop_at_ >= 0) return false;
  // A member may already wait in the collective of the latest step started: every
  // member still runs that one, and none starts the one after.
  stop_at_ = max_started_ + 1;
  return true;
}

void AllReduceMembership::RequestJoin(int worker) {
  std::lock_guard<std::mutex> lock(mu_);
  joiners_.insert(worker);
}

int64_t AllReduceMembership::epochs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_.number + 1;
}
int64_t AllReduceMembership::losses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return losses_;
}
int64_t AllReduceMembership::joins() const {
  std::lock_guard<std::mutex> lock(mu_);
  return joins_;
}
std::vector<int> AllReduceMembership::last_members() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_.members;
}

}  // namespace actorflow
