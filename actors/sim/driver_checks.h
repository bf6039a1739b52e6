// What SimulatedCluster::RunDrivers checks of its drivers' steps (the invariants a
// user's driver runs under on a simulated cluster, as the built-in data-parallel run
// has its own, actors/sim/sim_training.h):
//   steps_end_by_deadline  every Session::Run with a deadline (RunOptions::
//                          timeout_in_ms, or the session's default) ended, answered
//                          or failed, by that deadline plus the links' worst round
//                          trips for its bytes (the client's to the master and the
//                          master's to the step's partitions).
//   global_step_monotone   the global step (the graph's kGlobalStepCollection
//                          variable) as the drivers of one task read it never went
//                          back, across the task's kills and restarts: a restarted
//                          chief must not reset live variables.
// CAF-free. Thread safety: none; the drivers call it in turns (one at a time).
#ifndef ACTORFLOW_ACTORS_SIM_DRIVER_CHECKS_H_
#define ACTORFLOW_ACTORS_SIM_DRIVER_CHECKS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "actors/sim/sim_training.h"

namespace actorflow {

class DriverStepChecks {
 public:
  // `worst_round_trip_us(bytes)`: the most virtual time a step's messages of `bytes`
  // bytes (feeds and fetches) can spend on the links beyond its deadline.
  explicit DriverStepChecks(std::function<double(int64_t bytes)> worst_round_trip_us);

  // A step of `task` ran from `started_s` to `ended_s` (virtual) with a deadline of
  // `timeout_ms` (0: none), moving `bytes`.
  void Step(const std::string& task, double started_s, double ended_s, int64_t timeout_ms,
            int64_t bytes);
  // A step of `task` read the global step `value` at `at_s`.
  void GlobalStep(const std::string& task, int64_t value, double at_s);

  int64_t steps() const { return steps_; }
  int64_t global_step_reads() const { return global_step_reads_; }
  // The invariants above, in that order, with their violations.
  std::vector<SimInvariantResult> Results() const;

 private:
  std::function<double(int64_t)> worst_round_trip_us_;
  int64_t steps_ = 0;
  int64_t global_step_reads_ = 0;
  std::vector<std::string> late_steps_;
  std::map<std::string, int64_t> last_global_step_;  // by task
  std::vector<std::string> regressions_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SIM_DRIVER_CHECKS_H_
