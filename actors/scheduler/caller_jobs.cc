#include "actors/scheduler/caller_jobs.h"

#include <caf/actor_system.hpp>
#include <caf/resumable.hpp>
#include <caf/scheduler/abstract_coordinator.hpp>

#include "actors/scheduler/spinning_scheduler.h"

namespace actorflow {

CallerJobs::CallerJobs(caf::actor_system& system, size_t max_throughput)
    : caf::execution_unit(&system), max_throughput_(max_throughput) {}

CallerJobs::~CallerJobs() { HandOver(); }

void CallerJobs::exec_later(caf::resumable* job) {
  // Only plain scheduled actors run here; anything else (a broker bound to its
  // network thread) goes where a send without a unit would put it.
  if (held_ == nullptr && job->subtype() == caf::resumable::scheduled_actor) {
    held_ = job;
    return;
  }
  system().scheduler().enqueue(job);
}

void CallerJobs::HandOver() {
  if (held_ == nullptr) return;
  caf::resumable* job = held_;
  held_ = nullptr;
  system().scheduler().enqueue(job);
}

int CallerJobs::RunHeld(const std::function<bool()>& done) {
  int ran = 0;
  if (held_ == nullptr) return ran;
  // Running actor jobs is a scheduler thread's work: it counts against the
  // process's polling budget like one (actors/scheduler/spinning_scheduler.h).
  {
    BusyThreadScope running;
    const size_t throughput =
        max_throughput_ > 0 ? max_throughput_ : system().scheduler().max_throughput();
    while (held_ != nullptr && !done()) {
      caf::resumable* job = held_;
      held_ = nullptr;
      ++ran;
      // What a scheduler worker does with a job's result (caf/scheduler/worker.hpp).
      switch (job->resume(this, throughput)) {
        case caf::resumable::resume_later:
          // Its mailbox has more than one turn's worth: fair to the others.
          system().scheduler().enqueue(job);
          break;
        case caf::resumable::done:
        case caf::resumable::awaiting_message:
          caf::intrusive_ptr_release(job);
          break;
        case caf::resumable::shutdown_execution_unit:
          // Only a scheduler's own shutdown jobs answer this, and those are never
          // scheduled through a caller's unit.
          caf::intrusive_ptr_release(job);
          break;
      }
    }
  }
  HandOver();
  return ran;
}

}  // namespace actorflow
