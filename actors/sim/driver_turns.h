// DriverTurns: runs a simulated cluster's driver threads (users' driver functions
// and the threads they start through a Coordinator) one at a time, so that drivers
// that block (a between-graph replica waiting in Run for its peers' gradients) run
// deterministically on the simulation's virtual clock.
//
// A thread runs only while it holds the turn, and passes it on when it waits (for a
// simulated call's answer, a cooperative wait or sleep) or ends. The turn goes to the
// lowest-numbered thread that can run; threads are numbered in the order they were
// started, always by the turn's holder. When none can run, the turn goes to Run's
// thread, which advances the simulation (its pending messages, then its next timer)
// until one can; when the simulation has nothing left to do, every waiting thread is
// woken with its wait unmet (WaitUntil returns false). So the same drivers and seed
// interleave the same way on every run and host. Only Run's thread runs the
// simulation's actors: CAF 0.17 keeps an actor's last execution context (the
// scheduler loop's stack) and uses it when another actor answers for it.
//
// CAF-free: the simulation is reached through Hooks.
#ifndef ACTORFLOW_ACTORS_SIM_DRIVER_TURNS_H_
#define ACTORFLOW_ACTORS_SIM_DRIVER_TURNS_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "graph/cooperative.h"

namespace actorflow {

class DriverTurns final : public CooperativeScheduler {
 public:
  struct Hooks {
    // Does the simulation's next piece of work (runs its pending messages, or fires
    // its next timer); false when it has none.
    std::function<bool()> advance;
    // The virtual clock.
    std::function<int64_t()> now_micros;
    // Calls `fire` from within advance() once `us` of virtual time have passed.
    std::function<void(int64_t us, std::function<void()> fire)> start_timer;
    // Whether work may still come when every thread has ended (a restart that will
    // start a driver again); the run ends only when this is false too.
    std::function<bool()> more_to_come;
    // Optional. Called on a thread that adopts another (Adopt): what the new thread
    // runs its body through, so that it inherits the adopter's context (the
    // simulated process it belongs to).
    std::function<std::function<void(const std::function<void()>&)>()> adopter_context;
  };

  explicit DriverTurns(Hooks hooks);
  // Joins the threads Start started. Precondition: Run has returned.
  ~DriverTurns() override;

  // Starts a thread that runs `body` under the turns: before Run, or from a thread
  // holding the turn (a driver, or advance()'s work).
  void Start(const std::string& name, std::function<void()> body);

  // Hands out the turn until every thread has ended and more_to_come() is false.
  // Called once, by a thread that is not one of the turns' threads.
  void Run();

  // Whether the calling thread is one of these turns' threads.
  bool OnTurnThread() const;

  // CooperativeScheduler (graph/cooperative.h).
  std::function<void()> Adopt(const std::string& name, std::function<void()> body) override;
  bool WaitUntil(const std::function<bool()>& ready, int64_t timeout_ms) override;
  int64_t NowMicros() override { return hooks_.now_micros(); }

 private:
  struct Slot;

  std::shared_ptr<Slot> NewSlot(const std::string& name);
  std::function<void()> Wrap(std::shared_ptr<Slot> slot, std::function<void()> body);
  // The calling thread `me` gives up the turn; returns when it holds it again (at
  // once when `me` has ended).
  void PassTurn(Slot* me);
  // Run's thread, holding the turn: advances the simulation until a thread can run
  // and hands it the turn; false when the run is over.
  bool HandOut();
  Slot* PickNext();
  void Grant(Slot* next);
  void AwaitTurn(Slot* me);

  Hooks hooks_;
  std::vector<std::shared_ptr<Slot>> slots_;  // only the turn's holder changes it
  std::vector<std::thread> threads_;         // Start's threads
  std::mutex mu_;
  std::condition_variable cv_;
  Slot* holder_ = nullptr;  // guarded by mu_; null: Run's thread
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SIM_DRIVER_TURNS_H_
