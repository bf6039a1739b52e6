// Supervised data-parallel workers: a worker driver (training/distributed/data_parallel.h) run
// under a restart policy that survives a parameter server task or the chief going
// away, TensorFlow 1.x's MonitoredTrainingSession recovery for between-graph
// replication:
//
//   ps task lost   the driver's pull or push ends with Unavailable naming the task.
//                  The supervisor reconnects (new client; retried until
//                  reconnect_timeout_ms) and, as the chief, restores every shard from
//                  the latest checkpoint of checkpoint_dir (the restarted task's
//                  variables died with it), then runs the driver again; the other
//                  workers' pulls wait for that restore. The updates since that
//                  checkpoint are lost (the report counts them).
//   workers lost   (sync) the ps tasks answer but fewer live workers remain than
//                  replicas_to_aggregate (e.g. the chief died): the supervisor logs
//                  at once which workers are missing, waits, up to
//                  reconnect_timeout_ms, until enough workers are back (a
//                  restarted chief rejoins), then runs its driver again. Not a
//                  restart: nothing was lost.
//   chief restart  a new supervisor of worker 0 finds the shards initialized and
//                  continues from their version: they are at least as new as its
//                  last checkpoint, so restoring it would only throw updates away.
//                  Only when a shard holds nothing does it restore the checkpoint.
// The global step never goes backwards: after every reconnect a worker raises the
// shards' version to the highest global step it saw
// (ParameterClient::AdvanceGlobalStep), and a restore keeps that floor; so after a
// ps loss training goes on from the checkpoint's values at the global step where it
// stopped. The chief checkpoints every checkpoint_every_steps global steps with a
// coordinated cut (training/checkpoint/ps_checkpoint.h), whole or not at all.
//
// A restarted driver goes on with the batches after the ones this worker already
// pushed (in this process), and in async/SSP mode pushes only the rest of its share;
// the updates lost with a ps task are not made up for (sync: the run ends at its
// target global step). A restarted worker process starts its data afresh. The
// shards' checkpoints hold the optimizer slots (momentum, adagrad and adam
// accumulators, adam's beta powers) beside the variables, so a restore continues
// every optimizer exactly.
//
// Thread safety: Run runs on the calling thread (the log callback too); Stop may be
// called from any thread (progress callbacks included).
#ifndef ACTORFLOW_TRAINING_DISTRIBUTED_RECOVERY_H_
#define ACTORFLOW_TRAINING_DISTRIBUTED_RECOVERY_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/status.h"
#include "training/distributed/data_parallel.h"

namespace actorflow {

struct RecoveryOptions {
  // Driver runs that may end in Unavailable (a ps task lost) before the supervisor
  // gives up.
  int max_restarts = 3;
  // How long a reconnect (to a ps task coming back), or a wait for lost workers to
  // rejoin, is retried, in ms (> 0).
  int64_t reconnect_timeout_ms = 30000;
  // Chief: where the coordinated checkpoints go, and how often: whenever the global
  // step crosses a multiple of checkpoint_every_steps.
  // Empty or <= 0: none (a lost ps task then cannot be recovered).
  std::string checkpoint_dir;
  int64_t checkpoint_every_steps = 0;
  int max_to_keep = 5;
  // Optional: one human-readable line per failure, recovery and checkpoint, as they
  // happen (e.g. "checkpoint DIR/ckpt-40 at global step 40").
  std::function<void(const std::string&)> log;
  // Optional: "host:port" of each worker task, by index, so that the workers the
  // shards lost are named with their address.
  std::vector<std::string> worker_addresses;
};

// One failure and its recovery.
struct RecoveryEvent {
  Status failure;               // what ended the driver run
  int64_t step_at_failure = 0;  // the highest global step the worker had seen
  int64_t resumed_from = 0;     // the global step training went on from (>= the above)
  // The ps tasks stayed reachable; the sync quorum lacked workers until they came
  // back. Not a restart.
  bool waited_for_workers = false;
  bool restored = false;        // the shards were restored from `checkpoint`
  std::string checkpoint;
  int64_t checkpoint_step = 0;  // the restored checkpoint's global step
  int64_t steps_lost = 0;       // step_at_failure - checkpoint_step when restored
  double recovery_seconds = 0;  // the failure to the first successful push after it
};

struct RecoveryReport {
  DataParallelResult result;    // of the final run; result.workers: this worker, all runs
  std::vector<RecoveryEvent> events;
  int restarts = 0;             // reconnects after a lost ps task
  std::vector<int64_t> global_steps;  // every push's global step, in order
  // Every global step this worker saw (pulls and pushes) was >= the ones before.
  bool global_step_monotone = true;
  int64_t highest_global_step = 0;
  // At the start (chief): the shards' global step when first connected, the latest
  // checkpoint then, and whether the shards were restored from it.
  int64_t started_from = 0;
  std::string start_checkpoint;
  bool start_restored = false;
  std::string last_checkpoint;  // the last one this worker wrote (chief)
  int64_t last_checkpoint_step = 0;  // of the last one written, restored or found
  // A line per event and a total: what was lost and how long recovery took.
  std::string Summary() const;
};

class RecoverySupervisor {
 public:
  // Cuts the chief takes of live shards that keep moving under it before it gives
  // up with the cut's error (see ProbeShards).
  static constexpr int kProbeAttempts = 3;

  RecoverySupervisor(DataParallelOptions options, WorkerOptions worker_options,
                     RecoveryOptions recovery, ParameterClientFactory client_factory);

  // Runs the worker to the end of training, recovering as above. Errors: the
  // driver's non-Unavailable errors, Unavailable after max_restarts (the report's
  // events say what was lost), Cancelled after Stop; `report` is filled either way.
  Status Run(const LabeledData& train, const LabeledData& test, RecoveryReport* report);
  // Ends Run at the driver's next step boundary (Cancelled), e.g. to stand for a
  // chief whose process died.
  void Stop();

 private:
  StatusOr<std::unique_ptr<ParameterClient>> Reconnect();
  // The shards' cut as they are; *holds_nothing when it failed because a shard holds
  // no variables. A cut of live shards can fail while they move under it (a
  // reconnecting worker raises their version between the two halves of the cut): it
  // is taken again, up to kProbeAttempts in all, and never taken for "empty", since
  // restoring a checkpoint over live shards would lose their newer values.
  StatusOr<ParameterSnapshot> ProbeShards(ParameterClient* client, bool* holds_nothing);
  // Chief: restores from the latest checkpoint when a shard holds nothing; fills
  // `event`'s restore fields and resumed_from.
  Status PrepareShards(ParameterClient* client, RecoveryEvent* event, RecoveryReport* report,
                       bool at_start);
  // After an Unavailable: true when the ps tasks answer and, within
  // reconnect_timeout_ms, enough workers are live for a sync version (they came
  // back); false when a ps task is unreachable or they did not come back.
  bool WaitForWorkers(ParameterClient* client);
  void Log(const std::string& line) const;
  bool stopped();

  DataParallelOptions options_;
  WorkerOptions worker_options_;
  RecoveryOptions recovery_;
  ParameterClientFactory client_factory_;
  std::mutex mu_;
  WorkerDriver* driver_ = nullptr;  // guarded by mu_
  bool stopped_ = false;            // guarded by mu_
};

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DISTRIBUTED_RECOVERY_H_
