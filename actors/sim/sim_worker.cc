#include "actors/sim/sim_worker.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "actors/protocol/messages.h"
#include "actors/protocol/shard_messages.h"
#include "kernels/ps/shard_worker_protocol.h"
#include "placement/ps_strategy.h"

namespace actorflow {
namespace {

using sim_push_atom = caf::atom_constant<caf::atom("simpush")>;
using sim_retry_atom = caf::atom_constant<caf::atom("simretry")>;
using PullReply = ShardPullReply;
using PushReply = ShardPushReply;

// How a request ended, as the driver saw it.
enum class Outcome { kOk, kFailed, kUnknown };

// What a failed attempt retries (a failed push pulls again).
enum class Stage : int32_t { kConnect, kJoin, kInitialization, kPull, kPush };

const char* StageName(Stage stage) {
  switch (stage) {
    case Stage::kConnect: return "connect";
    case Stage::kJoin: return "join";
    case Stage::kInitialization: return "initialization";
    case Stage::kPull: return "pull";
    case Stage::kPush: return "push";
  }
  return "?";
}

struct DriverState {
  SimWorkerSetup setup;
  SimRunState* run = nullptr;
  std::vector<ShardActor> shards;
  // Answers of an older attempt are ignored: each stage bumps the phase.
  uint64_t phase = 0;
  int pending = 0;
  Outcome attempt = Outcome::kOk;
  std::string attempt_error;
  // The worker's side of the shard protocol: the snapshot it trains on, where the
  // variables live, what to push where.
  ShardWorkerProtocol protocol;
  std::vector<int64_t> seen_versions;  // per shard, the last version seen
  // The push in flight and, per shard it went to, what it answered.
  PushPlan push;
  std::vector<Outcome> outcomes;
  std::vector<PushReply> push_replies;  // kOk outcomes: the shard's answer
  WorkloadGradients gradients;
  int consecutive_failures = 0;
  double stage_start_s = 0;  // when the current pull or push was sent
  int64_t next_checkpoint = 0;  // chief: the global step of its next checkpoint
  const char* name = "sim_worker";
};
using Driver = caf::stateful_actor<DriverState>;

SimWorkerCounts& Counts(Driver* self) {
  return self->state.run->workers[self->state.setup.worker];
}

void Span(Driver* self, std::string name, double start_s, double end_s) {
  SimRunState& run = *self->state.run;
  if (!run.options.trace) return;
  run.spans.push_back(
      SimTraceSpan{self->state.setup.worker, std::move(name), start_s * 1e6, (end_s - start_s) * 1e6});
}

std::string WorkerName(Driver* self) {
  return "/job:worker/task:" + std::to_string(self->state.setup.worker);
}

void Pull(Driver* self);
void Connect(Driver* self);

void Finish(Driver* self, const Status& status) {
  auto& st = self->state;
  SimWorkerCounts& counts = Counts(self);
  counts.finished = true;
  counts.waiting_on.clear();
  if (!status.ok()) counts.status = status.ToString();
  for (const ShardActor& shard : st.shards) {
    if (shard) self->send(shard, shard_leave_atom::value, int32_t{st.setup.worker});
  }
  self->quit();
}

// Starts an attempt of `n` requests.
uint64_t Begin(Driver* self, int n, std::string waiting_on) {
  auto& st = self->state;
  ++st.phase;
  st.pending = n;
  st.attempt = Outcome::kOk;
  st.attempt_error.clear();
  Counts(self).waiting_on = std::move(waiting_on);
  return st.phase;
}

void Fail(Driver* self, Outcome outcome, const std::string& why) {
  auto& st = self->state;
  if (outcome == Outcome::kUnknown || st.attempt == Outcome::kOk) st.attempt = outcome;
  if (st.attempt_error.empty()) st.attempt_error = why;
}

// After a failed attempt: backs off on the virtual clock, then `retry`.
void RetryLater(Driver* self, Stage stage) {
  auto& st = self->state;
  ++st.consecutive_failures;
  if (st.consecutive_failures > st.run->options.max_consecutive_failures) {
    return Finish(self, Aborted(WorkerName(self) + " gave up after " +
                                std::to_string(st.consecutive_failures) + " failed " + StageName(stage) +
                                " attempts; the last: " + st.attempt_error));
  }
  const int64_t backoff_ms =
      std::min<int64_t>(st.run->options.timeout_ms, int64_t{10} << std::min(st.consecutive_failures, 10));
  Counts(self).waiting_on =
      std::string("a retry of its ") + StageName(stage) + " after: " + st.attempt_error;
  const uint64_t phase = ++st.phase;
  self->delayed_send(self, std::chrono::milliseconds(backoff_ms), sim_retry_atom::value, phase,
                     static_cast<int32_t>(stage));
}

caf::duration RequestTimeout(Driver* self) {
  const auto& run = *self->state.run;
  // The driver's own deadline: the shard's plus the links' worst round trip.
  const double us = run.options.timeout_ms * 1000.0 + run.request_slack_us;
  return caf::duration{std::chrono::microseconds(static_cast<int64_t>(us))};
}

// Records a request that ended later than its timeout plus the links' worst case.
void CheckLateness(Driver* self, double sent_s, const std::string& what) {
  auto& run = *self->state.run;
  const double elapsed_us = (run.now_seconds() - sent_s) * 1e6;
  const double bound_us = run.options.timeout_ms * 1000.0 + run.request_slack_us;
  if (elapsed_us > bound_us + 1) {  // 1 us: the clock's rounding
    run.late_requests.push_back(WorkerName(self) + ": " + what + " ended after " +
                                std::to_string(elapsed_us) + " us, bound " +
                                std::to_string(bound_us) + " us");
  }
}

// Records a shard whose version went back (the run's invariant: it never should).
void SeeVersion(Driver* self, int shard, int64_t version) {
  auto& st = self->state;
  if (version < st.seen_versions[shard]) {
    st.run->version_regressions.push_back(WorkerName(self) + " saw " + st.setup.ps_names[shard] +
                                          " go from version " +
                                          std::to_string(st.seen_versions[shard]) + " to " +
                                          std::to_string(version));
  }
  st.seen_versions[shard] = version;
}

void MaybeEvaluate(Driver* self) {
  auto& st = self->state;
  SimRunState& run = *st.run;
  const int64_t step = st.protocol.NewestVersion();
  Counts(self).max_global_step = std::max(Counts(self).max_global_step, step);
  run.max_global_step = std::max(run.max_global_step, step);
  if (run.options.eval_every <= 0 || step < run.next_eval_step) return;
  StatusOr<WorkloadEvaluation> eval =
      run.options.workload->Evaluate(st.protocol.snapshot().values);
  if (!eval.ok()) {
    if (run.eval_error.ok()) run.eval_error = eval.status();
    return;
  }
  run.curve.push_back(SimEvalPoint{step, run.now_seconds(), eval->accuracy, eval->loss});
  run.next_eval_step = (step / run.options.eval_every + 1) * run.options.eval_every;
  if (run.options.target_accuracy > 0 && eval->accuracy >= run.options.target_accuracy &&
      run.seconds_to_target < 0) {
    run.seconds_to_target = run.now_seconds();
    if (run.options.stop_at_target) run.stop = true;
  }
}

// Chief, sync: a coordinated checkpoint at the version every shard has reached, asked
// of every shard holding variables beside the training loop (its answers are
// recorded, whatever the loop does meanwhile).
void MaybeCheckpoint(Driver* self) {
  auto& st = self->state;
  SimRunState& run = *st.run;
  const int64_t every = run.options.checkpoint_every;
  if (every <= 0 || st.setup.worker != 0 || run.config.mode != UpdateMode::kSync) return;
  const int64_t version = st.protocol.OldestVersion();
  if (st.next_checkpoint == 0) st.next_checkpoint = every;
  if (version < st.next_checkpoint) return;
  st.next_checkpoint = (version / every + 1) * every;
  const size_t index = run.checkpoints.size();
  SimCheckpoint checkpoint;
  checkpoint.version = version;
  for (int j = 0; j < run.num_shards; ++j) checkpoint.shards += st.protocol.Holds(j) ? 1 : 0;
  run.checkpoints.push_back(checkpoint);
  for (int j = 0; j < run.num_shards; ++j) {
    if (!st.protocol.Holds(j)) continue;
    const std::string who = st.setup.ps_names[j];
    self->request(st.shards[j], RequestTimeout(self), shard_snap_atom::value, version,
                  run.options.timeout_ms)
        .then(
            [self, index, version, who](PullReply& r) {
              SimCheckpoint& c = self->state.run->checkpoints[index];
              if (!r.status.ok()) {
                if (c.failure.empty()) c.failure = r.status.ToString();
                return;
              }
              ++c.answered;
              if (r.version != version) {
                c.problems.push_back(who + " answered version " + std::to_string(r.version) +
                                     " for the checkpoint at " + std::to_string(version));
              }
              c.variables.insert(c.variables.end(), r.names.begin(), r.names.end());
            },
            [self, index, who](caf::error& e) {
              SimCheckpoint& c = self->state.run->checkpoints[index];
              if (c.failure.empty()) c.failure = who + ": " + self->system().render(e);
            });
  }
}

// With a complete snapshot: finish, or compute the next gradient and push it after
// the step's virtual compute time.
void Step(Driver* self) {
  auto& st = self->state;
  SimRunState& run = *st.run;
  SimWorkerCounts& counts = Counts(self);
  MaybeEvaluate(self);
  const bool sync = run.config.mode == UpdateMode::kSync;
  if (run.stop || (sync && st.protocol.OldestVersion() >= run.options.steps) ||
      (!sync && counts.steps >= run.options.steps)) {
    return Finish(self, Status::OK());
  }
  MaybeCheckpoint(self);  // not when finishing: the answers would find it gone
  StatusOr<WorkloadGradients> computed =
      run.options.workload->ComputeGradients(st.setup.worker, counts.steps,
                                             st.protocol.snapshot().values);
  if (!computed.ok()) return Finish(self, computed.status());
  st.gradients = std::move(computed).value();
  counts.last_loss = st.gradients.loss;
  const double micros = run.options.compute.StepMicros(run.options.workload->FlopsPerStep(),
                                                       run.seed, st.setup.worker, counts.steps);
  Span(self, "step " + std::to_string(counts.steps), run.now_seconds(),
       run.now_seconds() + micros / 1e6);
  ++counts.steps;
  const uint64_t phase = Begin(self, 0, "its own compute (virtual)");
  self->delayed_send(self, std::chrono::microseconds(static_cast<int64_t>(std::ceil(micros))),
                     sim_push_atom::value, phase);
}

void PushDone(Driver* self) {
  auto& st = self->state;
  Span(self, "push", st.stage_start_s, st.run->now_seconds());
  SimWorkerCounts& counts = Counts(self);
  bool all_applied = true, any_unknown = false, any_failed = false;
  for (size_t pos = 0; pos < st.push.shards.size(); ++pos) {
    const int j = st.push.shards[pos];
    if (st.outcomes[pos] == Outcome::kUnknown) {
      any_unknown = true;
      ++counts.shard_unknown[j];
    } else if (st.outcomes[pos] == Outcome::kFailed) {
      any_failed = true;
    } else if (st.push_replies[pos].applied) {
      ++counts.shard_applied[j];
    } else {
      all_applied = false;
    }
  }
  if (any_unknown) {
    ++counts.unanswered;
  } else if (any_failed) {
    ++counts.failed;
  } else if (all_applied) {
    ++counts.applied;
    ++st.run->progress;
  } else {
    ++counts.dropped_stale;
    ++st.run->progress;
  }
  if (any_unknown || any_failed) return RetryLater(self, Stage::kPush);
  st.consecutive_failures = 0;
  // The replies carry the values: the next snapshot, unless they make none (a sync
  // push that went to the shards behind only, or shards at different versions).
  const ParameterSnapshot next =
      st.protocol.SnapshotFromPushReplies(st.protocol.snapshot(), st.push, st.push_replies);
  if (next.shard_versions.empty()) return Pull(self);
  for (size_t pos = 0; pos < st.push.shards.size(); ++pos) {
    SeeVersion(self, st.push.shards[pos], st.push_replies[pos].values_version);
  }
  Step(self);
}

void Push(Driver* self) {
  auto& st = self->state;
  SimRunState& run = *st.run;
  // Sync: the push goes to the shards behind only (SyncCatchUp::kPushToShardsBehind).
  StatusOr<PushPlan> plan =
      st.protocol.PlanPush(st.protocol.snapshot(), st.gradients.gradients, /*return_values=*/true);
  if (!plan.ok()) return Finish(self, plan.status());
  st.push = std::move(plan).value();
  const size_t n = st.push.shards.size();
  if (n == 0) return Pull(self);  // no shard holds a variable yet: ask again
  st.outcomes.assign(n, Outcome::kOk);
  st.push_replies.assign(n, PushReply());
  ++Counts(self).pushes;
  const uint64_t phase = Begin(self, static_cast<int>(n), "the answers to its push");
  const double sent = run.now_seconds();
  st.stage_start_s = sent;
  for (size_t pos = 0; pos < n; ++pos) {
    const int j = st.push.shards[pos];
    const std::string who = st.setup.ps_names[j];
    self->request(st.shards[j], RequestTimeout(self), shard_push_atom::value, st.push.args[pos],
                  run.options.timeout_ms)
        .then(
            [self, phase, pos, sent, who](PushReply& r) {
              auto& s = self->state;
              if (phase != s.phase) return;
              CheckLateness(self, sent, "push to " + who);
              if (r.status.ok() || r.applied) {
                // An SSP answer that waited past its deadline: applied on arrival.
                SeeVersion(self, s.push.shards[pos], r.version);
                s.push_replies[pos] = std::move(r);
              } else {
                // A duplicate's answer says nothing of the original's outcome.
                const bool duplicate = r.status.code() == Code::kAborted &&
                                       r.status.message().find("duplicate") != std::string::npos;
                s.outcomes[pos] = duplicate ? Outcome::kUnknown : Outcome::kFailed;
                Fail(self, s.outcomes[pos], r.status.ToString());
              }
              if (--s.pending == 0) PushDone(self);
            },
            [self, phase, pos, sent, who](caf::error& e) {
              auto& s = self->state;
              if (phase != s.phase) return;
              CheckLateness(self, sent, "push to " + who);
              const bool timeout = e == caf::sec::request_timeout;
              s.outcomes[pos] = timeout ? Outcome::kUnknown : Outcome::kFailed;
              Fail(self, s.outcomes[pos], who + ": " + self->system().render(e));
              if (--s.pending == 0) PushDone(self);
            });
  }
}

void Pull(Driver* self) {
  auto& st = self->state;
  SimRunState& run = *st.run;
  const PullRound round = st.protocol.StartPull();
  const uint64_t phase =
      Begin(self, static_cast<int>(round.shards.size()), "the answers to its pull");
  const double sent = run.now_seconds();
  st.stage_start_s = sent;
  for (int j : round.shards) {
    const std::string who = st.setup.ps_names[j];
    self->request(st.shards[j], RequestTimeout(self), shard_pull_atom::value, round.min_version,
                  run.options.timeout_ms)
        .then(
            [self, phase, j, sent, who](PullReply& r) {
              auto& s = self->state;
              if (phase != s.phase) return;
              CheckLateness(self, sent, "pull from " + who);
              const Status folded = s.protocol.AddPullReply(j, r);
              if (folded.ok()) {
                SeeVersion(self, j, r.version);
              } else {
                Fail(self, Outcome::kFailed, folded.ToString());
              }
              if (--s.pending > 0) return;
              Span(self, "pull", s.stage_start_s, s.run->now_seconds());
              if (s.attempt != Outcome::kOk) return RetryLater(self, Stage::kPull);
              // kPushToShardsBehind: a pull is one round; the snapshot is complete.
              s.protocol.NextPullRound();
              Step(self);
            },
            [self, phase, sent, who](caf::error& e) {
              auto& s = self->state;
              if (phase != s.phase) return;
              CheckLateness(self, sent, "pull from " + who);
              Fail(self, Outcome::kFailed, who + ": " + self->system().render(e));
              if (--s.pending == 0) RetryLater(self, Stage::kPull);
            });
  }
}

// Chief: the seeded initial values onto their shards (a restarted chief finds them
// there already: AlreadyExists keeps them).
void Initialize(Driver* self) {
  auto& st = self->state;
  SimRunState& run = *st.run;
  StatusOr<std::map<std::string, Tensor>> initial = run.options.workload->InitialValues();
  if (!initial.ok()) return Finish(self, initial.status());
  StatusOr<InitializationPlan> planned = st.protocol.PlanInitialization(*initial);
  if (!planned.ok()) return Finish(self, planned.status());
  auto plan = std::make_shared<const InitializationPlan>(std::move(planned).value());
  const uint64_t phase = Begin(self, run.num_shards, "the shards' answers to its initialization");
  for (int j = 0; j < run.num_shards; ++j) {
    self->request(st.shards[j], RequestTimeout(self), shard_init_atom::value, plan->names[j],
                  plan->values[j])
        .then(
            [self, phase, plan](Status& s) {
              auto& d = self->state;
              if (phase != d.phase) return;
              if (!s.ok() && s.code() != Code::kAlreadyExists) {
                Fail(self, Outcome::kFailed, s.ToString());
              }
              if (--d.pending > 0) return;
              if (d.attempt != Outcome::kOk) return RetryLater(self, Stage::kInitialization);
              d.protocol.Initialized(*plan);
              Pull(self);
            },
            [self, phase](caf::error& e) {
              auto& d = self->state;
              if (phase != d.phase) return;
              Fail(self, Outcome::kFailed, self->system().render(e));
              if (--d.pending == 0) RetryLater(self, Stage::kInitialization);
            });
  }
}

void Join(Driver* self) {
  auto& st = self->state;
  SimRunState& run = *st.run;
  const uint64_t phase = Begin(self, run.num_shards, "the shards' answers to its join");
  caf::actor me = caf::actor_cast<caf::actor>(self);
  for (int j = 0; j < run.num_shards; ++j) {
    self->request(st.shards[j], RequestTimeout(self), shard_join_atom::value,
                  int32_t{st.setup.worker}, me)
        .then(
            [self, phase](Status& s) {
              auto& d = self->state;
              if (phase != d.phase) return;
              if (!s.ok()) Fail(self, Outcome::kFailed, s.ToString());
              if (--d.pending > 0) return;
              if (d.attempt != Outcome::kOk) return RetryLater(self, Stage::kJoin);
              d.protocol.JoinedAs(d.setup.worker);
              if (d.setup.worker == 0) return Initialize(self);
              Pull(self);
            },
            [self, phase](caf::error& e) {
              auto& d = self->state;
              if (phase != d.phase) return;
              Fail(self, Outcome::kFailed, self->system().render(e));
              if (--d.pending == 0) RetryLater(self, Stage::kJoin);
            });
  }
}

void GotShard(Driver* self, uint64_t phase, int j, const Status& s, ShardActor shard) {
  auto& d = self->state;
  if (phase != d.phase) return;
  if (s.ok()) {
    d.shards[j] = std::move(shard);
  } else {
    Fail(self, Outcome::kFailed, s.ToString());
  }
  if (--d.pending > 0) return;
  if (d.attempt != Outcome::kOk) return RetryLater(self, Stage::kConnect);
  Join(self);
}

// Every ps task's front from the task's directory, then its shard.
void Connect(Driver* self) {
  auto& st = self->state;
  SimRunState& run = *st.run;
  const uint64_t phase = Begin(self, run.num_shards, "the ps tasks' parameter shards");
  for (int j = 0; j < run.num_shards; ++j) {
    const std::string who = st.setup.ps_names[j];
    self->request(st.setup.directory, RequestTimeout(self), connect_atom::value,
                  st.setup.ps_hosts[j], st.setup.ps_ports[j], run.options.timeout_ms, who)
        .then(
            [self, phase, j, who](Status& s, FrontActor& front) {
              if (phase != self->state.phase) return;
              if (!s.ok()) return GotShard(self, phase, j, s, ShardActor());
              self->request(front, RequestTimeout(self), get_shard_atom::value,
                            self->state.run->shard_name, self->state.run->config)
                  .then([self, phase, j](Status& got, ShardActor& shard) {
                          GotShard(self, phase, j, got, std::move(shard));
                        },
                        [self, phase, j, who](caf::error& e) {
                          GotShard(self, phase, j, Unavailable(who + ": " + self->system().render(e)),
                                   ShardActor());
                        });
            },
            [self, phase, j, who](caf::error& e) {
              GotShard(self, phase, j, Unavailable(who + ": " + self->system().render(e)),
                       ShardActor());
            });
  }
}

caf::behavior DriverBehavior(Driver* self, SimWorkerSetup setup) {
  auto& st = self->state;
  st.run = setup.run.get();
  const int n = st.run->num_shards;
  st.setup = std::move(setup);
  st.shards.assign(n, ShardActor());
  st.protocol = ShardWorkerProtocol(ShardWorkerOptions{
      n, st.run->config.mode, SyncCatchUp::kPushToShardsBehind,
      [](const std::map<std::string, int64_t>& bytes, int num_shards) {
        return AssignVariablesByBytes(bytes, num_shards, PsStrategy::kRoundRobin);
      }});
  st.seen_versions.assign(n, 0);
  self->set_default_handler(caf::drop);
  Connect(self);
  return {
      [self](sim_push_atom, uint64_t phase) {
        if (phase == self->state.phase) Push(self);
      },
      [self](sim_retry_atom, uint64_t phase, int32_t stage) {
        if (phase != self->state.phase) return;
        if (stage == static_cast<int32_t>(Stage::kConnect)) return Connect(self);
        if (stage == static_cast<int32_t>(Stage::kJoin)) return Join(self);
        if (stage == static_cast<int32_t>(Stage::kInitialization)) return Initialize(self);
        Pull(self);  // after a failed pull or push
      },
  };
}

}  // namespace

caf::actor SpawnSimWorker(caf::actor_system& system, SimWorkerSetup setup) {
  return system.spawn(DriverBehavior, std::move(setup));
}

}  // namespace actorflow
