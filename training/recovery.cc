#include "training/recovery.h"

#include <chrono>
#include <thread>

#include "training/checkpoint.h"
#include "training/ps_checkpoint.h"

namespace actorflow {
namespace {

using Clock = std::chrono::steady_clock;

// Pause between reconnect attempts: a ps task that is coming back needs a moment,
// and a refused connect returns at once.
constexpr auto kReconnectPause = std::chrono::milliseconds(100);

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The driver's view of the parameter servers under supervision: a restarted chief's
// Initialize finding the shards initialized is not an error (they were kept), every
// push's global step is recorded, and the chief checkpoints on schedule.
class SupervisedClient : public ParameterClient {
 public:
  SupervisedClient(ParameterClient* inner, bool chief, const RecoveryOptions& recovery,
                   RecoveryReport* report, RecoveryEvent* pending)
      : inner_(inner), chief_(chief), recovery_(recovery), report_(report), pending_(pending) {}

  Status Register(int worker) override { return inner_->Register(worker); }
  Status Initialize(const std::map<std::string, Tensor>& values) override {
    Status s = inner_->Initialize(values);
    return s.code() == Code::kAlreadyExists ? Status::OK() : s;
  }
  StatusOr<ParameterSnapshot> Pull(int64_t timeout_ms) override {
    AF_ASSIGN_OR_RETURN(ParameterSnapshot s, inner_->Pull(timeout_ms));
    last_step_ = s.global_step;
    return s;
  }
  StatusOr<PushResult> Push(const ParameterSnapshot& base,
                            const std::map<std::string, Tensor>& gradients,
                            int64_t timeout_ms) override {
    AF_ASSIGN_OR_RETURN(PushResult r, inner_->Push(base, gradients, timeout_ms));
    last_step_ = r.global_step;
    report_->global_steps.push_back(r.global_step);
    if (pending_ != nullptr && failed_at_ != Clock::time_point()) {
      pending_->recovery_seconds = SecondsSince(failed_at_);
      failed_at_ = Clock::time_point();
    }
    const int64_t every = recovery_.checkpoint_every_steps;
    if (chief_ && r.applied && every > 0 && !recovery_.checkpoint_dir.empty() &&
        r.global_step % every == 0) {
      AF_ASSIGN_OR_RETURN(PsCheckpointInfo info,
                          SavePsCheckpoint(inner_, recovery_.checkpoint_dir, r.global_step,
                                           timeout_ms, recovery_.max_to_keep));
      report_->last_checkpoint = info.prefix;
    }
    return r;
  }
  StatusOr<ParameterStats> Stats(int64_t timeout_ms) override { return inner_->Stats(timeout_ms); }
  StatusOr<ParameterSnapshot> Snapshot(int64_t version, int64_t timeout_ms) override {
    return inner_->Snapshot(version, timeout_ms);
  }
  Status Restore(const std::map<std::string, Tensor>& values, int64_t version,
                 int64_t timeout_ms) override {
    return inner_->Restore(values, version, timeout_ms);
  }

  int64_t last_step() const { return last_step_; }
  void set_failed_at(Clock::time_point t) { failed_at_ = t; }

 private:
  ParameterClient* inner_;
  bool chief_;
  const RecoveryOptions& recovery_;
  RecoveryReport* report_;
  RecoveryEvent* pending_;
  int64_t last_step_ = 0;
  Clock::time_point failed_at_;
};

}  // namespace

std::string RecoveryReport::Summary() const {
  std::string out;
  int64_t lost = 0;
  for (const RecoveryEvent& e : events) {
    out += "failure at global step " + std::to_string(e.step_at_failure) + " (" +
           e.failure.ToString() + "): resumed from " + std::to_string(e.resumed_from) +
           (e.restored ? " restored from " + e.checkpoint : std::string(" (the shards' state)")) +
           ", " + std::to_string(e.steps_lost) + " steps lost, recovered in " +
           std::to_string(e.recovery_seconds) + " s\n";
    lost += e.steps_lost;
  }
  out += std::to_string(restarts) + " restarts, " + std::to_string(lost) +
         " steps lost in all; last checkpoint " +
         (last_checkpoint.empty() ? std::string("none") : last_checkpoint) + "\n";
  return out;
}

RecoverySupervisor::RecoverySupervisor(DataParallelOptions options, WorkerOptions worker_options,
                                       RecoveryOptions recovery,
                                       ParameterClientFactory client_factory)
    : options_(std::move(options)),
      worker_options_(std::move(worker_options)),
      recovery_(std::move(recovery)),
      client_factory_(std::move(client_factory)) {}

void RecoverySupervisor::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
  if (driver_ != nullptr) driver_->Stop();
}

