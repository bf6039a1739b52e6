// Actor jobs run on the thread that is waiting for them: a client blocked in
// Session::Run executes the step's chain (master -> device -> master) itself when the
// actors are idle, instead of handing it to a scheduler thread and waiting.
//
// Why: a small step's kernels take tens of microseconds; handing the step from the
// client to a scheduler thread and the answer back costs two cross-core hand-offs
// and moves the step's data between caches. Nothing of the actor model changes:
// every message still goes through its actor's mailbox, and an actor still runs on
// one thread at a time (CAF resumes an actor only once its mailbox is scheduled).
// Only the thread that resumes it is the caller's.
//
// How: CAF schedules an idle actor that receives a message through the sender's
// execution unit (`exec_later`). A CallerJobs is such a unit for a thread outside the
// scheduler. It keeps the first job scheduled through it and hands every further one
// to the scheduler, so a master's fan-out to several devices still runs them on the
// scheduler's threads in parallel while one runs here. Included only by actors/*.cc.
#ifndef ACTORFLOW_ACTORS_SCHEDULER_CALLER_JOBS_H_
#define ACTORFLOW_ACTORS_SCHEDULER_CALLER_JOBS_H_

#include <cstddef>
#include <functional>

#include <caf/execution_unit.hpp>
#include <caf/fwd.hpp>

namespace actorflow {

class CallerJobs : public caf::execution_unit {
 public:
  // `max_throughput`: messages an actor handles in one turn here (0: the scheduler's
  // own bound). 1 runs only the message that scheduled an idle actor, the first in
  // its mailbox: a caller waiting for its own answer does not also serve what queued
  // behind it.
  explicit CallerJobs(caf::actor_system& system, size_t max_throughput = 0);
  // Hands a job still held to the scheduler: nothing scheduled here is ever lost.
  ~CallerJobs() override;

  CallerJobs(const CallerJobs&) = delete;
  CallerJobs& operator=(const CallerJobs&) = delete;

  // CAF's hook: holds `job` if no job is held, else gives it to the scheduler.
  void exec_later(caf::resumable* job) override;

  // Runs the held job on this thread, then the job it scheduled, and so on, until
  // none is held or `done()` holds; a job still held then goes to the scheduler.
  // Returns the number of jobs run. Contract: called on the thread that owns this
  // unit, and only outside any actor.
  int RunHeld(const std::function<bool()>& done);

  // Whether a job is held (tests).
  bool holds_job() const { return held_ != nullptr; }

 private:
  void HandOver();

  caf::resumable* held_ = nullptr;
  const size_t max_throughput_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SCHEDULER_CALLER_JOBS_H_
