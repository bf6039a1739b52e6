// What `actorflow train --cluster ...` shows of a data-parallel run (the library
// trainer's, training/distributed/trainer.h): progress while it trains (lines, or
// per-worker bars on a terminal) and the result at the end (text lines or one JSON
// line, TensorBoard scalars under --logdir). The format is described in
// tools/train/train_cluster.h.
//
// Thread safety: the progress classes' Report may be called from every worker thread.
#ifndef ACTORFLOW_TOOLS_TRAIN_CLUSTER_REPORT_H_
#define ACTORFLOW_TOOLS_TRAIN_CLUSTER_REPORT_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "tools/train/multi_progress.h"
#include "tools/train/train_command.h"
#include "training/distributed/data_parallel.h"
#include "training/distributed/recovery.h"

namespace actorflow {
namespace cli {

class TrainSummaries;

// Prints one line per worker every ~10% of its planned steps (and its last step);
// for an elastic worker, a line per ~10% of the run's batches and one for every
// membership change and pause.
class ClusterProgressPrinter {
 public:
  explicit ClusterProgressPrinter(std::ostream& out) : out_(out) {}
  void Report(const WorkerProgress& p);

 private:
  void ReportElastic(const WorkerProgress& p);

  struct Window {
    double loss_sum = 0.0;
    int64_t count = 0;
  };
  int64_t last_membership_epoch_ = -1;
  int64_t last_decile_ = -1;
  std::vector<int> last_members_;
  bool have_members_ = false;
  std::ostream& out_;
  std::mutex mu_;
  std::map<int, Window> windows_;
};

// On a terminal: one bar per worker thread of a local cluster, redrawn in place
// (tools/train/multi_progress.h).
class TerminalProgress {
 public:
  TerminalProgress(std::ostream& out, int workers, int64_t batch_size)
      : out_(out), bars_(workers, batch_size, MultiProgress::Clock::now()) {}
  void Report(const WorkerProgress& p);
  // The final frame, before the result lines.
  void Finish();

 private:
  void Write(const std::string& frame);

  std::ostream& out_;
  std::mutex mu_;
  MultiProgress bars_;
};

// Under --logdir: the end of each worker run here, at its last step.
void LogClusterResult(const DataParallelResult& result, TrainSummaries* summaries);

// The result lines, or the JSON line under --json; `recovery`: the supervisor's
// report of a cluster file's worker (else null). When the chief evaluated after each
// epoch (its report's epochs), the JSON adds "accuracy_by_epoch", "seconds_by_epoch"
// (the chief's cumulative training seconds, evaluations excluded) and
// "samples_per_second" (`train_rows` x the epochs over the last epoch's seconds), as
// one process's result does.
void PrintClusterResult(const TrainCommandOptions& options, const DataParallelOptions& dp,
                        const DataParallelResult& result, const RecoveryReport* recovery,
                        int64_t train_rows, std::ostream& out);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TRAIN_CLUSTER_REPORT_H_
