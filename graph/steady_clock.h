// The monotonic clock behind durations and step traces. One definition, so that the
// times a device's executor stamps on its stats and the time the device reports
// for the master's clock-offset estimate (actors/runtime/master_actor.cc) are on one clock.
#ifndef ACTORFLOW_GRAPH_STEADY_CLOCK_H_
#define ACTORFLOW_GRAPH_STEADY_CLOCK_H_

#include <chrono>
#include <cstdint>

namespace actorflow {

// Microseconds on std::chrono::steady_clock (an arbitrary origin, the same for every
// thread of the process).
inline int64_t SteadyMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Seconds from `start` until now.
inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_STEADY_CLOCK_H_
