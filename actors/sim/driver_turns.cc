#include "actors/sim/driver_turns.h"

#include <utility>

namespace actorflow {

struct DriverTurns::Slot {
  enum class State { kWaiting, kRunning, kDone };
  State state = State::kWaiting;
  std::string name;
  // While kWaiting: when the thread may run again (null: at once). Evaluated by the
  // turn's holder.
  std::function<bool()> ready;
  bool timed_out = false;  // the wait's timeout passed
  bool gave_up = false;    // the simulation went quiet during the wait
  uint64_t wait_generation = 0;  // tells a stale timeout from the current wait's
};

namespace {

thread_local DriverTurns* current_turns = nullptr;
thread_local void* current_slot = nullptr;

}  // namespace

DriverTurns::DriverTurns(Hooks hooks) : hooks_(std::move(hooks)) {}

DriverTurns::~DriverTurns() {
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

bool DriverTurns::OnTurnThread() const { return current_turns == this; }

std::shared_ptr<DriverTurns::Slot> DriverTurns::NewSlot(const std::string& name) {
  auto slot = std::make_shared<Slot>();
  slot->name = name;
  slots_.push_back(slot);
  return slot;
}

std::function<void()> DriverTurns::Wrap(std::shared_ptr<Slot> slot, std::function<void()> body) {
  return [this, slot = std::move(slot), body = std::move(body)] {
    current_turns = this;
    current_slot = slot.get();
    ScopedCooperativeScheduler scheduler(this);
    AwaitTurn(slot.get());
    body();
    slot->state = Slot::State::kDone;
    PassTurn(slot.get());
    current_turns = nullptr;
    current_slot = nullptr;
  };
}

void DriverTurns::Start(const std::string& name, std::function<void()> body) {
  threads_.emplace_back(Wrap(NewSlot(name), std::move(body)));
}

std::function<void()> DriverTurns::Adopt(const std::string& name, std::function<void()> body) {
  if (hooks_.adopter_context) {
    auto in_context = hooks_.adopter_context();
    body = [in_context = std::move(in_context), body = std::move(body)] { in_context(body); };
  }
  return Wrap(NewSlot(name), std::move(body));
}

void DriverTurns::Run() {
  for (;;) {
    AwaitTurn(nullptr);
    if (!HandOut()) return;
  }
}

bool DriverTurns::WaitUntil(const std::function<bool()>& ready, int64_t timeout_ms) {
  if (ready()) return true;
  Slot* me = static_cast<Slot*>(current_slot);
  if (current_turns != this || me == nullptr) return false;  // not one of ours: cannot wait
  me->ready = ready;
  me->timed_out = false;
  me->gave_up = false;
  const uint64_t generation = ++me->wait_generation;
  if (timeout_ms >= 0) {
    std::shared_ptr<Slot> keep;
    for (const auto& s : slots_) {
      if (s.get() == me) keep = s;
    }
    hooks_.start_timer(timeout_ms * 1000, [keep, generation] {
      if (keep->wait_generation == generation) keep->timed_out = true;
    });
  }
  me->state = Slot::State::kWaiting;
  PassTurn(me);
  me->ready = nullptr;
  return ready();
}

DriverTurns::Slot* DriverTurns::PickNext() {
  for (const auto& s : slots_) {
    if (s->state != Slot::State::kWaiting) continue;
    if (!s->ready || s->timed_out || s->gave_up || s->ready()) return s.get();
  }
  return nullptr;
}

bool DriverTurns::HandOut() {
  for (;;) {
    if (Slot* next = PickNext()) {
      next->state = Slot::State::kRunning;
      Grant(next);
      return true;
    }
    bool waiting = false;
    for (const auto& s : slots_) waiting |= s->state == Slot::State::kWaiting;
    if (!waiting && !hooks_.more_to_come()) return false;
    if (hooks_.advance()) continue;
    // Nothing is left to happen: no wait can be met, and more_to_come() cannot come true.
    if (!waiting) return false;
    for (const auto& s : slots_) {
      if (s->state == Slot::State::kWaiting) s->gave_up = true;
    }
  }
}

void DriverTurns::PassTurn(Slot* me) {
  if (Slot* next = PickNext()) {
    next->state = Slot::State::kRunning;
    if (next == me) return;
    Grant(next);
  } else {
    Grant(nullptr);  // Run's thread: it advances the simulation
  }
  if (me->state != Slot::State::kDone) AwaitTurn(me);
}

void DriverTurns::Grant(Slot* next) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    holder_ = next;
  }
  cv_.notify_all();
}

void DriverTurns::AwaitTurn(Slot* me) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this, me] { return holder_ == me; });
}

}  // namespace actorflow
