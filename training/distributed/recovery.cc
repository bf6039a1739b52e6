#include "training/distributed/recovery.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <system_error>
#include <set>
#include <thread>

#include "graph/steady_clock.h"
#include "training/checkpoint/checkpoint.h"
#include "training/estimators/model_spec.h"
#include "training/checkpoint/ps_checkpoint.h"

namespace actorflow {
namespace {

using Clock = std::chrono::steady_clock;

// Pause between reconnect attempts and between looks at the live workers: a ps task
// or a worker that is coming back needs a moment, and a refused connect returns at
// once.
constexpr auto kRetryPause = std::chrono::milliseconds(100);
// Waits for lost workers that end, again, without a single push in between: after
// this many the failure counts as a restart (a quorum that comes back only to fail
// again at once is not one to wait on forever).
constexpr int kMaxIdleWorkerWaits = 10;

// The driver's view of the parameter servers under supervision: a restarted chief's
// Initialize finding the shards initialized is not an error (they were kept), every
// global step seen is checked against the highest one before it, and the chief
// checkpoints on schedule.
class SupervisedClient : public ParameterClient {
 public:
  SupervisedClient(ParameterClient* inner, bool chief, bool sync, const RecoveryOptions& recovery,
                   const DNNModelSpec& spec, RecoveryReport* report, RecoveryEvent* pending)
      : inner_(inner),
        chief_(chief),
        sync_(sync),
        recovery_(recovery),
        spec_(spec),
        report_(report),
        pending_(pending) {}

