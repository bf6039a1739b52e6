#include "graph/cooperative.h"

#include <thread>
#include <utility>
#include <vector>

namespace actorflow {
namespace {

thread_local CooperativeScheduler* current_scheduler = nullptr;

}  // namespace

CooperativeScheduler* CurrentCooperativeScheduler() { return current_scheduler; }

ScopedCooperativeScheduler::ScopedCooperativeScheduler(CooperativeScheduler* scheduler)
    : previous_(current_scheduler) {
  current_scheduler = scheduler;
}

ScopedCooperativeScheduler::~ScopedCooperativeScheduler() { current_scheduler = previous_; }

std::function<void()> AdoptThread(const std::string& name, std::function<void()> body) {
  if (current_scheduler == nullptr) return body;
  return current_scheduler->Adopt(name, std::move(body));
}

void RunThreadsCooperatively(const std::string& name, int n, const std::function<void(int)>& body) {
  std::mutex mu;
  std::condition_variable all_done;
  int done = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back(AdoptThread(name + " " + std::to_string(i), [&, i] {
      body(i);
      std::lock_guard<std::mutex> lock(mu);
      ++done;
      all_done.notify_all();
    }));
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    WaitCooperatively(lock, all_done, [&] { return done == n; });
  }
  for (std::thread& t : threads) t.join();
}

int64_t CooperativeNowMicros() {
  if (current_scheduler != nullptr) return current_scheduler->NowMicros();
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void SleepCooperatively(int64_t ms) {
  if (ms <= 0) return;
  if (current_scheduler != nullptr) {
    current_scheduler->WaitUntil([] { return false; }, ms);
    return;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace actorflow
