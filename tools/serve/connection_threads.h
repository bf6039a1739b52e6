// ConnectionThreads: the task queue of the serving HTTP front (cpp-httplib calls
// enqueue once per accepted connection, with a task that serves the connection's
// requests until it closes). A fixed pool would let a few slow clients (a body sent
// a byte a second, headers that never end) hold every thread while legitimate
// requests wait in the queue; here every connection gets a thread of its own, up to
// `max_threads`, and threads that stay idle for a while exit. The front answers 503
// to requests on connections beyond --max-connections (active() tells it how many
// are open), so the queue behind max_threads only holds a burst's excess.
//
// Thread safety: enqueue, active and shutdown may be called from any thread.
#ifndef ACTORFLOW_TOOLS_SERVE_CONNECTION_THREADS_H_
#define ACTORFLOW_TOOLS_SERVE_CONNECTION_THREADS_H_

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

namespace actorflow {
namespace cli {

class ConnectionThreads : public httplib::TaskQueue {
 public:
  // `warm_threads` stay when idle; more are started on demand up to `max_threads`,
  // and those exit after `idle_exit` without work.
  ConnectionThreads(size_t warm_threads, size_t max_threads,
                    std::chrono::milliseconds idle_exit = std::chrono::seconds(10));
  ~ConnectionThreads() override;

  void enqueue(std::function<void()> fn) override;
  // Runs what is queued, then waits until every thread has exited.
  void shutdown() override;

  // Connections being served now (tasks running).
  int64_t active() const { return active_.load(std::memory_order_relaxed); }
  // Threads alive now (for tests).
  size_t threads() const;

 private:
  void Work();

  const size_t warm_threads_;
  const size_t max_threads_;
  const std::chrono::milliseconds idle_exit_;
  mutable std::mutex mu_;
  std::condition_variable work_ready_;
  std::condition_variable all_exited_;
  std::deque<std::function<void()>> queue_;
  size_t threads_ = 0;  // alive
  size_t idle_ = 0;     // alive and waiting for work
  bool stopping_ = false;
  std::atomic<int64_t> active_{0};
};

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_SERVE_CONNECTION_THREADS_H_
