// Data-parallel training on a simulated cluster (SimulatedCluster::TrainDataParallel):
// between-graph replication as TensorFlow 1.x does it with parameter servers. Every
// worker task runs a worker driver actor that speaks the parameter shards' real
// protocol (actors/protocol/shard_messages.h) over the simulated links:
//
//   connect (get the shard from every ps task's front), join, the chief initializes;
//   loop: pull -> compute (the workload's real kernels; the virtual time they take is
//         the compute model's) -> push with return_values (the answer is the next
//         snapshot) ... until the run's end.
//
// The shards' UpdateMode decides what a push does: sync (replicas_to_aggregate of
// total_replicas gradients per version, the rest dropped as stale: backup workers),
// async, SSP. A request that fails (a dropped message, a deadline, a lost ps answer)
// is counted and the driver pulls again; a sync snapshot whose shards disagree on
// the version pushes only to the shards behind, so that they catch up.
//
// End of a run: sync, when every shard holding variables reached `steps` versions;
// async/SSP, when each worker pushed `steps` gradients; or when the target accuracy
// was reached with stop_at_target. A run whose drivers can make no progress (the
// cluster goes quiet, or nothing is applied for longer than a stuck driver takes to
// give up) is reported as hung, naming what each unfinished driver waited for; one
// still progressing at max_virtual_seconds is reported out of time.
//
// Invariants: the drivers and shards record what they saw; after the run every
// invariant (the built-in ones below, and the caller's) judges the report. Built in:
//   gradients_applied_once    per shard and worker: the gradients the shard applied are
//                             at least those the worker was told were applied and at
//                             most those plus the pushes whose answer never came; and
//                             pushes = applied + dropped_stale + failed + unanswered.
//   global_step_monotone      no shard's version, as a worker saw it, ever went back.
//   requests_end_by_deadline  every pull and push ended (answered or failed) by its
//                             timeout plus the link's worst round trip.
//   checkpoint_consistent     every coordinated checkpoint the chief took (sync,
//                             checkpoint_every) that every shard answered holds every
//                             variable once, every shard at the checkpoint's version;
//                             and at the end of a run that ended normally (no driver
//                             gave up, not stopped at max_virtual_seconds) every shard
//                             answers, holds its variables, sync shards at one version.
//   no_actor_left_waiting     no driver unfinished, no request parked on a shard.
//
// CAF-free.
#ifndef ACTORFLOW_ACTORS_SIM_SIM_TRAINING_H_
#define ACTORFLOW_ACTORS_SIM_SIM_TRAINING_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "actors/sim/stragglers.h"
#include "graph/tensor.h"
#include "kernels/parameter_client.h"
#include "kernels/training_workload.h"

