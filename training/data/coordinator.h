// Coordinator: TensorFlow's tf.train.Coordinator, for the threads of an input
// pipeline (queue runners) and the training loop that consumes it.
//
//   Coordinator coord;
//   AF_RETURN_IF_ERROR(StartQueueRunners(session, &coord, runners));
//   while (!coord.ShouldStop()) {
//     Status s = session->Run({}, {}, {"train"}, nullptr);
//     if (!s.ok()) { coord.RequestStop(s, "training loop"); break; }  // OutOfRange: done
//   }
//   coord.RequestStop();
//   AF_RETURN_IF_ERROR(coord.Join(/*grace_ms=*/2000));
//
// Semantics:
// - RequestStop(error, who): asks every thread to stop. The first non-OK error other
//   than OutOfRange is kept with `who`; OutOfRange is how an input pipeline ends and
//   counts as a clean stop (TensorFlow's clean_stop_exception_types).
// - Stop callbacks (AddStopCallback) run once, on the thread that first requests the
//   stop (or at once when added after it); they must not block (a queue runner's
//   wakes its closing thread).
// - StartThread runs a function on a thread the coordinator joins.
// - Join(grace_ms) waits until every thread ended, or until a stop is requested and
//   then at most grace_ms more. It returns the first error, naming who raised it;
//   else DeadlineExceeded naming the threads that did not stop within the grace
//   period (they are joined by the destructor); else OK.
//
// Thread safety: every method may be called from any thread. The destructor
// requests a stop and joins every thread it started.
#ifndef ACTORFLOW_TRAINING_DATA_COORDINATOR_H_
#define ACTORFLOW_TRAINING_DATA_COORDINATOR_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "graph/status.h"

namespace actorflow {

class Coordinator {
 public:
  Coordinator() = default;
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  void RequestStop(const Status& error = Status::OK(), const std::string& who = "");
  bool ShouldStop() const;
  // Waits until a stop is requested; timeout_ms < 0 waits forever. Returns
  // ShouldStop().
  bool WaitForStop(int64_t timeout_ms = -1) const;

  void AddStopCallback(std::function<void()> callback);
  // Starts `body` on a new thread named `name` (for Join's report).
  void StartThread(const std::string& name, std::function<void()> body);

  Status Join(int64_t grace_ms);

  // The first error reported (OK if none) and who reported it.
  Status error() const;
  std::string error_source() const;
  // Threads started and not ended yet.
  int running_threads() const;

 private:
  struct Thread {
    std::string name;
    bool ended = false;
    std::thread thread;
  };

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;  // stop requested, or a thread ended
  bool stop_ = false;
  Status error_;
  std::string error_source_;
  std::vector<std::function<void()>> stop_callbacks_;
  std::list<Thread> threads_;  // stable addresses: each thread marks its own entry
};

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DATA_COORDINATOR_H_
