// The polling work-sharing scheduler: every message is handled exactly once and in
// order per sender, whatever the poll; an idle system parks every thread.
#include "actors/scheduler/spinning_scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <caf/all.hpp>
#include <chrono>
#include <thread>
#include <vector>

namespace actorflow {
namespace {

using PassAtom = caf::atom_constant<caf::atom("pass")>;

struct Counters {
  std::atomic<int64_t> handled{0};
  std::atomic<int64_t> out_of_order{0};
};

// Forwards each token to the next actor of a ring until its hop count runs out, and
// checks that the tokens of one ring arrive in the order they were sent.
caf::behavior RingMember(caf::event_based_actor* self, Counters* counters) {
  auto next = std::make_shared<caf::actor>();
  auto last_seen = std::make_shared<std::vector<int64_t>>();
  return {
      [=](caf::actor successor) { *next = successor; },
      [=](PassAtom, int token, int64_t sequence, int hops_left) {
        counters->handled.fetch_add(1);
        if (static_cast<size_t>(token) >= last_seen->size()) last_seen->resize(token + 1, -1);
        if (sequence <= (*last_seen)[token]) counters->out_of_order.fetch_add(1);
        (*last_seen)[token] = sequence;
        if (hops_left > 0) self->send(*next, PassAtom::value, token, sequence + 1, hops_left - 1);
      },
  };
}

// Waits (bounded) until `system`'s `threads` scheduler threads are all parked.
bool AllParkedWithin(caf::actor_system& system, size_t threads, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ParkedSchedulerThreads(system) == threads) return true;
    std::this_thread::yield();
  }
  return ParkedSchedulerThreads(system) == threads;
}

class SpinningSchedulerTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(SpinningSchedulerTest, EveryMessageIsHandledOnceInOrderAndIdleThreadsPark) {
  constexpr size_t kThreads = 3;
  constexpr int kRingSize = 5;
  constexpr int kTokens = 8;
  constexpr int kHops = 4000;
  caf::actor_system_config cfg;
  cfg.set("logger.console", caf::atom("none"));
  ConfigureScheduler(cfg, SchedulerOptions{kThreads, GetParam()});
  Counters counters;
  {
    caf::actor_system system{cfg};
    std::vector<caf::actor> ring;
    for (int i = 0; i < kRingSize; ++i) ring.push_back(system.spawn(RingMember, &counters));
    for (int i = 0; i < kRingSize; ++i) caf::anon_send(ring[i], ring[(i + 1) % kRingSize]);
    for (int token = 0; token < kTokens; ++token) {
      caf::anon_send(ring[token % kRingSize], PassAtom::value, token, int64_t{0}, kHops);
    }
    const int64_t expected = static_cast<int64_t>(kTokens) * (kHops + 1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (counters.handled.load() < expected && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    EXPECT_EQ(counters.handled.load(), expected);
    EXPECT_EQ(counters.out_of_order.load(), 0);
    // With nothing left to do, each thread stops polling after the bounded spin.
    EXPECT_TRUE(AllParkedWithin(system, kThreads, std::chrono::seconds(10)))
        << ParkedSchedulerThreads(system) << " of " << kThreads << " threads parked";
    for (const caf::actor& a : ring) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }
  // No message was handled twice, nor after the system stopped.
  EXPECT_EQ(counters.handled.load(), static_cast<int64_t>(kTokens) * (kHops + 1));
}

INSTANTIATE_TEST_SUITE_P(SpinBudgets, SpinningSchedulerTest, ::testing::Values(0, 50, 5000));

TEST(SpinUntilTest, ReturnsAsSoonAsTheConditionHoldsAndFalseWhenTheBudgetRunsOut) {
  int polls = 0;
  EXPECT_TRUE(SpinUntil([&] { return ++polls == 3; }, std::chrono::microseconds(1000000)));
  EXPECT_EQ(polls, 3);
  EXPECT_FALSE(SpinUntil([] { return false; }, std::chrono::microseconds(100)));
  // A zero budget asks once.
  polls = 0;
  EXPECT_FALSE(SpinUntil([&] { return ++polls > 1; }, std::chrono::microseconds(0)));
  EXPECT_EQ(polls, 1);
}

TEST(SpinUntilTest, DoesNotPollWhileEveryCoreIsBusyAndLeavesTheCountAsItFoundIt) {
  const int before = BusyThreads().load();
  // As if every core ran a thread already: the poll asks once and gives up.
  BusyThreads().fetch_add(PollingCores());
  int polls = 0;
  EXPECT_FALSE(SpinUntil([&] { return ++polls == 3; }, std::chrono::microseconds(1000000)));
  EXPECT_EQ(polls, 1);
  BusyThreads().fetch_sub(PollingCores());
  EXPECT_EQ(BusyThreads().load(), before);
  // With the cores free again it polls until the condition holds.
  polls = 0;
  EXPECT_TRUE(SpinUntil([&] { return ++polls == 3; }, std::chrono::microseconds(1000000)));
  EXPECT_EQ(BusyThreads().load(), before);
}

TEST(SpinUntilTest, ASystemsWorkersLeaveTheBusyCountWhenItStops) {
  const int before = BusyThreads().load();
  {
    caf::actor_system_config cfg;
    ConfigureScheduler(cfg, SchedulerOptions{2, 200});
    caf::actor_system system{cfg};
    auto echo = system.spawn([]() -> caf::behavior { return {[](int x) { return x; }}; });
    caf::scoped_actor self{system};
    for (int i = 0; i < 100; ++i) {
      self->request(echo, caf::infinite, i).receive([&](int y) { EXPECT_EQ(y, i); },
                                                    [](caf::error&) { ADD_FAILURE(); });
    }
    EXPECT_LE(BusyThreads().load(), before + 2);  // at most its two workers
  }
  EXPECT_EQ(BusyThreads().load(), before);
}

TEST(BusyThreadScopeTest, CountsItsThreadOnceHoweverNestedAndPollsOnlyIfACoreIsLeft) {
  const int before = BusyThreads().load();
  {
    BusyThreadScope computing;
    EXPECT_EQ(BusyThreads().load(), before + 1);
    {
      BusyThreadScope nested;
      EXPECT_EQ(BusyThreads().load(), before + 1);
    }
    EXPECT_EQ(BusyThreads().load(), before + 1);
    // A poll of a thread already counted does not count it again...
    int seen = -1;
    EXPECT_TRUE(SpinUntil([&] { return (seen = BusyThreads().load()) >= 0; },
                          std::chrono::microseconds(1000000)));
    EXPECT_EQ(seen, before + 1);
    // ...and it stops at once when the other cores are taken: this thread's own core
    // is already one of the busy ones.
    BusyThreads().fetch_add(PollingCores());
    int polls = 0;
    EXPECT_FALSE(SpinUntil([&] { return ++polls == 3; }, std::chrono::microseconds(1000000)));
    EXPECT_EQ(polls, 1);
    BusyThreads().fetch_sub(PollingCores());
  }
  EXPECT_EQ(BusyThreads().load(), before);
  // Another thread's scope counts that thread.
  std::thread other([before] {
    BusyThreadScope computing;
    EXPECT_EQ(BusyThreads().load(), before + 1);
  });
  other.join();
  EXPECT_EQ(BusyThreads().load(), before);
}

}  // namespace
}  // namespace actorflow
