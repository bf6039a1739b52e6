#include "actors/sim/fault_injector.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace actorflow {

uint64_t SimRandom::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double SimRandom::Uniform() {
  // The top 53 bits: every value exactly representable, never 1.
  return static_cast<double>(Next() >> 11) * 0x1.0p-53;
}

Status LinkModel::Validate() const {
  const auto bad = [](double v) { return !std::isfinite(v) || v < 0; };
  if (bad(latency_us)) return InvalidArgument("link latency must be a finite number of microseconds >= 0");
  if (bad(jitter_us)) return InvalidArgument("link jitter must be a finite number of microseconds >= 0");
  if (bad(bandwidth_gbps) || bandwidth_gbps == 0) {
    return InvalidArgument("link bandwidth must be a finite number of Gbit/s above 0");
  }
  return Status::OK();
}

double LinkModel::TransferMicros(int64_t bytes) const {
  // bits / (Gbit/s) = nanoseconds; / 1000 for microseconds.
  return latency_us + static_cast<double>(bytes) * 8.0 / bandwidth_gbps / 1000.0;
}

FaultInjector::FaultInjector(FaultPlan plan, LinkModel link, uint64_t seed)
    : plan_(std::move(plan)), link_(link), network_random_(seed) {
  SimRandom seeds(seed ^ 0x5eedfa017ULL);
  for (size_t i = 0; i < plan_.faults.size(); ++i) fault_random_.emplace_back(seeds.Next());
  matched_messages_.assign(plan_.faults.size(), 0);
}

bool FaultInjector::SideOf(const Fault& partition, const TaskId& task, size_t* side) const {
  for (size_t s = 0; s < partition.sides.size(); ++s) {
    for (const TaskPattern& p : partition.sides[s]) {
      if (p.Matches(task)) {
        *side = s;
        return true;
      }
    }
  }
  return false;
}

bool FaultInjector::Partitioned(const TaskId& a, const TaskId& b, double now_s) const {
  for (const Fault& f : plan_.faults) {
    if (f.action != Fault::Action::kPartition || !f.ActiveAt(now_s)) continue;
    size_t side_a = 0;
    size_t side_b = 0;
    if (SideOf(f, a, &side_a) && SideOf(f, b, &side_b) && side_a != side_b) return true;
  }
  return false;
}

DeliveryDecision FaultInjector::Decide(const SimMessage& message, double now_s) {
  DeliveryDecision decision;
  if (message.from == message.to) return decision;
  decision.delay_us = link_.TransferMicros(message.bytes);
  if (link_.jitter_us > 0) decision.delay_us += network_random_.Uniform() * link_.jitter_us;
  for (size_t i = 0; i < plan_.faults.size(); ++i) {
    const Fault& f = plan_.faults[i];
    const auto name = [&] { return std::string(ActionName(f.action)) + " faults[" + std::to_string(i) + "]"; };
    if (f.action == Fault::Action::kPartition) {
      size_t side_from = 0;
      size_t side_to = 0;
      if (f.ActiveAt(now_s) && SideOf(f, message.from, &side_from) &&
          SideOf(f, message.to, &side_to) && side_from != side_to) {
        decision.dropped = true;
        decision.reason = name();
        return decision;
      }
      continue;
    }
    if (f.action == Fault::Action::kKill || f.action == Fault::Action::kRestart) continue;
    if (!f.ActiveAt(now_s) || !f.match.Matches(message.from, message.to, message.kind)) continue;
    // The draw is taken for every matching message, acted on or not, so that a
    // fault's decisions depend only on how many messages it matched.
    const double draw = fault_random_[i].Uniform();
    bool acts = draw < f.probability;
    if (f.every > 0) acts = ++matched_messages_[i] % f.every == 0;
    if (!acts) continue;
    switch (f.action) {
      case Fault::Action::kDrop:
        decision.dropped = true;
        decision.reason = name();
        return decision;
      case Fault::Action::kDelay:
        decision.delay_us += f.delay_ms * 1000.0 +
                             (f.jitter_ms > 0 ? fault_random_[i].Uniform() * f.jitter_ms * 1000.0 : 0);
        break;
      case Fault::Action::kDuplicate:
        decision.copies = 2;
        break;
      case Fault::Action::kReorder:
        // Up to ten link latencies: the messages sent after it on the link overtake it.
        decision.delay_us += fault_random_[i].Uniform() * 10.0 * std::max(link_.latency_us, 1.0);
        decision.reordered = true;
        break;
      default:
        break;
    }
    decision.reason += (decision.reason.empty() ? "" : ", ") + name();
  }
  return decision;
}

std::vector<const Fault*> FaultInjector::TaskEventsAtStep(int64_t step) const {
  std::vector<const Fault*> due;
  for (const Fault& f : plan_.faults) {
    const bool task_event = f.action == Fault::Action::kKill || f.action == Fault::Action::kRestart;
    if (task_event && f.at_step == step) due.push_back(&f);
  }
  return due;
}

std::vector<const Fault*> FaultInjector::TaskEventsBetween(double before_s, double now_s) const {
  std::vector<const Fault*> due;
  for (const Fault& f : plan_.faults) {
    const bool task_event = f.action == Fault::Action::kKill || f.action == Fault::Action::kRestart;
    if (task_event && f.at_s >= 0 && f.at_s > before_s && f.at_s <= now_s) due.push_back(&f);
  }
  return due;
}

}  // namespace actorflow
