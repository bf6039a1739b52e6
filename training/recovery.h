// Supervised data-parallel workers: a worker driver (training/data_parallel.h) run
// under a restart policy that survives a parameter server task or the chief going
// away, TensorFlow 1.x's MonitoredTrainingSession recovery for between-graph
// replication:
//
//   ps task lost   the driver's pull or push ends with Unavailable naming the task.
//                  The supervisor reconnects (new client; retried until
//                  reconnect_timeout_ms) and, as the chief, restores every shard from
//                  the latest checkpoint of checkpoint_dir (the restarted task's
//                  variables died with it), then runs the driver again; the other
//                  workers' pulls wait for that restore.
//   chief restart  a new supervisor of worker 0 finds the shards initialized and
//                  continues from their version (no restore: nothing was lost); only
//                  when a shard holds nothing does it restore the latest checkpoint.
// The chief checkpoints every checkpoint_every_steps global steps with a coordinated
// cut (training/ps_checkpoint.h). A failure loses the updates since the last
// checkpoint: the report counts them. The global step the shards report never goes
// backwards except by such a restore, and the report records each restore.
//
// Scope: sync mode is the one where a resumed run ends where an uninterrupted one
// does (it trains until the global step reaches its target); in async and SSP mode
// a restarted driver pushes its full share of steps again.
//
// Thread safety: RunSupervisedWorker runs on the calling thread; Stop may be called
// from any thread (progress callbacks included).
#ifndef ACTORFLOW_TRAINING_RECOVERY_H_
#define ACTORFLOW_TRAINING_RECOVERY_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/status.h"
#include "training/data_parallel.h"

namespace actorflow {

struct RecoveryOptions {
  // Driver runs that may end in Unavailable before the supervisor gives up.
  int max_restarts = 3;
  // How long a reconnect (to a ps task coming back) is retried, in ms (> 0).
  int64_t reconnect_timeout_ms = 30000;
  // Chief: where the coordinated checkpoints go, and how often (global steps).
  // Empty or <= 0: none (a lost ps task then cannot be recovered).
  std::string checkpoint_dir;
  int64_t checkpoint_every_steps = 0;
  int max_to_keep = 5;
};

// One failure and its recovery.
struct RecoveryEvent {
  Status failure;               // what ended the driver run
  int64_t step_at_failure = 0;  // the last global step the worker saw
  int64_t resumed_from = 0;     // the global step training went on from
  bool restored = false;        // from checkpoint `checkpoint` (else: the shards' state)
  std::string checkpoint;
  int64_t steps_lost = 0;       // step_at_failure - resumed_from when restored
  double recovery_seconds = 0;  // the failure to the first successful push after it
};

struct RecoveryReport {
  DataParallelResult result;    // of the final, successful run
  std::vector<RecoveryEvent> events;
  int restarts = 0;
  std::vector<int64_t> global_steps;  // every push's global step, in order
  std::string last_checkpoint;
  // A line per event and a total: what was lost and how long recovery took.
  std::string Summary() const;
};

class RecoverySupervisor {
 public:
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
  // Chief: restores from the latest checkpoint when a shard holds nothing.
  Status PrepareShards(ParameterClient* client, RecoveryEvent* event);

  DataParallelOptions options_;
  WorkerOptions worker_options_;
  RecoveryOptions recovery_;
  ParameterClientFactory client_factory_;
  std::mutex mu_;
  WorkerDriver* driver_ = nullptr;  // guarded by mu_
  bool stopped_ = false;            // guarded by mu_
};

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_RECOVERY_H_
