#include "training/distributed/fake_parameter_server.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <utility>

namespace actorflow {

class FakeParameterServer::Client : public ParameterClient {
 public:
  explicit Client(std::shared_ptr<FakeParameterServer> server) : server_(std::move(server)) {}
  ~Client() override {
    if (worker_ >= 0) server_->Disconnect(worker_);
  }

  Status Register(int worker) override {
    AF_RETURN_IF_ERROR(server_->Register(worker));
    worker_ = worker;
    return Status::OK();
  }
  Status Initialize(const std::map<std::string, Tensor>& initial_values) override {
    return server_->Initialize(initial_values);
  }
  StatusOr<ParameterSnapshot> Pull(int64_t timeout_ms) override { return server_->Pull(timeout_ms); }
  StatusOr<PushResult> Push(const ParameterSnapshot& base,
                            const std::map<std::string, Tensor>& gradients,
                            int64_t timeout_ms) override {
    return server_->Push(worker_, base, gradients, timeout_ms);
  }
  StatusOr<ParameterStats> Stats(int64_t) override { return server_->Stats(); }

 private:
  std::shared_ptr<FakeParameterServer> server_;
  int worker_ = -1;
};

std::shared_ptr<FakeParameterServer> FakeParameterServer::Create(
    const ParameterServerOptions& options) {
  return std::shared_ptr<FakeParameterServer>(new FakeParameterServer(options));
}

std::unique_ptr<ParameterClient> FakeParameterServer::NewClient() {
  return std::make_unique<Client>(shared_from_this());
}

int64_t FakeParameterServer::pushes_received() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pushes_received_;
}

Status FakeParameterServer::Register(int worker) {
  std::lock_guard<std::mutex> lock(mu_);
  if (worker < 0 || worker >= options_.total_replicas) {
    return InvalidArgument("worker " + std::to_string(worker) + " is outside [0, " +
                           std::to_string(options_.total_replicas) + ")");
  }
  pushes_by_worker_.emplace(worker, 0);
  lost_.erase(worker);
  return Status::OK();
}

Status FakeParameterServer::Initialize(const std::map<std::string, Tensor>& values) {
  if (options_.optimizer != "sgd") {
    return Unimplemented("the fake parameter server applies only sgd, not '" + options_.optimizer +
                         "'");
  }
  std::lock_guard<std::mutex> lock(mu_);
  values_.clear();
  for (const auto& [name, value] : values) values_[name] = value.DeepCopy();
  initialized_ = true;
  cv_.notify_all();
  return Status::OK();
}

StatusOr<ParameterSnapshot> FakeParameterServer::Pull(int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return initialized_; })) {
    return DeadlineExceeded("pull: the chief has not initialized the variables within " +
                            std::to_string(timeout_ms) + " ms");
  }
  ParameterSnapshot snapshot;
  for (const auto& [name, value] : values_) snapshot.values[name] = value.DeepCopy();
  snapshot.shard_versions = {version_};
  snapshot.global_step = version_;
  return snapshot;
}

void FakeParameterServer::ApplyLocked(const std::map<std::string, Tensor>& gradients,
                                      double scale) {
  const float factor = static_cast<float>(options_.learning_rate * scale);
  for (auto& [name, value] : values_) {
    const Tensor& g = gradients.at(name);
    float* w = value.data<float>();
    const float* d = g.data<float>();
    for (int64_t i = 0; i < value.NumElements(); ++i) w[i] -= factor * d[i];
  }
}

int64_t FakeParameterServer::SlowestLiveLocked() const {
  int64_t slowest = std::numeric_limits<int64_t>::max();
  for (const auto& [worker, pushes] : pushes_by_worker_) {
    if (lost_.count(worker) == 0) slowest = std::min(slowest, pushes);
  }
  return slowest;
}

StatusOr<PushResult> FakeParameterServer::Push(int worker, const ParameterSnapshot& base,
                                               const std::map<std::string, Tensor>& gradients,
                                               int64_t timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::unique_lock<std::mutex> lock(mu_);
  if (!initialized_) return FailedPrecondition("push before the variables were initialized");
  for (const auto& [name, value] : values_) {
    auto it = gradients.find(name);
    if (it == gradients.end()) return InvalidArgument("push: no gradient for '" + name + "'");
    if (it->second.dtype() != value.dtype() || it->second.shape() != value.shape()) {
      return InvalidArgument("push: gradient of '" + name + "' is " + it->second.DebugString() +
                             ", the variable is " + value.DebugString());
    }
  }
  ++pushes_received_;
  const int64_t base_version = base.shard_versions.empty() ? 0 : base.shard_versions[0];
  PushResult result;
  result.staleness = version_ - base_version;
  if (options_.mode == UpdateMode::kSync) {
    if (base_version < version_) {
      ++dropped_;
      result.applied = false;
      result.global_step = version_;
      return result;
    }
    if (accumulated_count_ == 0) {
      for (const auto& [name, g] : gradients) accumulated_[name] = g.DeepCopy();
    } else {
      for (auto& [name, sum] : accumulated_) {
        float* s = sum.data<float>();
        const float* d = gradients.at(name).data<float>();
        for (int64_t i = 0; i < sum.NumElements(); ++i) s[i] += d[i];
      }
    }
    ++pushes_by_worker_[worker];
    if (++accumulated_count_ == options_.replicas_to_aggregate) {
      ApplyLocked(accumulated_, 1.0 / options_.replicas_to_aggregate);
      accumulated_count_ = 0;
      ++version_;
      cv_.notify_all();
    } else if (!cv_.wait_until(lock, deadline, [&] { return version_ > base_version; })) {
      return DeadlineExceeded("push: version " + std::to_string(base_version) + " still has " +
                              std::to_string(accumulated_count_) + " of " +
                              std::to_string(options_.replicas_to_aggregate) +
                              " gradients after " + std::to_string(timeout_ms) + " ms");
    }
    staleness_count_ += 1;
    result.global_step = version_;
    return result;
  }
  if (options_.mode == UpdateMode::kStaleSynchronous) {
    const bool ok = cv_.wait_until(lock, deadline, [&] {
      return pushes_by_worker_[worker] - SlowestLiveLocked() <= options_.staleness_bound;
    });
    if (!ok) {
      return DeadlineExceeded("push: worker " + std::to_string(worker) +
                              " stayed more than " + std::to_string(options_.staleness_bound) +
                              " pushes ahead of the slowest worker for " +
                              std::to_string(timeout_ms) + " ms");
    }
    result.staleness = version_ - base_version;
  }
  ApplyLocked(gradients, 1.0);
  ++version_;
  ++pushes_by_worker_[worker];
  staleness_sum_ += result.staleness;
  ++staleness_count_;
  result.global_step = version_;
  cv_.notify_all();
  return result;
}

StatusOr<ParameterStats> FakeParameterServer::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  ParameterStats stats;
  stats.updates_applied = version_;
  stats.gradients_dropped_stale = dropped_;
  stats.mean_staleness =
      staleness_count_ == 0 ? 0.0 : static_cast<double>(staleness_sum_) / staleness_count_;
  stats.workers_lost.assign(lost_.begin(), lost_.end());
  stats.shards_uninitialized = initialized_ ? 0 : 1;
  return stats;
}

void FakeParameterServer::Disconnect(int worker) {
  std::lock_guard<std::mutex> lock(mu_);
  lost_.insert(worker);
  cv_.notify_all();
}

}  // namespace actorflow
