// QueueRunner: TensorFlow's tf.train.QueueRunner. A set of threads, one per enqueue
// op, each running its op through a Session again and again to keep a queue filled,
// under a Coordinator (training/data/coordinator.h).
//
//   QueueRunner runner(QueueRunnerDef{"examples", {"enqueue", "enqueue"}, "close", "cancel"});
//   AF_RETURN_IF_ERROR(runner.Start(session, &coord));   // 2 threads + 1 closer
//
// Each thread runs its op until:
// - OutOfRange (its input is exhausted, e.g. the reader's filename queue closed) or
//   max_runs runs: it ends cleanly; when the runner's last thread ends this way it
//   runs close_op, so that consumers drain the queue and then get OutOfRange;
// - the coordinator stops: it ends; the runner's closer thread then runs cancel_op
//   (a QueueClose with cancel_pending_enqueues), which answers enqueues waiting on a
//   full queue, so that no thread stays stuck past the stop;
// - any other error: reported with RequestStop(error, "queue runner NAME (op OP)").
//
// Thread safety: Start once; the session and coordinator must outlive the threads
// (Coordinator::Join, or the coordinator's destructor, ends them).
#ifndef ACTORFLOW_TRAINING_DATA_QUEUE_RUNNER_H_
#define ACTORFLOW_TRAINING_DATA_QUEUE_RUNNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/status.h"
#include "kernels/session.h"
#include "training/data/coordinator.h"

namespace actorflow {

struct QueueRunnerDef {
  std::string name;                      // for reports: "queue runner NAME"
  std::vector<std::string> enqueue_ops;  // one thread each (an op may repeat)
  std::string close_op;                  // QueueClose; empty = none
  std::string cancel_op;                 // QueueClose with cancel_pending_enqueues
  // Runs per thread before it ends cleanly; < 0 = until OutOfRange or a stop. (A
  // filename producer enqueues every file once per run: max_runs = epochs.)
  int64_t max_runs = -1;
};

class QueueRunner {
 public:
  QueueRunner() = default;
  explicit QueueRunner(QueueRunnerDef def) : def_(std::move(def)) {}

  // Starts the threads on `coord`. InvalidArgument when there is no enqueue op.
  Status Start(Session* session, Coordinator* coord) const;

  const QueueRunnerDef& def() const { return def_; }

 private:
  QueueRunnerDef def_;
};

// Starts every runner; the first error stops the coordinator and is returned.
Status StartQueueRunners(Session* session, Coordinator* coord,
                         const std::vector<QueueRunner>& runners);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DATA_QUEUE_RUNNER_H_
