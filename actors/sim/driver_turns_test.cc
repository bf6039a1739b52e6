// DriverTurns against a made-up simulation (a virtual clock and a list of timed
// callbacks): one thread at a time, in a fixed order; waits met by what the
// simulation does; timeouts on the virtual clock; a quiet simulation ends every wait;
// threads started from a turn join the turns.
#include "actors/sim/driver_turns.h"

#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "graph/cooperative.h"

namespace actorflow {
namespace {

// The made-up simulation: callbacks due at virtual times, run one at a time by
// advance(), earliest first (ties in the order they were added).
struct FakeSimulation {
  int64_t now_us = 0;
  std::multimap<int64_t, std::function<void()>> due;
  int advances = 0;

  DriverTurns::Hooks Hooks(std::function<bool()> more_to_come = [] { return false; }) {
    DriverTurns::Hooks hooks;
    hooks.advance = [this] {
      if (due.empty()) return false;
      auto first = due.begin();
      now_us = first->first;
      std::function<void()> fire = std::move(first->second);
      due.erase(first);
      ++advances;
      fire();
      return true;
    };
    hooks.now_micros = [this] { return now_us; };
    hooks.start_timer = [this](int64_t us, std::function<void()> fire) {
      due.emplace(now_us + us, std::move(fire));
    };
    hooks.more_to_come = std::move(more_to_come);
    return hooks;
  }
};

TEST(DriverTurnsTest, ThreadsTakeTurnsInTheirOrderAndWaitForTheSimulation) {
  FakeSimulation sim;
  std::vector<std::string> log;  // written only by the turn's holder
  {
    DriverTurns turns(sim.Hooks());
    for (int t = 0; t < 3; ++t) {
      turns.Start("thread " + std::to_string(t), [&, t] {
        for (int round = 0; round < 3; ++round) {
          log.push_back(std::to_string(t) + ":" + std::to_string(round));
          // A call whose answer the simulation gives after (3 - t) ms.
          bool answered = false;
          sim.due.emplace(sim.now_us + (3 - t) * 1000, [&answered] { answered = true; });
          EXPECT_TRUE(turns.WaitUntil([&answered] { return answered; }, -1));
        }
      });
    }
    turns.Run();
  }
  // Round 0 in start order; then each thread runs when its answer comes: thread 2
  // (1 ms) first, and so on, on the virtual clock.
  const std::vector<std::string> expected = {"0:0", "1:0", "2:0", "2:1", "1:1", "2:2",
                                             "0:1", "1:2", "0:2"};
  EXPECT_EQ(log, expected);
  EXPECT_EQ(sim.now_us, 9000);  // thread 0's three calls of 3 ms each
}

TEST(DriverTurnsTest, AWaitTimesOutOnTheVirtualClockAndASleepLastsItsTime) {
  FakeSimulation sim;
  bool waited = true;
  int64_t slept_from = -1, slept_to = -1;
  {
    DriverTurns turns(sim.Hooks());
    turns.Start("sleeper", [&] {
      waited = turns.WaitUntil([] { return false; }, 250);
      slept_from = CooperativeNowMicros();
      SleepCooperatively(40);
      slept_to = CooperativeNowMicros();
    });
    turns.Run();
  }
  EXPECT_FALSE(waited);
  EXPECT_EQ(slept_from, 250000);
  EXPECT_EQ(slept_to, 290000);
}

TEST(DriverTurnsTest, AQuietSimulationEndsEveryWaitUnmet) {
  FakeSimulation sim;
  std::vector<bool> met(2, true);
  {
    DriverTurns turns(sim.Hooks());
    for (int t = 0; t < 2; ++t) {
      turns.Start("waiter", [&, t] { met[t] = turns.WaitUntil([] { return false; }, -1); });
    }
    turns.Run();
  }
  EXPECT_FALSE(met[0]);
  EXPECT_FALSE(met[1]);
}

TEST(DriverTurnsTest, ThreadsStartedFromATurnJoinTheTurnsAndCanBeWaitedFor) {
  FakeSimulation sim;
  std::vector<std::string> log;
  {
    DriverTurns turns(sim.Hooks());
    turns.Start("parent", [&] {
      std::mutex mu;
      std::condition_variable cv;
      int ended = 0;
      std::vector<std::thread> children;
      for (int c = 0; c < 2; ++c) {
        children.emplace_back(AdoptThread("child", [&, c] {
          SleepCooperatively(10 * (2 - c));  // child 1 wakes first
          log.push_back("child " + std::to_string(c));
          std::lock_guard<std::mutex> lock(mu);
          ++ended;
          cv.notify_all();
        }));
      }
      log.push_back("parent waits");
      std::unique_lock<std::mutex> lock(mu);
      EXPECT_TRUE(WaitCooperatively(lock, cv, [&] { return ended == 2; }));
      lock.unlock();
      log.push_back("parent joins");
      for (std::thread& child : children) child.join();
    });
    turns.Run();
  }
  const std::vector<std::string> expected = {"parent waits", "child 1", "child 0", "parent joins"};
  EXPECT_EQ(log, expected);
}

TEST(DriverTurnsTest, TheRunGoesOnWhileMoreIsToComeAndThenEnds) {
  FakeSimulation sim;
  bool restarted = false, pending = true;
  std::unique_ptr<DriverTurns> turns;
  turns = std::make_unique<DriverTurns>(sim.Hooks([&pending] { return pending; }));
  // Every thread has ended long before the timer that starts another one.
  turns->Start("first", [] {});
  sim.due.emplace(5000000, [&] {
    pending = false;
    turns->Start("second", [&] { restarted = true; });
  });
  turns->Run();
  turns.reset();
  EXPECT_TRUE(restarted);
  EXPECT_EQ(sim.now_us, 5000000);
}

}  // namespace
}  // namespace actorflow