StatusOr<std::unique_ptr<ParameterClient>> RecoverySupervisor::Reconnect() {
  const auto deadline = Clock::now() + std::chrono::milliseconds(recovery_.reconnect_timeout_ms);
  while (true) {
    StatusOr<std::unique_ptr<ParameterClient>> client = client_factory_(worker_options_.worker);
    if (client.ok() || client.status().code() != Code::kUnavailable || Clock::now() >= deadline) {
      return client;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return Cancelled("stopped while reconnecting");
    }
    std::this_thread::sleep_for(kReconnectPause);
  }
}

Status RecoverySupervisor::PrepareShards(ParameterClient* client, RecoveryEvent* event) {
  StatusOr<ParameterSnapshot> probe = client->Snapshot(-1, options_.timeout_ms);
  if (probe.ok()) {
    event->resumed_from = probe->global_step;
    return Status::OK();
  }
  if (probe.status().code() != Code::kFailedPrecondition) return probe.status();
  // A shard holds nothing: a fresh start, or a ps task that restarted.
  if (recovery_.checkpoint_dir.empty()) return Status::OK();
  StatusOr<std::string> latest = LatestCheckpoint(recovery_.checkpoint_dir);
  if (!latest.ok()) return latest.status().code() == Code::kNotFound ? Status::OK()
                                                                       : latest.status();
  AF_ASSIGN_OR_RETURN(PsCheckpointInfo info,
                      RestorePsCheckpoint(client, *latest, options_.timeout_ms));
  event->restored = true;
  event->checkpoint = info.prefix;
  event->resumed_from = info.global_step;
  return Status::OK();
}

Status RecoverySupervisor::Run(const LabeledData& train, const LabeledData& test,
                               RecoveryReport* report) {
  const bool chief = worker_options_.worker == 0;
  RecoveryEvent event;     // the failure being recovered from, while `recovering`
  bool recovering = false;
  Clock::time_point failed_at;
  int64_t last_step = 0;
  while (true) {
    StatusOr<std::unique_ptr<ParameterClient>> connected = Reconnect();
    Status status = connected.status();
    std::unique_ptr<ParameterClient> client;
    if (status.ok()) client = std::move(connected).value();
    if (status.ok() && chief) {
      RecoveryEvent prepared;
      status = PrepareShards(client.get(), &prepared);
      event.restored = prepared.restored;
      event.checkpoint = prepared.checkpoint;
      event.resumed_from = prepared.resumed_from;
      if (status.ok() && !recovering && prepared.resumed_from > 0) {
        // A restarted chief over shards that kept training state.
        report->global_steps.push_back(prepared.resumed_from);
      }
      if (recovering && event.restored) {
        event.steps_lost = std::max<int64_t>(0, event.step_at_failure - event.resumed_from);
      }
    }
    if (status.ok()) {
      SupervisedClient supervised(client.get(), chief, recovery_, report,
                                  recovering ? &event : nullptr);
      if (recovering) supervised.set_failed_at(failed_at);
      AF_ASSIGN_OR_RETURN(auto driver,
                          WorkerDriver::Create(options_, worker_options_, train, &supervised));
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopped_) return Cancelled("stopped");
        driver_ = driver.get();
      }
      WorkerReport run = driver->Run();
      {
        std::lock_guard<std::mutex> lock(mu_);
        driver_ = nullptr;
      }
      last_step = std::max(last_step, supervised.last_step());
      if (recovering) {
        report->events.push_back(event);
        recovering = false;
      }
      if (run.status.ok()) {
        AF_ASSIGN_OR_RETURN(report->result,
                            FinishDataParallel(options_, &supervised, driver->model(), test, 0));
        return Status::OK();
      }
      status = run.status;
    } else if (recovering) {
      report->events.push_back(event);
    }
    if (status.code() != Code::kUnavailable) return status;
    if (report->restarts >= recovery_.max_restarts) {
      return Unavailable("gave up after " + std::to_string(report->restarts) +
                         " restarts (max_restarts): " + status.ToString() + "\n" +
                         report->Summary());
    }
    ++report->restarts;
    failed_at = Clock::now();
    event = RecoveryEvent();
    event.failure = status;
    event.step_at_failure = last_step;
    recovering = true;
  }
}

}  // namespace actorflow
