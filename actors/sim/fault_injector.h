// What happens to each message that crosses between two tasks of a simulated
// cluster: the network model (latency, bandwidth, jitter) and the fault plan's message
// faults, decided from one seed. CAF-free: the simulator's transport asks, for every
// message in the order the deterministic scheduler sends them, and acts on the answer.
//
// Determinism: the decisions depend only on the seed, the plan, the link model and the
// sequence of Decide calls (their messages and virtual times). Each fault draws from
// its own random stream, so adding a fault to a plan does not change the draws of the
// others.
#ifndef ACTORFLOW_ACTORS_SIM_FAULT_INJECTOR_H_
#define ACTORFLOW_ACTORS_SIM_FAULT_INJECTOR_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "actors/sim/fault_plan.h"

namespace actorflow {

// A seeded generator (SplitMix64): tiny, fast, and the same sequence on every host.
class SimRandom {
 public:
  explicit SimRandom(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  double Uniform();  // [0, 1)

 private:
  uint64_t state_;
};

// The network between two tasks: a message of B bytes takes latency + B / bandwidth
// of virtual time, plus a uniform [0, jitter) drawn from the seed. Messages within one
// task take no network time.
struct LinkModel {
  double latency_us = 50;
  double bandwidth_gbps = 10;  // gigabits per second
  double jitter_us = 0;

  // InvalidArgument naming the field for a negative or non-finite value, or a
  // bandwidth of 0.
  Status Validate() const;
  // Virtual microseconds for `bytes` without jitter.
  double TransferMicros(int64_t bytes) const;
};

// One message, as the transport sees it.
struct SimMessage {
  TaskId from;
  TaskId to;
  std::string_view kind;  // one of kMessageKinds
  int64_t bytes = 0;
};

struct DeliveryDecision {
  bool dropped = false;
  int copies = 1;             // 2 when duplicated
  double delay_us = 0;        // network time plus any injected delay
  bool reordered = false;     // an extra delay lets later messages overtake it
  std::string reason;         // the fault that acted ("drop faults[2]", "partition faults[4]")
};

class FaultInjector {
 public:
  FaultInjector(FaultPlan plan, LinkModel link, uint64_t seed);
  const LinkModel& link() const { return link_; }

  // Decides `message`'s fate at virtual time `now_s`. A message within one task is
  // delivered at once and untouched.
  DeliveryDecision Decide(const SimMessage& message, double now_s);

  // Whether a partition of the plan separates `a` and `b` at `now_s`.
  bool Partitioned(const TaskId& a, const TaskId& b, double now_s) const;

  // The kill and restart faults that are due when the chief's global step reaches
  // `step` (at_step == step) / when virtual time passes from `before_s` to `now_s`
  // (before_s < at_s <= now_s), in plan order.
  std::vector<const Fault*> TaskEventsAtStep(int64_t step) const;
  std::vector<const Fault*> TaskEventsBetween(double before_s, double now_s) const;

  const FaultPlan& plan() const { return plan_; }

 private:
  bool SideOf(const Fault& partition, const TaskId& task, size_t* side) const;

  FaultPlan plan_;
  LinkModel link_;
  SimRandom network_random_;
  std::vector<SimRandom> fault_random_;     // one stream per fault
  std::vector<int64_t> matched_messages_;   // per fault, for "every"
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SIM_FAULT_INJECTOR_H_
