// Where the time of a step goes, from traced runs (RunOptions::TraceLevel::kFullTrace):
// node time summed per op type, and the rest of the step's wall time, which is the
// runtime's own cost (planning lookup, scheduling, messages, waking threads) when the
// nodes of a step run one after another, as they do on one device.
//
// Thread safety: a StepProfile belongs to one thread.
#ifndef ACTORFLOW_TOOLS_BENCH_STEP_PROFILE_H_
#define ACTORFLOW_TOOLS_BENCH_STEP_PROFILE_H_

#include <cstdint>
#include <map>
#include <string>

#include "kernels/session.h"

namespace actorflow {
namespace bench {

class StepProfile {
 public:
  // Adds one traced step that took `wall_us` in Session::Run.
  void Add(const RunMetadata& metadata, double wall_us);

  int steps() const { return steps_; }
  double wall_us_per_step() const { return steps_ ? wall_us_ / steps_ : 0; }
  double node_us_per_step() const;
  // From the first node's start to the last node's end: the time inside executors.
  double span_us_per_step() const { return steps_ ? span_us_ / steps_ : 0; }
  int64_t nodes_per_step() const { return steps_ ? nodes_ / steps_ : 0; }
  // "  op  calls/step  us/step  share" lines, the most expensive op first; `top`
  // lines at most, the rest summed in one line; then the time between nodes (the
  // executor's own) and outside the span (Session::Run, messages, wake-ups).
  std::string Table(int top) const;

 private:
  struct OpTime {
    int64_t calls = 0;
    double us = 0;
  };
  std::map<std::string, OpTime> ops_;
  int steps_ = 0;
  int64_t nodes_ = 0;
  double wall_us_ = 0;
  double span_us_ = 0;
};

}  // namespace bench
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_BENCH_STEP_PROFILE_H_
