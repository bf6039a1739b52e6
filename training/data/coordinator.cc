#include "training/data/coordinator.h"

#include <chrono>
#include <utility>

#include "graph/cooperative.h"

namespace actorflow {

Coordinator::~Coordinator() {
  RequestStop();
  std::list<Thread> threads;
  {
    std::unique_lock<std::mutex> lock(mu_);
    // Under a cooperative scheduler the threads run only while this one waits for
    // them through it; an ordinary thread just joins below.
    if (CurrentCooperativeScheduler() != nullptr) {
      WaitCooperatively(lock, cv_, [this] {
        for (const Thread& t : threads_) {
          if (!t.ended) return false;
        }
        return true;
      });
    }
    threads.swap(threads_);
  }
  for (Thread& t : threads) {
    if (t.thread.joinable()) t.thread.join();
  }
}

void Coordinator::RequestStop(const Status& error, const std::string& who) {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error.ok() && error.code() != Code::kOutOfRange && error_.ok()) {
      error_ = error;
      error_source_ = who.empty() ? std::string("an unnamed thread") : who;
    }
    if (stop_) return;
    stop_ = true;
    callbacks.swap(stop_callbacks_);
  }
  cv_.notify_all();
  for (auto& callback : callbacks) callback();
}

bool Coordinator::ShouldStop() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
}

bool Coordinator::WaitForStop(int64_t timeout_ms) const {
  std::unique_lock<std::mutex> lock(mu_);
  WaitCooperatively(lock, cv_, [this] { return stop_; }, timeout_ms < 0 ? -1 : timeout_ms);
  return stop_;
}

void Coordinator::AddStopCallback(std::function<void()> callback) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stop_) {
      stop_callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback();
}

void Coordinator::StartThread(const std::string& name, std::function<void()> body) {
  std::lock_guard<std::mutex> lock(mu_);
  threads_.push_back(Thread{name, false, std::thread()});
  Thread* entry = &threads_.back();
  entry->thread = std::thread(AdoptThread(name, [this, entry, body = std::move(body)] {
    body();
    {
      std::lock_guard<std::mutex> inner(mu_);
      entry->ended = true;
    }
    cv_.notify_all();
  }));
}

Status Coordinator::Join(int64_t grace_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  auto all_ended = [this] {
    for (const Thread& t : threads_) {
      if (!t.ended) return false;
    }
    return true;
  };
  WaitCooperatively(lock, cv_, [&] { return stop_ || all_ended(); });
  const bool ended = WaitCooperatively(lock, cv_, all_ended, std::max<int64_t>(0, grace_ms));
  std::string stragglers;
  for (Thread& t : threads_) {
    if (t.ended && t.thread.joinable()) {
      // Ended threads are joined now; the others stay for the destructor.
      std::thread done = std::move(t.thread);
      lock.unlock();
      done.join();
      lock.lock();
    } else if (!t.ended) {
      stragglers += (stragglers.empty() ? "" : ", ") + t.name;
    }
  }
  if (!error_.ok()) return error_.WithContext("raised by " + error_source_);
  if (!ended) {
    return DeadlineExceeded("threads did not stop within the grace period of " +
                            std::to_string(grace_ms) + " ms after the stop request: " +
                            stragglers);
  }
  return Status::OK();
}

Status Coordinator::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

std::string Coordinator::error_source() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_source_;
}

int Coordinator::running_threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const Thread& t : threads_) n += t.ended ? 0 : 1;
  return n;
}

}  // namespace actorflow
