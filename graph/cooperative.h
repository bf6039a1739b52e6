// Cooperative threads: a way for code that starts threads and waits on them (a
// Coordinator, queue runners, a session manager's wait for the chief) to run under a
// scheduler that lets one thread run at a time, on a virtual clock. A simulated
// cluster (actors/sim/simulated_cluster.h, RunDrivers) installs one on the threads of
// the drivers it runs, so that blocking driver code (a between-graph replica waiting
// in Run for its peers) stays deterministic. Without one (every ordinary thread) the
// helpers below are std::thread, condition variables and the steady clock.
//
// Contract for code that starts or waits on threads which may call a simulated
// cluster: start them through AdoptThread, wait through WaitCooperatively /
// SleepCooperatively, and read time through CooperativeNowMicros. A wait that
// bypasses them keeps the turn while it blocks, and the threads it waits for never
// run. CAF-free; no dependencies.
#ifndef ACTORFLOW_GRAPH_COOPERATIVE_H_
#define ACTORFLOW_GRAPH_COOPERATIVE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace actorflow {

class CooperativeScheduler {
 public:
  virtual ~CooperativeScheduler() = default;
  // Called on the thread that is about to start another (it holds the turn): the
  // returned function is what the new std::thread runs; it waits for its turn before
  // `body`, and passes the turn on after it.
  virtual std::function<void()> Adopt(const std::string& name, std::function<void()> body) = 0;
  // Passes the turn until `ready()` holds (evaluated by whichever thread holds the
  // turn, so it may read state that only turn holders change; it may lock mutexes the
  // waiting thread does not hold) or `timeout_ms` (>= 0) of the scheduler's time has
  // passed. Returns ready()'s last value; false also when nothing else can ever
  // make it true (the scheduler went quiet).
  virtual bool WaitUntil(const std::function<bool()>& ready, int64_t timeout_ms) = 0;
  // The scheduler's clock, in microseconds.
  virtual int64_t NowMicros() = 0;
};

// The calling thread's scheduler; null for an ordinary thread.
CooperativeScheduler* CurrentCooperativeScheduler();

// Installs `scheduler` on the calling thread while it lives (restores the previous one).
class ScopedCooperativeScheduler {
 public:
  explicit ScopedCooperativeScheduler(CooperativeScheduler* scheduler);
  ~ScopedCooperativeScheduler();
  ScopedCooperativeScheduler(const ScopedCooperativeScheduler&) = delete;
  ScopedCooperativeScheduler& operator=(const ScopedCooperativeScheduler&) = delete;

 private:
  CooperativeScheduler* previous_;
};

// What a new std::thread should run for `body`: `body` itself on an ordinary thread,
// the scheduler's Adopt under one.
std::function<void()> AdoptThread(const std::string& name, std::function<void()> body);

// Runs body(0) .. body(n - 1), each on a thread of its own (AdoptThread, named
// "<name> i"), and returns once all have: the threads of a driver's workers, which
// may block in a simulated cluster's steps. Waits cooperatively, then joins.
void RunThreadsCooperatively(const std::string& name, int n, const std::function<void(int)>& body);

// Microseconds of the steady clock (an ordinary thread) or of the scheduler's clock.
int64_t CooperativeNowMicros();

// Sleeps `ms` of the thread's clock.
void SleepCooperatively(int64_t ms);

// cv.wait(lock, pred) (timeout_ms < 0) or cv.wait_for(lock, timeout_ms, pred); under a
// scheduler the turn passes until pred() holds, evaluated with `lock`'s mutex held.
// Returns pred()'s last value. `lock` is held again on return.
template <class Predicate>
bool WaitCooperatively(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                       Predicate pred, int64_t timeout_ms = -1) {
  CooperativeScheduler* scheduler = CurrentCooperativeScheduler();
  if (scheduler == nullptr) {
    if (timeout_ms < 0) {
      cv.wait(lock, pred);
      return true;
    }
    return cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), pred);
  }
  if (pred()) return true;
  std::mutex* mu = lock.mutex();
  lock.unlock();
  const bool ready = scheduler->WaitUntil(
      [mu, &pred] {
        std::lock_guard<std::mutex> held(*mu);
        return static_cast<bool>(pred());
      },
      timeout_ms);
  lock.lock();
  return ready || pred();
}

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_COOPERATIVE_H_
