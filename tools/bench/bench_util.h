// Helpers shared by the benchmark binaries of tools/bench/: timing, min/median/max
// summaries, and the "foreign" CPU load of a timed window, so that a sample taken
// while other processes ran can be retaken and the noise shows in the output.
//
// Foreign load (in cores) = (busy time of the whole machine from /proc/stat - this
// process's CPU time, every thread) / wall time. 0 = nobody else ran; 1 = one core
// was taken by someone else. The same measure as the peers' peerutil.py, so that
// figures are comparable.
//
// Thread safety: free functions are thread-compatible; a LoadWindow belongs to one
// thread.
#ifndef ACTORFLOW_TOOLS_BENCH_BENCH_UTIL_H_
#define ACTORFLOW_TOOLS_BENCH_BENCH_UTIL_H_

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/graph.h"
#include "graph/status.h"

namespace actorflow {
namespace bench {

using Clock = std::chrono::steady_clock;

inline double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Stats {
  double min = 0, median = 0, max = 0;  // in the unit of the samples
  int count = 0;
};

// Precondition: !samples.empty().
Stats Summarize(std::vector<double> samples);

// One node of a benchmark's graph.
NodeDef MakeNode(std::string name, std::string op, std::vector<std::string> inputs,
                 AttrMap attrs);
nlohmann::json StatsJson(const Stats& s);
// "min / median / max" with printf format `fmt` for each.
std::string Triple(const Stats& s, const char* fmt);

// Exits the benchmark with a message: a failure here means the build is broken.
[[noreturn]] void Die(const std::string& program, const std::string& what,
                      const Status& status);

template <typename T>
T ValueOrDie(StatusOr<T> value, const std::string& program, const std::string& what) {
  if (!value.ok()) Die(program, what, value.status());
  return std::move(value).value();
}

// Busy seconds of the whole machine (all cores) since boot, from /proc/stat.
double MachineBusySeconds();
// CPU seconds used by this process (all threads).
double ProcessCpuSeconds();

// Times a region: wall seconds, own CPU seconds and machine busy seconds.
class LoadWindow {
 public:
  LoadWindow();
  // Ends the window; returns the foreign load in cores.
  double Stop();
  double wall_s() const { return wall_s_; }

 private:
  Clock::time_point start_;
  double busy0_, own0_;
  double wall_s_ = 0;
};

struct Measured {
  double value = 0;    // what fn returned on the kept attempt
  double foreign = 0;  // foreign load (cores) during that attempt
  int attempts = 0;
};

// Runs fn() (returns a rate or a time) inside a LoadWindow; retakes it while the
// foreign load exceeded `threshold` cores, at most `tries` attempts in all, and keeps
// the attempt with the least foreign load.
Measured MeasureRetaking(const std::function<double()>& fn, double threshold, int tries);

// Waits (at most max_wait_s) until the foreign load stayed below `threshold` for
// `settle_s` seconds, sampling every 0.25 s. Returns the seconds waited.
double WaitQuiet(double threshold, double settle_s, double max_wait_s);

// The 1-minute load average from /proc/loadavg (-1 if unreadable).
double LoadAverage1();

}  // namespace bench
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_BENCH_BENCH_UTIL_H_
