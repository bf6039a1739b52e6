// ConnectionThreads: every task gets a thread of its own up to the limit (a task that
// blocks never delays another), beyond it tasks wait their turn, idle threads above
// the warm ones exit, and shutdown runs what is queued. Bounded waits only.
#include "tools/serve/connection_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace actorflow {
namespace cli {
namespace {

using std::chrono::milliseconds;

// A gate tasks wait at until the test opens it; counts who is waiting.
struct Gate {
  std::mutex mu;
  std::condition_variable changed;
  bool open = false;
  int waiting = 0;
  int done = 0;

  void Pass() {
    std::unique_lock<std::mutex> lock(mu);
    ++waiting;
    changed.notify_all();
    changed.wait(lock, [this] { return open; });
    --waiting;
    ++done;
    changed.notify_all();
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    changed.notify_all();
  }
  // Whether `pred` held within 10 s.
  template <class Pred>
  bool WaitUntil(Pred pred) {
    std::unique_lock<std::mutex> lock(mu);
    return changed.wait_for(lock, std::chrono::seconds(10), pred);
  }
};

TEST(ConnectionThreadsTest, EveryBlockedTaskHasAThreadOfItsOwnUpToTheLimit) {
  Gate gate;
  ConnectionThreads threads(/*warm_threads=*/1, /*max_threads=*/8, milliseconds(50));
  for (int i = 0; i < 8; ++i) threads.enqueue([&gate] { gate.Pass(); });
  // All 8 wait at once: none queued behind another.
  EXPECT_TRUE(gate.WaitUntil([&gate] { return gate.waiting == 8; }));
  EXPECT_EQ(threads.active(), 8);
  EXPECT_EQ(threads.threads(), 8u);
  // A ninth waits for a thread; it runs once one frees.
  threads.enqueue([&gate] { gate.Pass(); });
  EXPECT_EQ(threads.threads(), 8u);
  gate.Open();
  EXPECT_TRUE(gate.WaitUntil([&gate] { return gate.done == 9; }));
  // Idle threads beyond the warm one exit (bounded wait, polling their count).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (threads.threads() > 1 && std::chrono::steady_clock::now() < deadline) {
    std::unique_lock<std::mutex> lock(gate.mu);
    gate.changed.wait_for(lock, milliseconds(10));
  }
  EXPECT_EQ(threads.threads(), 1u);
  EXPECT_EQ(threads.active(), 0);
  threads.shutdown();
  EXPECT_EQ(threads.threads(), 0u);
}

TEST(ConnectionThreadsTest, ShutdownRunsWhatIsQueued) {
  std::atomic<int> ran{0};
  {
    ConnectionThreads threads(1, 1);
    for (int i = 0; i < 5; ++i) threads.enqueue([&ran] { ++ran; });
    threads.shutdown();
  }
  EXPECT_EQ(ran.load(), 5);
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