  Status Register(int worker) override { return inner_->Register(worker); }
  Status Initialize(const std::map<std::string, Tensor>& values) override {
    Status s = inner_->Initialize(values);
    return s.code() == Code::kAlreadyExists ? Status::OK() : s;
  }
  StatusOr<ParameterSnapshot> Pull(int64_t timeout_ms) override {
    AF_ASSIGN_OR_RETURN(ParameterSnapshot s, inner_->Pull(timeout_ms));
    Observe(s.global_step);
    if (pending_ != nullptr && !resumed_seen_) {
      pending_->resumed_from = std::max(pending_->resumed_from, s.global_step);
      resumed_seen_ = true;
    }
    return s;
  }
  StatusOr<PushResult> Push(const ParameterSnapshot& base,
                            const std::map<std::string, Tensor>& gradients,
                            int64_t timeout_ms) override {
    AF_ASSIGN_OR_RETURN(PushResult r, inner_->Push(base, gradients, timeout_ms));
    AF_RETURN_IF_ERROR(AfterPush(r, timeout_ms));
    return r;
  }
  StatusOr<PushResult> PushAndPull(const ParameterSnapshot& base,
                                   const std::map<std::string, Tensor>& gradients,
                                   int64_t timeout_ms, ParameterSnapshot* next) override {
    AF_ASSIGN_OR_RETURN(PushResult r, inner_->PushAndPull(base, gradients, timeout_ms, next));
    AF_RETURN_IF_ERROR(AfterPush(r, timeout_ms));
    Observe(next->global_step);
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
  Status AdvanceGlobalStep(int64_t at_least, int64_t timeout_ms) override {
    return inner_->AdvanceGlobalStep(at_least, timeout_ms);
  }

  void set_failed_at(Clock::time_point t) { failed_at_ = t; }

 private:
  // What follows every successful push: the monotonicity check, the recovery time
  // of a pending failure, the chief's scheduled checkpoint.
  Status AfterPush(const PushResult& r, int64_t timeout_ms) {
    Observe(r.global_step);
    report_->global_steps.push_back(r.global_step);
    if (pending_ != nullptr && failed_at_ != Clock::time_point()) {
      pending_->recovery_seconds = SecondsSince(failed_at_);
      failed_at_ = Clock::time_point();
      if (recovery_.log) {
        recovery_.log("resumed at global step " + std::to_string(pending_->resumed_from) + ", " +
                      std::to_string(pending_->recovery_seconds) + " s after the failure");
      }
    }
    // A checkpoint whenever the global step crosses a multiple of `every`: exactly at
    // the multiples in sync mode (one version per step); in async mode other
    // workers' pushes may step over one, and the cut is taken where the shards are.
    const int64_t every = recovery_.checkpoint_every_steps;
    if (chief_ && r.applied && every > 0 && !recovery_.checkpoint_dir.empty() &&
        r.global_step / every > report_->last_checkpoint_step / every) {
      // The model description goes with the first checkpoint (before it: a checkpoint
      // is never there without it), so that an interrupted run can serve `predict`.
      if (report_->last_checkpoint.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(recovery_.checkpoint_dir, ec);
        if (ec) {
          return FailedPrecondition("checkpoint directory '" + recovery_.checkpoint_dir +
                                    "' cannot be created: " + ec.message());
        }
        AF_RETURN_IF_ERROR(WriteModelSpec(recovery_.checkpoint_dir, spec_));
      }
      AF_ASSIGN_OR_RETURN(PsCheckpointInfo info,
                          SavePsCheckpoint(inner_, recovery_.checkpoint_dir,
                                           sync_ ? r.global_step : -1, timeout_ms,
                                           recovery_.max_to_keep));
      report_->last_checkpoint_step = info.global_step;
      if (info.prefix != report_->last_checkpoint && recovery_.log) {
        recovery_.log("checkpoint " + info.prefix + " at global step " +
                      std::to_string(info.global_step));
      }
      report_->last_checkpoint = info.prefix;
    }
    return Status::OK();
  }

  void Observe(int64_t step) {
    if (step < report_->highest_global_step) report_->global_step_monotone = false;
    report_->highest_global_step = std::max(report_->highest_global_step, step);
  }

  ParameterClient* inner_;
  bool chief_;
  bool sync_;  // cuts at the push's own global step (else where the shards are)
  const RecoveryOptions& recovery_;
  const DNNModelSpec& spec_;
  RecoveryReport* report_;
  RecoveryEvent* pending_;
  bool resumed_seen_ = false;
  Clock::time_point failed_at_;
};

// "lost: worker 2 at 10.0.0.3:2222 (its connection closed or went silent); left:
// worker 1" from the shards' stats. A shard loses a worker when the connection to it
// is closed: by the worker's end (it died) or by the failure detector (it hung, or
// its link was cut: actors/transport/server_limits.h).
std::string GoneList(const ParameterStats& stats, const std::vector<std::string>& addresses) {
  std::string text;
  for (const auto& [what, workers] : {std::make_pair("lost", &stats.workers_lost),
                                      std::make_pair("left", &stats.workers_left)}) {
    if (workers->empty()) continue;
    const bool lost = workers == &stats.workers_lost;
    text += std::string(text.empty() ? "" : "; ") + what + ": worker ";
    for (size_t i = 0; i < workers->size(); ++i) {
      const int w = (*workers)[i];
      text += (i == 0 ? "" : ", ") + std::to_string(w);
      if (w >= 0 && static_cast<size_t>(w) < addresses.size()) text += " at " + addresses[w];
    }
    if (!lost) continue;
    // One cause for the list: the shards' account where they agree.
    std::string how;
    for (int w : *workers) {
      auto it = stats.lost_causes.find(w);
      const std::string cause = it == stats.lost_causes.end() ? "" : it->second;
      how = (w == workers->front() || how == cause) ? cause : "";
    }
    text += " (" + (how.empty() ? std::string("its connection closed or went silent") : how) + ")";
  }
  return text;
}

void AddRun(const WorkerReport& run, WorkerReport* total) {
  total->steps += run.steps;
  total->applied += run.applied;
  total->dropped_stale += run.dropped_stale;
  total->delay_seconds += run.delay_seconds;
  total->last_loss = run.last_loss;
  total->global_step = std::max(total->global_step, run.global_step);
  total->status = run.status;
}

}  // namespace

std::string RecoveryReport::Summary() const {
  std::string out;
  int64_t lost = 0;
  for (const RecoveryEvent& e : events) {
    out += "failure at global step " + std::to_string(e.step_at_failure) + " (" +
           e.failure.ToString() + "): ";
    if (e.waited_for_workers) {
      out += "waited for the lost workers to rejoin";
    } else if (e.restored) {
      out += "restored " + e.checkpoint + " (global step " + std::to_string(e.checkpoint_step) +
             ")";
    } else {
      out += "reconnected to the shards' state";
    }
    out += ", resumed at global step " + std::to_string(e.resumed_from) + ", " +
           std::to_string(e.steps_lost) + " updates lost, recovered in " +
           std::to_string(e.recovery_seconds) + " s\n";
    lost += e.steps_lost;
  }
  out += std::to_string(restarts) + " restarts, " + std::to_string(lost) +
         " updates lost in all; last checkpoint " +
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

bool RecoverySupervisor::stopped() {
  std::lock_guard<std::mutex> lock(mu_);
  return stopped_;
}

void RecoverySupervisor::Log(const std::string& line) const {
  if (recovery_.log) recovery_.log(line);
}

StatusOr<std::unique_ptr<ParameterClient>> RecoverySupervisor::Reconnect() {
  const auto deadline = Clock::now() + std::chrono::milliseconds(recovery_.reconnect_timeout_ms);
  while (true) {
    StatusOr<std::unique_ptr<ParameterClient>> client = client_factory_(worker_options_.worker);
    if (client.ok() || client.status().code() != Code::kUnavailable || Clock::now() >= deadline) {
      return client;
    }
    if (stopped()) return Cancelled("stopped while reconnecting");
    std::this_thread::sleep_for(kRetryPause);
  }
}

bool RecoverySupervisor::WaitForWorkers(ParameterClient* client) {
  if (options_.ps.mode != UpdateMode::kSync) return false;
  const auto deadline = Clock::now() + std::chrono::milliseconds(recovery_.reconnect_timeout_ms);
  bool said = false;
  while (true) {
    StatusOr<ParameterStats> stats = client->Stats(options_.timeout_ms);
    if (!stats.ok()) return false;  // a ps task is unreachable: reconnect instead
    std::set<int> gone(stats->workers_lost.begin(), stats->workers_lost.end());
    gone.insert(stats->workers_left.begin(), stats->workers_left.end());
    const int live = options_.ps.total_replicas - static_cast<int>(gone.size());
    if (live >= options_.ps.replicas_to_aggregate) return true;
    if (!said) {
      // Said at once, so that the names of the missing workers reach the user while
      // this worker waits, not only after they are back.
      Log("only " + std::to_string(live) + " of " + std::to_string(options_.ps.total_replicas) +
          " workers are live (" + GoneList(*stats, recovery_.worker_addresses) +
          "), fewer than replicas_to_aggregate=" +
          std::to_string(options_.ps.replicas_to_aggregate) + ": waiting up to " +
          std::to_string(recovery_.reconnect_timeout_ms) + " ms for them to rejoin");
      said = true;
    }
    if (Clock::now() >= deadline || stopped()) return false;
    std::this_thread::sleep_for(kRetryPause);
  }
}

StatusOr<ParameterSnapshot> RecoverySupervisor::ProbeShards(ParameterClient* client,
                                                            bool* holds_nothing) {
  *holds_nothing = false;
  StatusOr<ParameterSnapshot> probe = client->Snapshot(-1, options_.timeout_ms);
  for (int attempt = 1;; ++attempt) {
    if (probe.ok() || probe.status().code() != Code::kFailedPrecondition) return probe;
    AF_ASSIGN_OR_RETURN(ParameterStats stats, client->Stats(options_.timeout_ms));
    if (stats.shards_uninitialized > 0) {
      *holds_nothing = true;
      return probe;
    }
    // Every shard is live: the cut failed because they moved under it.
    if (attempt == kProbeAttempts) return probe;
    probe = client->Snapshot(-1, options_.timeout_ms);
  }
}

Status RecoverySupervisor::PrepareShards(ParameterClient* client, RecoveryEvent* event,
                                         RecoveryReport* report, bool at_start) {
  StatusOr<std::string> latest = recovery_.checkpoint_dir.empty()
                                     ? StatusOr<std::string>(NotFound("no checkpoint directory"))
                                     : LatestCheckpoint(recovery_.checkpoint_dir);
  if (!latest.ok() && latest.status().code() != Code::kNotFound) return latest.status();
  bool holds_nothing = false;
  StatusOr<ParameterSnapshot> probe = ProbeShards(client, &holds_nothing);
  if (probe.ok()) {
    event->resumed_from = probe->global_step;
    if (at_start && probe->global_step > 0) {
      report->started_from = probe->global_step;
      std::string line = "the parameter servers hold the model at global step " +
                         std::to_string(probe->global_step);
      if (latest.ok()) {
        report->start_checkpoint = *latest;
        StatusOr<int64_t> step = ReadCheckpointGlobalStep(*latest);
        if (step.ok()) report->last_checkpoint_step = *step;
        line += "; the latest checkpoint " + *latest + " is at global step " +
                (step.ok() ? std::to_string(*step) : std::string("?")) +
                ": continuing from the shards (nothing lost)";
      }
      Log(line);
    }
    return Status::OK();
  }
  if (!holds_nothing) return probe.status();
  // A shard holds nothing: a fresh start, or a ps task that restarted.
  if (!latest.ok()) return Status::OK();
  AF_ASSIGN_OR_RETURN(PsCheckpointInfo info,
                      RestorePsCheckpoint(client, *latest, options_.timeout_ms));
  event->restored = true;
  event->checkpoint = info.prefix;
  event->checkpoint_step = info.global_step;
  report->last_checkpoint_step = info.global_step;
  AF_ASSIGN_OR_RETURN(ParameterSnapshot now, client->Snapshot(-1, options_.timeout_ms));
  event->resumed_from = now.global_step;
  if (at_start) {
    report->started_from = now.global_step;
    report->start_checkpoint = info.prefix;
    report->start_restored = true;
  }
  Log("restored " + info.prefix + " (global step " + std::to_string(info.global_step) +
      ") into the parameter servers; the global step goes on from " +
      std::to_string(now.global_step));
  return Status::OK();
}

Status RecoverySupervisor::Run(const LabeledData& train, const LabeledData& test,
                               RecoveryReport* report) {
  const bool chief = worker_options_.worker == 0;
  const Clock::time_point start = Clock::now();
  WorkerReport total;
  total.worker = worker_options_.worker;
  std::unique_ptr<ParameterClient> client;
  RecoveryEvent event;  // the failure being recovered from, while `recovering`
  bool recovering = false;
  bool at_start = true;
  int idle_waits = 0;  // worker waits since the last driver run that pushed
  Clock::time_point failed_at;
  while (true) {
    Status status;
    if (client == nullptr) {
      StatusOr<std::unique_ptr<ParameterClient>> connected = Reconnect();
      status = connected.status();
      if (status.ok()) client = std::move(connected).value();
      if (status.ok() && report->highest_global_step > 0) {
        status = client->AdvanceGlobalStep(report->highest_global_step, options_.timeout_ms);
        if (status.code() == Code::kUnimplemented) status = Status::OK();
      }
      if (status.ok() && chief) {
        RecoveryEvent prepared;
        status = PrepareShards(client.get(), &prepared, report, at_start);
        event.restored = prepared.restored;
        event.checkpoint = prepared.checkpoint;
        event.checkpoint_step = prepared.checkpoint_step;
        event.resumed_from = prepared.resumed_from;
        if (status.ok() && at_start && prepared.resumed_from > 0) {
          report->global_steps.push_back(prepared.resumed_from);
          report->highest_global_step = prepared.resumed_from;
        }
        if (recovering && event.restored) {
          event.steps_lost = std::max<int64_t>(0, event.step_at_failure - event.checkpoint_step);
        }
      }
      at_start = false;
      if (!status.ok()) client.reset();
    }
    if (status.ok()) {
      SupervisedClient supervised(client.get(), chief, options_.ps.mode == UpdateMode::kSync,
                                  recovery_, options_.spec, report,
                                  recovering ? &event : nullptr);
      if (recovering) supervised.set_failed_at(failed_at);
      WorkerOptions worker_options = worker_options_;
      worker_options.steps_done = total.steps;  // the data and share go on from there
      AF_ASSIGN_OR_RETURN(auto driver,
                          WorkerDriver::Create(options_, worker_options, train, &supervised));
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
      AddRun(run, &total);
      if (run.steps > 0) idle_waits = 0;
      if (recovering) {
        report->events.push_back(event);
        recovering = false;
      }
      if (run.status.ok()) {
        AF_ASSIGN_OR_RETURN(report->result,
                            FinishDataParallel(options_, &supervised, driver->model(), test, 0));
        total.seconds = SecondsSince(start);
        report->result.workers = {total};
        report->result.seconds = total.seconds;
        return Status::OK();
      }
      status = run.status;
    } else if (recovering) {
      report->events.push_back(event);
      recovering = false;
    }
    if (status.code() != Code::kUnavailable) return status;
    failed_at = Clock::now();
    event = RecoveryEvent();
    event.failure = status;
    event.step_at_failure = report->highest_global_step;
    recovering = true;
    if (client != nullptr && idle_waits < kMaxIdleWorkerWaits && WaitForWorkers(client.get())) {
      ++idle_waits;
      // The ps tasks answer: the sync quorum lacked workers, and they are back.
      event.waited_for_workers = true;
      Log("waited for lost workers to rejoin after: " + status.ToString());
      continue;
    }
    if (stopped()) return Cancelled("stopped");
    if (report->restarts >= recovery_.max_restarts) {
      return Unavailable("gave up after " + std::to_string(report->restarts) +
                         " restarts (max_restarts): " + status.ToString() + "\n" +
                         report->Summary());
    }
    ++report->restarts;
    Log("lost the parameter servers (" + status.ToString() + "); reconnecting, restart " +
        std::to_string(report->restarts) + " of " + std::to_string(recovery_.max_restarts));
    client.reset();
  }
}

}  // namespace actorflow
