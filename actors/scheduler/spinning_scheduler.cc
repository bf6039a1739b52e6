#include "actors/scheduler/spinning_scheduler.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "caf/actor_system.hpp"
#include "caf/actor_system_config.hpp"
#include "caf/policy/unprofiled.hpp"
#include "caf/resumable.hpp"
#include "caf/scheduler/coordinator.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace actorflow {

void RelaxWhileSpinning(unsigned iteration, PollCost cost) {
  // A few pauses keep a hyperthread sibling fast; then yield, because with more
  // runnable threads than cores the thread that would produce the awaited message
  // may be waiting for this very core.
  if ((iteration & 3) != 3) {
    if (cost == PollCost::kSystemCall) return;
#if defined(__x86_64__) || defined(__i386__)
    for (int i = 0; i < 16; ++i) _mm_pause();
#endif
    return;
  }
  std::this_thread::yield();
}

std::atomic<int>& BusyThreads() {
  static std::atomic<int> busy{0};
  return busy;
}

int PollingCores() {
  static const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return cores;
}

namespace {

// A CAF scheduling policy (the interface of caf::policy::work_sharing): one central
// queue; an idle worker polls the queue's length for `spin` before it parks.
// Contract kept from work_sharing: FIFO order, every enqueued job is run exactly once,
// and shutdown drains the queue through foreach_central_resumable.
class PollingWorkSharing : public caf::policy::unprofiled {
 public:
  struct coordinator_data {
    explicit coordinator_data(caf::scheduler::abstract_coordinator*) {}

    std::mutex lock;
    std::condition_variable cv;
    std::deque<caf::resumable*> queue;  // guarded by lock
    size_t sleepers = 0;                // workers parked on cv; guarded by lock
    std::atomic<size_t> queued{0};      // queue.size(), readable without the lock
    std::atomic<size_t> spinners{0};    // workers polling `queued`
    std::chrono::microseconds spin{0};  // set once, before the workers start
  };

  struct worker_data {
    explicit worker_data(caf::scheduler::abstract_coordinator*) {}
    bool busy = false;  // counted in BusyThreads: from its first job until it parks
    bool lonely = false;  // its last park lasted longer than kQuietGap
  };

  template <class Coordinator>
  void enqueue(Coordinator* self, caf::resumable* job) {
    auto& d = self->data();
    bool wake = false;
    {
      std::lock_guard<std::mutex> guard(d.lock);
      d.queue.push_back(job);
      const size_t waiting = d.queued.fetch_add(1, std::memory_order_release) + 1;
      // A polling worker takes the job within a microsecond; wake a parked one only
      // for jobs beyond what the pollers can take. A poller that gives up re-checks
      // the queue under the lock before parking, so no job is stranded.
      wake = d.sleepers > 0 && waiting > d.spinners.load(std::memory_order_acquire);
    }
    if (wake) d.cv.notify_one();
  }

  template <class Coordinator>
  void central_enqueue(Coordinator* self, caf::resumable* job) {
    enqueue(self, job);
  }

  template <class Worker>
  void external_enqueue(Worker* self, caf::resumable* job) {
    enqueue(self->parent(), job);
  }

  template <class Worker>
  void internal_enqueue(Worker* self, caf::resumable* job) {
    enqueue(self->parent(), job);
  }

  template <class Worker>
  void resume_job_later(Worker* self, caf::resumable* job) {
    enqueue(self->parent(), job);
  }

  template <class Worker>
  caf::resumable* dequeue(Worker* self) {
    auto& d = self->parent()->data();
    auto& me = self->data();
    if (!me.busy) SetBusy(me, true);
    if (d.spin.count() > 0 && !me.lonely && PollingBudgetLeft()) {
      d.spinners.fetch_add(1, std::memory_order_acq_rel);
      caf::resumable* job = nullptr;
      PollUntil(
          [&] {
            if (d.queued.load(std::memory_order_acquire) == 0) return false;
            std::lock_guard<std::mutex> guard(d.lock);
            if (d.queue.empty()) return false;  // another worker was faster
            job = PopLocked(d);
            return true;
          },
          d.spin);
      d.spinners.fetch_sub(1, std::memory_order_acq_rel);
      if (job != nullptr) return job;
    }
    SetBusy(me, false);
    std::unique_lock<std::mutex> guard(d.lock);
    ++d.sleepers;
    const auto parked = std::chrono::steady_clock::now();
    d.cv.wait(guard, [&] { return !d.queue.empty(); });
    me.lonely = std::chrono::steady_clock::now() - parked > kQuietGap;
    --d.sleepers;
    SetBusy(me, true);
    return PopLocked(d);
  }

  // A worker ends busy (it ran the shutdown job): it leaves the count.
  template <class Worker>
  void before_shutdown(Worker* self) {
    if (self->data().busy) SetBusy(self->data(), false);
  }

  template <class Worker, class UnaryFunction>
  void foreach_resumable(Worker*, UnaryFunction) {
    // Workers own no queues.
  }

  template <class Coordinator, class UnaryFunction>
  void foreach_central_resumable(Coordinator* self, UnaryFunction f) {
    auto& d = self->data();
    std::lock_guard<std::mutex> guard(d.lock);
    while (!d.queue.empty()) f(PopLocked(d));
  }

 private:
  static void SetBusy(worker_data& me, bool busy) {
    me.busy = busy;
    BusyThreads().fetch_add(busy ? 1 : -1, std::memory_order_acq_rel);
  }

  static caf::resumable* PopLocked(coordinator_data& d) {
    caf::resumable* job = d.queue.front();
    d.queue.pop_front();
    d.queued.fetch_sub(1, std::memory_order_release);
    return job;
  }
};

using PollingCoordinator = caf::scheduler::coordinator<PollingWorkSharing>;

}  // namespace

size_t ParkedSchedulerThreads(caf::actor_system& system) {
  auto* coordinator = dynamic_cast<PollingCoordinator*>(&system.scheduler());
  if (coordinator == nullptr) return 0;
  std::lock_guard<std::mutex> guard(coordinator->data().lock);
  return coordinator->data().sleepers;
}

void ConfigureScheduler(caf::actor_system_config& cfg, const SchedulerOptions& options) {
  // CAF's own setting, still read by abstract_coordinator::init for the thread count.
  cfg.set("scheduler.policy", caf::atom("sharing"));
  if (options.threads > 0) cfg.set("scheduler.max-threads", options.threads);
  const auto spin = std::chrono::microseconds(std::max<int64_t>(0, options.spin_us));
  caf::put(cfg.content, kSchedulerSpinUsKey, static_cast<int64_t>(spin.count()));
  // A scheduler module loaded by the user replaces the one CAF would pick.
  cfg.module_factories.push_back([spin](caf::actor_system& sys) -> caf::actor_system::module* {
    auto* coordinator = new PollingCoordinator(sys);
    coordinator->data().spin = spin;
    return coordinator;
  });
}

}  // namespace actorflow
