#include "actors/runtime/direct_steps.h"

#include <algorithm>
#include <utility>

#include "actors/protocol/messages.h"
#include "actors/runtime/step_ids.h"

namespace actorflow {
namespace {

bool SameFeeds(const std::vector<std::string>& names, const FeedList& feeds) {
  if (names.size() != feeds.size()) return false;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] != feeds[i].first) return false;
  }
  return true;
}

}  // namespace

std::shared_ptr<DirectPlan> DirectSteps::Find(const FeedList& feeds,
                                              const std::vector<std::string>& fetches,
                                              const std::vector<std::string>& targets) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->fetches != fetches || it->targets != targets || !SameFeeds(it->feeds, feeds)) {
      continue;
    }
    if (!it->plan->valid.load(std::memory_order_acquire)) {
      entries_.erase(it);
      return nullptr;
    }
    return it->plan;
  }
  return nullptr;
}

void DirectSteps::Remember(const FeedList& feeds, const std::vector<std::string>& fetches,
                           const std::vector<std::string>& targets,
                           std::shared_ptr<DirectPlan> plan) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Entry& e : entries_) {
    if (e.plan == plan) return;  // another thread's step of the same signature
  }
  if (entries_.size() >= kMaxPlans) entries_.erase(entries_.begin());
  Entry e;
  for (const auto& [name, value] : feeds) e.feeds.push_back(name);
  e.fetches = fetches;
  e.targets = targets;
  e.plan = std::move(plan);
  entries_.push_back(std::move(e));
}

void DirectSteps::Forget(const DirectPlan& plan) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [&](const Entry& e) { return e.plan.get() == &plan; }),
                 entries_.end());
}

int64_t DirectSteps::steps() const { return steps_.load(std::memory_order_relaxed); }

bool DirectSteps::Run(const DirectPlan& plan, int64_t timeout_ms, const FeedList& feeds,
                      size_t num_fetches, const SendAndWait& send, std::vector<Tensor>* outputs,
                      Status* status) {
  const bool answered = RunOnDevice(plan, timeout_ms, feeds, num_fetches, send, outputs, status);
  if (answered) steps_.fetch_add(1, std::memory_order_relaxed);
  return answered;
}

bool DirectSteps::RunOnDevice(const DirectPlan& plan, int64_t timeout_ms, const FeedList& feeds,
                              size_t num_fetches, const SendAndWait& send,
                              std::vector<Tensor>* outputs, Status* status) {
  // The master's checks, in its order.
  for (size_t i = 0; i < feeds.size(); ++i) {
    *status = ValidateFeed(feeds[i].first, plan.signature.feeds[i], feeds[i].second);
    if (!status->ok()) return true;
  }
  auto run = std::make_shared<DirectRun>();
  run->request.step_id = NextStepId(plan.ordinal);
  run->request.partition_id = plan.partition_id;
  run->request.record_executed = false;
  run->request.collect_stats = false;
  run->request.feed_values.reserve(plan.feed_sources.size());
  for (int src : plan.feed_sources) run->request.feed_values.push_back(feeds[src].second);
  run->device = plan.device;
  auto reply = std::make_shared<PartitionReply>();
  run->reply = reply;
  const int64_t step_id = run->request.step_id;
  if (!send(plan.device_actor, std::move(run), reply, timeout_ms)) {
    // As the master words a missed deadline, then aborts the step on its device.
    *status =
        StepDeadlineExceeded(timeout_ms, *plan.device).WithContext("on device " + *plan.device);
    caf::anon_send(plan.device_actor, abort_atom::value, AbortRequest{step_id, *status});
    return true;
  }
  // Answered: the device wrote the reply before setting `ready`.
  if (reply->not_run) {
    Forget(plan);
    return false;
  }
  RunPartitionResult& result = reply->result;
  if (!result.status.ok()) {
    *status = result.status.WithContext("on device " + *plan.device);
    caf::anon_send(plan.device_actor, abort_atom::value, AbortRequest{step_id, *status});
    return true;
  }
  *status = Status::OK();
  if (outputs != nullptr) {
    outputs->assign(num_fetches, Tensor());
    for (size_t k = 0; k < plan.fetch_targets.size() && k < result.fetches.size(); ++k) {
      (*outputs)[plan.fetch_targets[k]] = std::move(result.fetches[k]);
    }
    for (const auto& [fetch, feed] : plan.fed_fetches) (*outputs)[fetch] = feeds[feed].second;
    for (const auto& [fetch, first] : plan.duplicate_fetches) {
      (*outputs)[fetch] = (*outputs)[first];
    }
  }
  return true;
}

}  // namespace actorflow
