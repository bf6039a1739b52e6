#include "tools/bench/bench_util.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace actorflow {
namespace bench {

Stats Summarize(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  Stats s;
  s.count = static_cast<int>(samples.size());
  s.min = samples.front();
  s.max = samples.back();
  const size_t mid = samples.size() / 2;
  s.median = samples.size() % 2 ? samples[mid] : 0.5 * (samples[mid - 1] + samples[mid]);
  return s;
}

nlohmann::json StatsJson(const Stats& s) {
  return {{"min", s.min}, {"median", s.median}, {"max", s.max}, {"n", s.count}};
}

std::string Triple(const Stats& s, const char* fmt) {
  char buf[128];
  const std::string f = std::string(fmt) + " / " + fmt + " / " + fmt;
  std::snprintf(buf, sizeof(buf), f.c_str(), s.min, s.median, s.max);
  return buf;
}

void Die(const std::string& program, const std::string& what, const Status& status) {
  std::fprintf(stderr, "%s: %s: %s\n", program.c_str(), what.c_str(), status.ToString().c_str());
  std::exit(1);
}

double MachineBusySeconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  // user nice system idle iowait irq softirq steal
  long long v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (!(in >> cpu)) return 0;
  for (long long& x : v) in >> x;
  static const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  return static_cast<double>(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / hz;
}

double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

LoadWindow::LoadWindow()
    : start_(Clock::now()), busy0_(MachineBusySeconds()), own0_(ProcessCpuSeconds()) {}

double LoadWindow::Stop() {
  wall_s_ = SecondsSince(start_);
  const double busy = MachineBusySeconds() - busy0_;
  const double own = ProcessCpuSeconds() - own0_;
  // /proc/stat counts in clock ticks (10 ms): short windows are coarse, never negative.
  return std::max(0.0, (busy - own) / std::max(wall_s_, 1e-6));
}

Measured MeasureRetaking(const std::function<double()>& fn, double threshold, int tries) {
  Measured best;
  for (int k = 1; k <= std::max(1, tries); ++k) {
    LoadWindow window;
    const double value = fn();
    const double foreign = window.Stop();
    if (k == 1 || foreign < best.foreign) {
      best.value = value;
      best.foreign = foreign;
    }
    best.attempts = k;
    if (foreign <= threshold) break;
  }
  return best;
}

double WaitQuiet(double threshold, double settle_s, double max_wait_s) {
  const Clock::time_point start = Clock::now();
  double quiet = 0;
  while (SecondsSince(start) < max_wait_s) {
    LoadWindow window;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    const double foreign = window.Stop();
    quiet = foreign < threshold ? quiet + 0.25 : 0.0;
    if (quiet >= settle_s) break;
  }
  return SecondsSince(start);
}

double LoadAverage1() {
  std::ifstream in("/proc/loadavg");
  double load = -1;
  if (!(in >> load)) return -1;
  return load;
}

NodeDef MakeNode(std::string name, std::string op, std::vector<std::string> inputs,
                 AttrMap attrs) {
  NodeDef def;
  def.name = std::move(name);
  def.op = std::move(op);
  def.inputs = std::move(inputs);
  def.attrs = std::move(attrs);
  return def;
}

}  // namespace bench
}  // namespace actorflow
