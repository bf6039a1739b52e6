#include "actors/sim/driver_checks.h"

#include <utility>

namespace actorflow {

DriverStepChecks::DriverStepChecks(std::function<double(int64_t bytes)> worst_round_trip_us)
    : worst_round_trip_us_(std::move(worst_round_trip_us)) {}

void DriverStepChecks::Step(const std::string& task, double started_s, double ended_s,
                            int64_t timeout_ms, int64_t bytes) {
  ++steps_;
  if (timeout_ms <= 0) return;
  const double elapsed_us = (ended_s - started_s) * 1e6;
  const double bound_us = timeout_ms * 1000.0 + worst_round_trip_us_(bytes);
  if (elapsed_us > bound_us + 1) {  // 1 us: the clock's rounding
    late_steps_.push_back(task + ": a step with a deadline of " + std::to_string(timeout_ms) +
                          " ms started at virtual second " + std::to_string(started_s) +
                          " and ended after " + std::to_string(elapsed_us) + " us, bound " +
                          std::to_string(bound_us) + " us");
  }
}

void DriverStepChecks::GlobalStep(const std::string& task, int64_t value, double at_s) {
  ++global_step_reads_;
  auto [it, first] = last_global_step_.emplace(task, value);
  if (first) return;
  if (value < it->second) {
    regressions_.push_back(task + " read the global step go from " + std::to_string(it->second) +
                           " to " + std::to_string(value) + " at virtual second " +
                           std::to_string(at_s));
  }
  it->second = value;
}

std::vector<SimInvariantResult> DriverStepChecks::Results() const {
  return {SimInvariantResult{"steps_end_by_deadline", late_steps_},
          SimInvariantResult{"global_step_monotone", regressions_}};
}

}  // namespace actorflow
