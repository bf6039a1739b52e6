#include "actors/sim/sim_training.h"

#include <cmath>
#include <limits>
#include <cstdio>
#include <set>

#include "actors/protocol/shard_messages.h"
#include "actors/sim/sim_worker.h"
#include "actors/sim/simulated_cluster_impl.h"

namespace actorflow {

double SimComputeModel::StepMicros(double flops, uint64_t seed, int worker, int64_t step) const {
  const double base = step_us >= 0 ? step_us : flops / (device_gflops * 1e3);
  return base * StragglerFactor(stragglers, seed, worker, step);
}

int64_t SimTrainingReport::invariant_violations() const {
  int64_t n = 0;
  for (const SimInvariantResult& r : invariants) n += static_cast<int64_t>(r.violations.size());
  return n;
}

std::string HashParameters(const std::map<std::string, Tensor>& parameters) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const auto& [name, t] : parameters) {
    for (char c : name) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 0x100000001b3ULL;
    }
    const auto* bytes = static_cast<const unsigned char*>(t.raw_data());
    for (size_t i = 0; i < t.TotalBytes(); ++i) {
      hash ^= bytes[i];
      hash *= 0x100000001b3ULL;
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

namespace {

// A bound on the orchestration loop, whatever the run does (every timer is a round).
constexpr int64_t kMaxRounds = 200000000;

Status CheckTrainingOptions(const SimTrainingOptions& options, const SimClusterShape& shape) {
  if (options.workload == nullptr) return InvalidArgument("simulated training needs a workload");
  if (!shape.tasks.count("ps") || !shape.tasks.count("worker")) {
    return InvalidArgument("simulated data-parallel training needs a ps and a worker job");
  }
  if (options.steps < 1) {
    return InvalidArgument("steps must be at least 1, got " + std::to_string(options.steps));
  }
  if (options.timeout_ms <= 0) {
    return InvalidArgument("timeout_ms must be > 0 (virtual), got " +
                           std::to_string(options.timeout_ms));
  }
  if (!(options.max_virtual_seconds > 0)) {
    return InvalidArgument("max_virtual_seconds must be > 0");
  }
  if (!(options.compute.device_gflops > 0) || !std::isfinite(options.compute.step_us)) {
    return InvalidArgument("the compute model needs device_gflops > 0 and a finite step_us");
  }
  return Status::OK();
}


}  // namespace

double WorstOneWayMicros(const SimulatedCluster::Options& sim, int64_t largest_message_bytes) {
  double us = sim.link.TransferMicros(largest_message_bytes) + sim.link.jitter_us;
  bool reorders = false;
  for (const Fault& f : sim.faults.faults) {
    if (f.action == Fault::Action::kDelay) us += (f.delay_ms + f.jitter_ms) * 1000.0;
    if (f.action == Fault::Action::kReorder) reorders = true;
  }
  if (reorders) us += 10 * sim.link.latency_us;
  return us;
}

StatusOr<SimTrainingReport> SimulatedCluster::TrainDataParallel(const SimTrainingOptions& options) {
  Impl& impl = *impl_;
  AF_RETURN_IF_ERROR(CheckTrainingOptions(options, impl.options.shape));
  const int workers = impl.options.shape.tasks.at("worker");
  const int num_ps = impl.options.shape.tasks.at("ps");
  auto run = std::make_shared<SimRunState>();
  run->options = options;
  run->options.ps.total_replicas = workers;
  if (options.ps.mode != UpdateMode::kSync) run->options.ps.replicas_to_aggregate = 1;
  run->config = ShardConfigFrom(run->options.ps);
  AF_RETURN_IF_ERROR(ValidateShardConfig(run->config));
  run->num_shards = num_ps;
  run->seed = impl.options.seed;
  run->now_seconds = [this] { return VirtualSeconds(); };
  run->next_eval_step = options.eval_every;
  SimWorkerCounts fresh;
  fresh.shard_applied.assign(num_ps, 0);
  fresh.shard_unknown.assign(num_ps, 0);
  run->workers.assign(workers, fresh);
  AF_ASSIGN_OR_RETURN(auto initial, options.workload->InitialValues());
  int64_t model_bytes = 0;
  for (const auto& [name, value] : initial) model_bytes += static_cast<int64_t>(value.TotalBytes());
  run->request_slack_us = 2 * WorstOneWayMicros(impl.options, model_bytes + 4096);

  std::vector<std::string> ps_hosts, ps_names;
  std::vector<uint16_t> ps_ports;
  for (int j = 0; j < num_ps; ++j) {
    const TaskId ps{"ps", j};
    AF_ASSIGN_OR_RETURN(TaskAddress address, impl.cluster.Address(ps));
    ps_hosts.push_back(address.host);
    ps_ports.push_back(address.port);
    ps_names.push_back(ps.ToString());
  }
  std::vector<bool> driving(workers, false);  // a driver of the worker is alive
  auto start_driver = [&](int w) {
    Impl::TaskSlot& slot = impl.tasks.at(TaskId{"worker", w}.ToString());
    SimWorkerSetup setup;
    setup.worker = w;
    setup.directory = slot.directory;
    setup.ps_hosts = ps_hosts;
    setup.ps_ports = ps_ports;
    setup.ps_names = ps_names;
    setup.run = run;
    run->workers[w].finished = false;
    run->workers[w].status.clear();
    slot.companions.push_back(SpawnSimWorker(*impl.system, std::move(setup)));
    driving[w] = true;
  };
  for (int w = 0; w < workers; ++w) {
    if (impl.tasks.at(TaskId{"worker", w}.ToString()).alive) start_driver(w);
  }

  // Runs the cluster, carrying out the plan's kills and restarts when due, until
  // every driver finished (or none can go on).
  SimTrainingReport report;
  std::vector<bool> fault_done(impl.options.faults.faults.size(), false);
  const double run_start = VirtualSeconds();
  // A run is hung when nothing moves for longer than a stuck driver takes to give
  // up (each failed attempt waits at most a backoff of one timeout, then a pull and
  // a push, each its timeout plus the links' round trip); a run still moving at
  // max_virtual_seconds is out of time, not hung.
  const double attempt_s = 3 * options.timeout_ms / 1000.0 + 2 * run->request_slack_us / 1e6;
  const double stall_s = (options.max_consecutive_failures + 2) * attempt_s + 1;
  double last_progress_s = run_start;
  int64_t progress_mark = -1;
  for (int64_t rounds = 0;; ++rounds) {
    if (rounds > kMaxRounds) {
      report.hung = true;
      report.hang = "the simulation took more than " + std::to_string(kMaxRounds) +
                    " scheduler rounds";
      break;
    }
    impl.Drain();
    if (run->progress != progress_mark) {
      progress_mark = run->progress;
      last_progress_s = VirtualSeconds();
    }
    bool acted = false;
    double next_fault_s = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < fault_done.size(); ++i) {
      const Fault& f = impl.options.faults.faults[i];
      if (fault_done[i] ||
          (f.action != Fault::Action::kKill && f.action != Fault::Action::kRestart)) {
        continue;
      }
      const bool due = (f.at_step >= 0 && run->max_global_step >= f.at_step) ||
                       (f.at_s >= 0 && VirtualSeconds() >= f.at_s);
      if (!due) {
        if (f.at_s >= 0) next_fault_s = std::min(next_fault_s, f.at_s);
        continue;
      }
      fault_done[i] = true;
      acted = true;
      if (f.action == Fault::Action::kKill) {
        if (!KillTask(f.task).ok()) continue;  // already down
        if (f.task.job == "worker") {
          ++report.workers_lost;
          ++run->workers[f.task.index].killed;
          driving[f.task.index] = false;
        }
      } else if (RestartTask(f.task).ok() && f.task.job == "worker") {
        start_driver(f.task.index);
      }
    }
    // A restarted driver has work before any timer: run it first.
    if (acted) continue;
    // Done when no driver runs and none is due back at a virtual time (a restart at
    // a global step the finished run never reaches is not waited for).
    bool all_done = true;
    for (int w = 0; w < workers && all_done; ++w) {
      if (driving[w] && !run->workers[w].finished) all_done = false;
    }
    for (size_t i = 0; i < fault_done.size() && all_done; ++i) {
      const Fault& f = impl.options.faults.faults[i];
      if (!fault_done[i] && f.action == Fault::Action::kRestart && f.at_s >= 0 &&
          f.task.job == "worker" && !driving[f.task.index]) {
        all_done = false;
      }
    }
    if (all_done) break;
    // A kill or restart due at a virtual time before the next timer happens then.
    auto& clock = impl.sched->clock();
    if (std::isfinite(next_fault_s)) {
      // Rounded up, so that the fault is due once the clock is there.
      const auto fault_at =
          impl.start + std::chrono::ceil<caf::timespan>(std::chrono::duration<double>(next_fault_s)) +
          caf::timespan(1);
      if (clock.schedule().empty() || clock.schedule().begin()->first > fault_at) {
        clock.current_time = fault_at;
        continue;
      }
    }
    std::string why;
    if (VirtualSeconds() - last_progress_s > stall_s) {
      why = "nothing moved for " + std::to_string(stall_s) + " virtual s";
    } else if (!report.out_of_time && VirtualSeconds() - run_start > options.max_virtual_seconds) {
      // Still moving: every driver ends at its next step boundary, as at the end of
      // a run, so that nothing is cut off mid-request.
      report.out_of_time = true;
      run->stop = true;
      continue;
    } else if (!impl.sched->trigger_timeout()) {
      why = "the cluster went quiet";
    }
    if (!why.empty()) {
      report.hung = true;
      report.hang = why + " with unfinished drivers:";
      for (int w = 0; w < workers; ++w) {
        if (driving[w] && !run->workers[w].finished) {
          report.hang += " /job:worker/task:" + std::to_string(w) + " waits for " +
                         run->workers[w].waiting_on + ";";
        }
      }
      break;
    }
  }
  const double end_seconds = VirtualSeconds();
  // Lets requests still parked or in flight end by their deadlines before the
  // shards are asked whether anything is left waiting.
  AdvanceSeconds(options.timeout_ms / 1000.0 + run->request_slack_us / 1e6 + 0.001);
  // What the shards hold at the end, asked directly (outside the links: the
  // observation is not part of the run).
  for (int j = 0; j < num_ps; ++j) {
    SimShardCounts counts;
    Impl::TaskSlot& slot = impl.tasks.at(ps_names[j]);
    ShardActor shard;
    Status got;
    bool answered = false;
    if (slot.alive) {
      got = impl.AskWith(
          &answered, slot.actors.front, "the shard of " + ps_names[j],
          [&](Status& s, ShardActor& a) {
            if (s.ok()) shard = std::move(a);
            answered = true;
          },
          get_shard_atom::value, run->shard_name, run->config);
    }
    ShardStats stats;
    ShardPullReply pulled;
    if (got.ok() && shard && impl.Ask(&stats, shard, "stats", shard_stats_atom::value).ok() &&
        impl.Ask(&pulled, shard, "pull", shard_pull_atom::value, int64_t{0}, int64_t{1}).ok()) {
      counts.reachable = true;
      counts.version = stats.version;
      counts.variables = stats.variables;
      counts.dropped_stale = stats.gradients_dropped_stale;
      counts.parked_pulls = stats.parked_pulls;
      counts.parked_pushes = stats.parked_pushes;
      counts.applied_by_worker = stats.applied_by_worker;
      counts.workers_lost = stats.workers_lost;
      counts.membership_changes = stats.membership_changes;
      counts.updates_by_aggregated = stats.updates_by_aggregated;
      if (!pulled.status.ok()) {
        report.checkpoint_problems.push_back(ps_names[j] + ": " + pulled.status.ToString());
      }
      for (size_t i = 0; i < pulled.names.size() && i < pulled.values.size(); ++i) {
        report.parameters[pulled.names[i]] = pulled.values[i];
      }
    } else {
      report.checkpoint_problems.push_back(ps_names[j] + " did not answer at the end");
    }
    report.shards.push_back(std::move(counts));
  }
  std::set<int64_t> versions;
  for (const SimShardCounts& c : report.shards) {
    if (!c.reachable || c.variables == 0) continue;
    versions.insert(c.version);
    report.global_step = std::max(report.global_step, c.version);
    report.dropped_stale = std::max(report.dropped_stale, c.dropped_stale);
    int64_t applied = 0;
    for (int64_t n : c.applied_by_worker) applied += n;
    report.gradients_applied = std::max(report.gradients_applied, applied);
  }
  report.updates_applied = report.global_step;
  bool finished_ok = !report.hung && !report.out_of_time;
  for (int w = 0; w < workers; ++w) {
    if (!run->workers[w].status.empty()) finished_ok = false;
  }
  // A run that ended early (a driver gave up) leaves the shards where the failure
  // did: only a finished run's end is a checkpoint that must be consistent.
  if (!finished_ok) report.checkpoint_problems.clear();
  if (finished_ok && options.ps.mode == UpdateMode::kSync && versions.size() > 1) {
    report.checkpoint_problems.push_back("sync shards end at different versions: " +
                                         std::to_string(*versions.begin()) + " to " +
                                         std::to_string(*versions.rbegin()));
  }
  // Every variable is on a shard (their values may be anything the optimizer made
  // of them: a diverged model is not a broken checkpoint).
  for (const auto& [name, value] : initial) {
    if (finished_ok && !report.parameters.count(name)) {
      report.checkpoint_problems.push_back("variable " + name + " is on no shard");
    }
  }

  report.mode = options.ps.mode == UpdateMode::kSync    ? "sync"
                : options.ps.mode == UpdateMode::kAsync ? "async"
                                                        : "ssp:" + std::to_string(options.ps.staleness_bound);
  report.virtual_seconds = end_seconds - run_start;
  report.seconds_to_target = run->seconds_to_target < 0 ? -1 : run->seconds_to_target - run_start;
  report.curve = run->curve;
  for (SimEvalPoint& p : report.curve) p.virtual_seconds -= run_start;
  report.workers = run->workers;
  report.spans = std::move(run->spans);
  for (SimTraceSpan& span : report.spans) span.start_us -= run_start * 1e6;
  report.version_regressions = run->version_regressions;
  report.checkpoints = run->checkpoints;
  report.late_requests = run->late_requests;
  for (const SimWorkerCounts& c : report.workers) {
    report.pushes += c.pushes;
    report.pushes_failed += c.failed + c.unanswered;
  }
  AF_RETURN_IF_ERROR(run->eval_error);
  if (!report.parameters.empty()) {
    AF_ASSIGN_OR_RETURN(report.final_eval, options.workload->Evaluate(report.parameters));
  }
  report.weights_hash = HashParameters(report.parameters);
  std::vector<SimInvariant> invariants = BuiltinSimInvariants();
  invariants.insert(invariants.end(), options.invariants.begin(), options.invariants.end());
  for (const SimInvariant& invariant : invariants) {
    report.invariants.push_back(SimInvariantResult{invariant.name, invariant.check(report)});
  }
  return report;
}

}  // namespace actorflow
