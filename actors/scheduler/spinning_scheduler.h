// The scheduler every actor system of actorflow runs on: CAF's work sharing (one
// central job queue, so a parked worker is woken at once instead of after work
// stealing's sleep phases), whose idle workers first poll the queue for a bounded
// time before parking on a condition variable.
//
// Why: a step is a chain of hand-offs (client -> master -> device -> master ->
// client). A hand-off to a parked thread costs a futex wake and a reschedule, tens of
// microseconds on a virtual machine, and a small step has four of them. A worker that
// polls for a few tens of microseconds after its last job takes the next message of
// the chain within a microsecond. The poll is bounded: a system without work parks
// every worker after `spin_us`, so an idle process costs no CPU. And a thread that
// was parked for longer than kQuietGap, woken by a lone message (a heartbeat, a
// timer), parks again without polling: messages that far apart are no chain worth
// a poll, and an idle cluster's heartbeats then cost a wake-up each, not a poll.
#ifndef ACTORFLOW_ACTORS_SCHEDULER_SPINNING_SCHEDULER_H_
#define ACTORFLOW_ACTORS_SCHEDULER_SPINNING_SCHEDULER_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "caf/fwd.hpp"

namespace actorflow {

// How long an idle worker (and a client thread waiting for a step) polls before it
// parks, unless configured otherwise. Chosen to cover the gap between the messages
// of one step on a loaded 2-core machine; idle CPU stays zero (see above).
constexpr int64_t kDefaultSchedulerSpinUs = 200;

// A park (or a blocking wait for network events) longer than this marks the wake
// that ends it as lonely: the thread does not poll before its next park.
constexpr std::chrono::milliseconds kQuietGap{10};

// The system config key under which ConfigureScheduler leaves `spin_us` for the
// transport (actors/transport/guarded_transport.cc): its network thread polls its sockets for
// as long after each event before it blocks in epoll_wait.
constexpr char kSchedulerSpinUsKey[] = "actorflow.scheduler-spin-us";

struct SchedulerOptions {
  size_t threads = 0;                         // 0: CAF's default (the cores)
  int64_t spin_us = kDefaultSchedulerSpinUs;  // 0: park at once, as CAF's own policy
};

// Loads the polling work-sharing scheduler into `cfg` (before the actor system is
// made from it). Replaces `scheduler.policy` and `scheduler.max-threads`; sets
// kSchedulerSpinUsKey.
void ConfigureScheduler(caf::actor_system_config& cfg, const SchedulerOptions& options);

// How many of `system`'s scheduler threads are parked (0 when `system` does not run
// the scheduler of ConfigureScheduler). Tests and diagnostics only.
size_t ParkedSchedulerThreads(caf::actor_system& system);

// How a poll's predicate costs: a load of memory (a queue's length, a flag), or a
// system call (a socket read), which already takes longer than the pauses that keep
// a memory poll from flooding the core (16 PAUSEs: about 0.75 µs on this Skylake).
enum class PollCost { kMemory, kSystemCall };

// Implementation detail of SpinUntil: pauses (for kMemory) and, every 4th
// iteration, gives the core to another runnable thread.
void RelaxWhileSpinning(unsigned iteration, PollCost cost = PollCost::kMemory);

// The process's polling budget. A thread that polls (SpinUntil) or runs actor jobs
// counts as busy; a poll does not start, and stops, while more threads are busy than
// the process has cores, because the thread it waits for may then need that very
// core (two networks on two cores: each client polling for its device's answer would
// take a core from a device). Polling only saves wake-ups: parking is always correct.
std::atomic<int>& BusyThreads();
int PollingCores();  // std::thread::hardware_concurrency(), at least 1
inline bool PollingBudgetLeft() {
  return BusyThreads().load(std::memory_order_relaxed) <= PollingCores();
}

// Counts the calling thread in BusyThreads while it lives; nested scopes on one
// thread count it once. For threads that take a core outside any actor: a thread
// running actor jobs (CallerJobs), one polling (SpinUntil), and one that computes
// between its steps (a grid search's trial builds its graph and runs its input
// pipeline on its own thread). Counting the last keeps the scheduler's idle threads
// from polling on the core it computes on; it stays counted while it waits for an
// answer, so that wait itself may poll only if a core is left.
class BusyThreadScope {
 public:
  BusyThreadScope() {
    if (depth_++ == 0) BusyThreads().fetch_add(1, std::memory_order_acq_rel);
  }
  ~BusyThreadScope() {
    if (--depth_ == 0) BusyThreads().fetch_sub(1, std::memory_order_acq_rel);
  }
  BusyThreadScope(const BusyThreadScope&) = delete;
  BusyThreadScope& operator=(const BusyThreadScope&) = delete;

 private:
  static inline thread_local int depth_ = 0;
};

// Polls `ready()` for up to `spin` (yielding the core between polls) while the
// polling budget lasts, then returns whether it became true. For a thread already
// counted in BusyThreads (a scheduler worker); others call SpinUntil.
template <class Predicate>
bool PollUntil(Predicate ready, std::chrono::microseconds spin,
               PollCost cost = PollCost::kMemory) {
  if (spin.count() <= 0) return ready();
  const auto deadline = std::chrono::steady_clock::now() + spin;
  for (unsigned i = 0;; ++i) {
    if (ready()) return true;
    // Reading the clock costs about as much as a poll; every 8th is enough.
    if ((i & 7) == 7 &&
        (std::chrono::steady_clock::now() >= deadline || !PollingBudgetLeft())) {
      return ready();
    }
    RelaxWhileSpinning(i, cost);
  }
}

// PollUntil for a thread that is not a scheduler worker (a client waiting for its
// step, a network thread): it counts itself as busy while it polls (once, if a
// BusyThreadScope of its own already counts it). Callers park on
// their condition variable when it returns false.
template <class Predicate>
bool SpinUntil(Predicate ready, std::chrono::microseconds spin,
               PollCost cost = PollCost::kMemory) {
  if (spin.count() <= 0) return ready();
  BusyThreadScope polling;
  return PollingBudgetLeft() ? PollUntil(ready, spin, cost) : ready();
}

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SCHEDULER_SPINNING_SCHEDULER_H_