namespace actorflow {

// How long a worker step computes, in virtual time.
struct SimComputeModel {
  double device_gflops = 10;  // the workload's FlopsPerStep / this = a step's base time
  double step_us = -1;        // >= 0: every step's base time, declared (FLOPs ignored)
  StragglerSpec stragglers;   // multiplies the base time per (worker, step)
  // Virtual microseconds of `worker`'s step `step` for a step of `flops`.
  double StepMicros(double flops, uint64_t seed, int worker, int64_t step) const;
};

struct SimTrainingReport;

// A named check of a finished run: the violations it finds (empty: holds).
struct SimInvariant {
  std::string name;
  std::function<std::vector<std::string>(const SimTrainingReport&)> check;
};

struct SimTrainingOptions {
  TrainingWorkload* workload = nullptr;  // not owned; outlives the call
  // mode, replicas_to_aggregate, staleness_bound, optimizer, learning_rate, and
  // elastic membership (elastic, min_workers, lr_scaling: a version then waits for
  // the live workers only; the fault plan's kills and restarts make workers leave
  // and join); total_replicas is set to the number of worker tasks.
  ParameterServerOptions ps;
  int64_t steps = 100;        // sync: versions; async/SSP: pushes per worker
  int64_t timeout_ms = 1000;  // virtual: bounds every pull and push
  int64_t eval_every = 0;     // evaluate every K global steps (0: at the end only)
  // Sync: the chief takes a coordinated checkpoint (every shard's values and slots at
  // one version) every K global steps (0: none).
  int64_t checkpoint_every = 0;
  double target_accuracy = 0;  // > 0: record when an evaluation first reaches it
  bool stop_at_target = false;
  double max_virtual_seconds = 3600;
  // Consecutive failed requests after which a driver gives up (its error is reported).
  int max_consecutive_failures = 200;
  SimComputeModel compute;
  std::vector<SimInvariant> invariants;  // besides BuiltinSimInvariants()
  bool trace = false;  // record SimTrainingReport::spans
};

// A span of a worker's time, in virtual microseconds from the run's start: its
// compute ("step 12"), or a wait for its pull or push ("pull", "push").
struct SimTraceSpan {
  int worker = 0;
  std::string name;
  double start_us = 0;
  double duration_us = 0;
};

// What one worker index saw, over all its drivers (a restarted worker's included).
struct SimWorkerCounts {
  int64_t steps = 0;       // batches computed
  int64_t pushes = 0;      // push requests (one per step; to one or more shards)
  int64_t applied = 0;     // answered applied by every shard pushed to
  int64_t dropped_stale = 0;
  int64_t failed = 0;      // answered with an error, or a shard's request failed
  int64_t unanswered = 0;  // no answer by the driver's own timeout (outcome unknown)
  // Per shard (ps task index): pushes it answered as applied, and pushes to it
  // whose outcome is unknown (no answer, or a duplicate's answer).
  std::vector<int64_t> shard_applied;
  std::vector<int64_t> shard_unknown;
  int64_t max_global_step = 0;
  double last_loss = 0;
  int64_t killed = 0;       // drivers of this worker killed with their task
  bool finished = false;
  std::string status;      // "" when OK; a driver's error otherwise
  std::string waiting_on;  // for an unfinished driver: what it waits for
};

struct SimShardCounts {
  bool reachable = false;  // answered the final stats request
  int64_t version = 0;
  int64_t variables = 0;
  int64_t dropped_stale = 0;
  int64_t parked_pulls = 0;
  int64_t parked_pushes = 0;
  std::vector<int64_t> applied_by_worker;
  std::vector<int> workers_lost;
  // Elastic sync (ps.elastic): the joins and losses the shard saw, in order, and its
  // updates by the number of gradients they averaged.
  std::vector<MembershipChange> membership_changes;
  std::vector<int64_t> updates_by_aggregated;
};

struct SimEvalPoint {
  int64_t global_step = 0;
  double virtual_seconds = 0;
  double accuracy = 0;
  double loss = 0;
};

// A coordinated checkpoint the chief asked for at `version`.
struct SimCheckpoint {
  int64_t version = 0;
  int shards = 0;      // asked
  int answered = 0;    // answered OK
  std::string failure; // a shard's error or no answer: the checkpoint was not taken
  std::vector<std::string> problems;  // in answers that came: inconsistencies
  std::vector<std::string> variables; // every variable the answers held
};

struct SimInvariantResult {
  std::string name;
  std::vector<std::string> violations;
};

struct SimTrainingReport {
  std::string mode;  // "sync", "async", "ssp:S"
  int64_t global_step = 0;       // the largest shard version at the end
  int64_t updates_applied = 0;   // = global_step
  int64_t gradients_applied = 0; // gradients in updates (the most any shard applied)
  int64_t dropped_stale = 0;
  int64_t pushes = 0;
  int64_t pushes_failed = 0;     // failed + unanswered
  int64_t workers_lost = 0;      // worker kills carried out
  double virtual_seconds = 0;
  double seconds_to_target = -1; // virtual; -1: never reached
  WorkloadEvaluation final_eval;
  std::vector<SimEvalPoint> curve;
  std::map<std::string, Tensor> parameters;  // at the end
  std::string weights_hash;                  // FNV-1a over the parameters, name order
  std::vector<SimWorkerCounts> workers;
  std::vector<SimShardCounts> shards;
  // Observations the invariants judge, recorded while the run went on.
  std::vector<std::string> version_regressions;
  std::vector<std::string> late_requests;
  std::vector<std::string> checkpoint_problems;
  std::vector<SimCheckpoint> checkpoints;
  bool hung = false;
  std::string hang;  // why, naming the unfinished drivers
  // Still making progress when max_virtual_seconds passed (not a hang).
  bool out_of_time = false;
  std::vector<SimInvariantResult> invariants;
  std::vector<SimTraceSpan> spans;  // with SimTrainingOptions::trace

  int64_t invariant_violations() const;
};

std::vector<SimInvariant> BuiltinSimInvariants();

// FNV-1a (64 bit, as 16 hex digits) over every tensor's bytes, in name order.
std::string HashParameters(const std::map<std::string, Tensor>& parameters);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SIM_SIM_TRAINING_H_
