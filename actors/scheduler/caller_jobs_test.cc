// CallerJobs: idle actors messaged through a caller's unit run on the caller's
// thread, one chain at a time; a fan-out's further jobs and any job left over go to
// the scheduler, so none is lost. Actors are spawned lazily (blocked until their
// first message), which makes "idle" deterministic here.
#include "actors/scheduler/caller_jobs.h"

#include <gtest/gtest.h>

#include <caf/all.hpp>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "actors/scheduler/spinning_scheduler.h"

namespace actorflow {
namespace {

using GoAtom = caf::atom_constant<caf::atom("go")>;

// Where each named actor ran, filled from the actors' threads.
struct Sightings {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, std::thread::id> where;

  void Saw(const std::string& name) {
    {
      std::lock_guard<std::mutex> lock(mu);
      where[name] = std::this_thread::get_id();
    }
    cv.notify_all();
  }
  bool Seen(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu);
    return where.count(name) > 0;
  }
  // Bounded wait for `name` to have run; returns its thread (default id if not).
  std::thread::id WaitFor(const std::string& name) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::seconds(10), [&] { return where.count(name) > 0; });
    auto it = where.find(name);
    return it == where.end() ? std::thread::id() : it->second;
  }
};

// Records where it ran, then passes GoAtom on to each of `next`.
caf::behavior Relay(caf::event_based_actor* self, std::string name, Sightings* seen,
                    std::vector<caf::actor> next) {
  return {[=](GoAtom) {
    seen->Saw(name);
    for (const caf::actor& n : next) self->send(n, GoAtom::value);
  }};
}

class CallerJobsTest : public ::testing::Test {
 protected:
  CallerJobsTest() {
    cfg_.set("logger.console", caf::atom("none"));
    ConfigureScheduler(cfg_, SchedulerOptions{2, 0});
    system_ = std::make_unique<caf::actor_system>(cfg_);
  }
  ~CallerJobsTest() override {
    caf::anon_send_exit(first_, caf::exit_reason::user_shutdown);
    for (auto& a : others_) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }

  caf::actor SpawnIdle(const std::string& name, std::vector<caf::actor> next = {}) {
    caf::actor a = system_->spawn<caf::lazy_init>(Relay, name, &seen_, std::move(next));
    others_.push_back(a);
    return a;
  }
  void SendThrough(CallerJobs& caller, const caf::actor& to) {
    caf::actor_cast<caf::strong_actor_ptr>(to)->enqueue(
        nullptr, caf::make_message_id(), caf::make_message(GoAtom::value), &caller);
  }

  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> system_;
  Sightings seen_;
  caf::actor first_;
  std::vector<caf::actor> others_;
};

TEST_F(CallerJobsTest, AChainOfIdleActorsRunsOnTheCallerThread) {
  caf::actor last = SpawnIdle("last");
  caf::actor middle = SpawnIdle("middle", {last});
  first_ = SpawnIdle("first", {middle});
  CallerJobs caller(*system_);
  SendThrough(caller, first_);
  ASSERT_TRUE(caller.holds_job());
  EXPECT_EQ(caller.RunHeld([] { return false; }), 3);
  EXPECT_FALSE(caller.holds_job());
  const auto here = std::this_thread::get_id();
  EXPECT_EQ(seen_.WaitFor("first"), here);
  EXPECT_EQ(seen_.WaitFor("middle"), here);
  EXPECT_EQ(seen_.WaitFor("last"), here);
}

TEST_F(CallerJobsTest, AFanOutRunsOneBranchHereAndTheOthersOnTheScheduler) {
  caf::actor left = SpawnIdle("left");
  caf::actor right = SpawnIdle("right");
  first_ = SpawnIdle("first", {left, right});
  CallerJobs caller(*system_);
  SendThrough(caller, first_);
  EXPECT_EQ(caller.RunHeld([] { return false; }), 2);  // first, then left
  const auto here = std::this_thread::get_id();
  EXPECT_EQ(seen_.WaitFor("left"), here);
  const std::thread::id right_thread = seen_.WaitFor("right");
  EXPECT_NE(right_thread, std::thread::id()) << "the handed-over branch never ran";
  EXPECT_NE(right_thread, here);
}

TEST_F(CallerJobsTest, DoneStopsTheChainAndTheRestRunsOnTheScheduler) {
  caf::actor last = SpawnIdle("last");
  first_ = SpawnIdle("first", {last});
  CallerJobs caller(*system_);
  SendThrough(caller, first_);
  EXPECT_EQ(caller.RunHeld([this] { return seen_.Seen("first"); }), 1);
  EXPECT_FALSE(caller.holds_job());
  const std::thread::id last_thread = seen_.WaitFor("last");
  EXPECT_NE(last_thread, std::thread::id()) << "the job left over was lost";
  EXPECT_NE(last_thread, std::this_thread::get_id());
}

TEST_F(CallerJobsTest, AJobHeldWhenTheUnitGoesAwayStillRuns) {
  first_ = SpawnIdle("first");
  {
    CallerJobs caller(*system_);
    SendThrough(caller, first_);
    EXPECT_TRUE(caller.holds_job());
  }
  const std::thread::id ran_on = seen_.WaitFor("first");
  EXPECT_NE(ran_on, std::thread::id()) << "the held job was lost";
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

// Records where it handled each tagged message.
caf::behavior Recorder(caf::event_based_actor*, Sightings* seen) {
  return {[=](GoAtom, const std::string& tag) { seen->Saw(tag); }};
}

TEST_F(CallerJobsTest, WithAThroughputOfOneTheCallerRunsOnlyTheMessageThatScheduledTheActor) {
  first_ = system_->spawn<caf::lazy_init>(Recorder, &seen_);
  CallerJobs caller(*system_, /*max_throughput=*/1);
  caf::actor_cast<caf::strong_actor_ptr>(first_)->enqueue(
      nullptr, caf::make_message_id(), caf::make_message(GoAtom::value, std::string("mine")),
      &caller);
  ASSERT_TRUE(caller.holds_job());
  // Queued behind it while the actor is held here, not running.
  caf::anon_send(first_, GoAtom::value, std::string("second"));
  caf::anon_send(first_, GoAtom::value, std::string("third"));
  EXPECT_EQ(caller.RunHeld([] { return false; }), 1);
  const auto here = std::this_thread::get_id();
  EXPECT_EQ(seen_.WaitFor("mine"), here);
  for (const char* tag : {"second", "third"}) {
    const std::thread::id ran_on = seen_.WaitFor(tag);
    EXPECT_NE(ran_on, std::thread::id()) << tag << " was lost";
    EXPECT_NE(ran_on, here) << tag << " ran on the caller's thread";
  }
}

}  // namespace
}  // namespace actorflow
