// The TensorBoard scalars of `actorflow train --logdir DIR`: one run directory per
// worker task, DIR/worker_<task>/ (DIR/worker_0/ without a cluster), each holding a
// training/summary/summary_writer.h event file.
//
// Progress: every ~10% of a worker's planned steps (and its last step), "loss" (the
// mean over the window), "learning_rate" and "examples_per_sec". End: the scalars the
// caller passes (accuracy, and the cluster's updates_applied, dropped_stale,
// mean_staleness, workers_lost).
//
// Logging never stops training: the first failure (a logdir that cannot be created
// or written) is printed once to `warnings` and later scalars are dropped.
//
// Thread safety: every method may be called from several worker threads at once.
#ifndef ACTORFLOW_TOOLS_TRAIN_TRAIN_SUMMARIES_H_
#define ACTORFLOW_TOOLS_TRAIN_TRAIN_SUMMARIES_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "graph/status.h"
#include "training/summary/summary_writer.h"

namespace actorflow {
namespace cli {

class TrainSummaries {
 public:
  // An empty `logdir` (no --logdir) makes every method a no-op. `batch_size`: the
  // examples of one step of one worker; `learning_rate`: --lr.
  TrainSummaries(std::string logdir, int64_t batch_size, double learning_rate,
                 std::ostream& warnings);

  bool enabled() const { return !logdir_.empty(); }

  // The batch and rate a cluster's plan settled on (a sync update's split batch,
  // its scaled rate), replacing the constructor's for the steps that follow.
  void SetBatchAndRate(int64_t batch_size, double learning_rate);

  // One training step of `worker`: `step` counts its steps (increasing), of
  // `planned_steps`; `loss` is the step's batch loss.
  void Progress(int worker, int64_t step, int64_t planned_steps, double loss);

  // The end of `worker`'s run at `step`: one event holding `scalars`; flushed.
  void End(int worker, int64_t step, const std::vector<std::pair<std::string, float>>& scalars);

 private:
  struct Window {
    double loss_sum = 0.0;
    int64_t count = 0;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  };

  // The writer of `worker`'s run directory, created on first use; null after a
  // failure. Requires mu_ held.
  SummaryWriter* WriterLocked(int worker);
  // Prints `status` once (the first failure). Requires mu_ held.
  void WarnLocked(const Status& status);

  const std::string logdir_;
  std::ostream& warnings_;
  std::mutex mu_;
  int64_t batch_size_;                                         // guarded by mu_
  double learning_rate_;                                       // guarded by mu_
  bool failed_ = false;                                        // guarded by mu_
  std::map<int, std::unique_ptr<SummaryWriter>> writers_;      // guarded by mu_
  std::map<int, Window> windows_;                              // guarded by mu_
};

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TRAIN_TRAIN_SUMMARIES_H_
