#include "graph/cooperative.h"

#include <thread>
#include <utility>

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
