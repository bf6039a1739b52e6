#include "tools/bench/step_profile.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace actorflow {
namespace bench {

void StepProfile::Add(const RunMetadata& metadata, double wall_us) {
  ++steps_;
  wall_us_ += wall_us;
  int64_t first = 0, last = 0;
  for (size_t i = 0; i < metadata.step_stats.size(); ++i) {
    const NodeExecStats& s = metadata.step_stats[i];
    if (i == 0 || s.start_micros < first) first = s.start_micros;
    if (i == 0 || s.end_micros > last) last = s.end_micros;
  }
  span_us_ += static_cast<double>(last - first);
  for (const NodeExecStats& s : metadata.step_stats) {
    OpTime& t = ops_[s.op];
    ++t.calls;
    t.us += static_cast<double>(s.end_micros - s.start_micros);
    ++nodes_;
  }
}

double StepProfile::node_us_per_step() const {
  double total = 0;
  for (const auto& [op, t] : ops_) total += t.us;
  return steps_ ? total / steps_ : 0;
}

std::string StepProfile::Table(int top) const {
  std::vector<std::pair<std::string, OpTime>> sorted(ops_.begin(), ops_.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second.us > b.second.us; });
  const double wall = std::max(wall_us_, 1e-9);
  std::string out;
  char line[160];
  OpTime rest;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const OpTime& t = sorted[i].second;
    if (static_cast<int>(i) >= top) {
      rest.calls += t.calls;
      rest.us += t.us;
      continue;
    }
    std::snprintf(line, sizeof(line), "    %-36s %6.1f calls %9.1f us %5.1f%%\n",
                  sorted[i].first.c_str(), static_cast<double>(t.calls) / steps_,
                  t.us / steps_, 100.0 * t.us / wall);
    out += line;
  }
  if (rest.calls > 0) {
    std::snprintf(line, sizeof(line), "    %-36s %6.1f calls %9.1f us %5.1f%%\n", "(other ops)",
                  static_cast<double>(rest.calls) / steps_, rest.us / steps_,
                  100.0 * rest.us / wall);
    out += line;
  }
  const double nodes = node_us_per_step();
  const double step = std::max(wall_us_per_step(), 1e-9);
  std::snprintf(line, sizeof(line), "    %-36s %6s       %9.1f us %5.1f%%\n",
                "(between nodes: executor)", "", span_us_per_step() - nodes,
                100.0 * (span_us_per_step() - nodes) / step);
  out += line;
  std::snprintf(line, sizeof(line), "    %-36s %6s       %9.1f us %5.1f%%\n",
                "(outside the nodes' span: session)", "", wall_us_per_step() - span_us_per_step(),
                100.0 * (wall_us_per_step() - span_us_per_step()) / step);
  out += line;
  return out;
}

}  // namespace bench
}  // namespace actorflow
