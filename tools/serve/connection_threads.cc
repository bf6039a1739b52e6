#include "tools/serve/connection_threads.h"

#include <algorithm>
#include <thread>
#include <utility>

namespace actorflow {
namespace cli {

ConnectionThreads::ConnectionThreads(size_t warm_threads, size_t max_threads,
                                     std::chrono::milliseconds idle_exit)
    : warm_threads_(warm_threads),
      max_threads_(std::max<size_t>(1, std::max(warm_threads, max_threads))),
      idle_exit_(idle_exit) {}

ConnectionThreads::~ConnectionThreads() { shutdown(); }

void ConnectionThreads::enqueue(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(std::move(fn));
  // A queued task waits only when max_threads are busy: an idle thread takes it, or
  // a new one.
  if (idle_ >= queue_.size()) {
    work_ready_.notify_one();
  } else if (threads_ < max_threads_ && !stopping_) {
    ++threads_;
    std::thread([this] { Work(); }).detach();
  }
}

void ConnectionThreads::shutdown() {
  std::unique_lock<std::mutex> lock(mu_);
  stopping_ = true;
  work_ready_.notify_all();
  all_exited_.wait(lock, [this] { return threads_ == 0; });
  // Nothing runs what is left (a task owns a connection: run it here rather than
  // leak its socket).
  while (!queue_.empty()) {
    std::function<void()> fn = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    fn();
    lock.lock();
  }
}

size_t ConnectionThreads::threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_;
}

void ConnectionThreads::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (queue_.empty()) {
      if (stopping_) break;
      ++idle_;
      const bool woken = work_ready_.wait_for(lock, idle_exit_, [this] {
        return stopping_ || !queue_.empty();
      });
      --idle_;
      // Beyond the warm ones, a thread without work for idle_exit goes.
      if (!woken && threads_ > warm_threads_) break;
      continue;
    }
    std::function<void()> fn = std::move(queue_.front());
    queue_.pop_front();
    active_.fetch_add(1, std::memory_order_relaxed);
    lock.unlock();
    fn();
    lock.lock();
    active_.fetch_sub(1, std::memory_order_relaxed);
  }
  --threads_;
  if (threads_ == 0) all_exited_.notify_all();
}

}  // namespace cli
}  // namespace actorflow
