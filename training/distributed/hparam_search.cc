#include "training/distributed/hparam_search.h"

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

namespace actorflow {
namespace {

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(sep, start);
    parts.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return parts;
}

}  // namespace

StatusOr<std::vector<GridParam>> ParseGrid(const std::string& grid) {
  const std::string usage =
      ": a grid is name=value|value;name=value|..., e.g. 'lr=0.01|0.1;hidden=10,10|32'";
  if (Trim(grid).empty()) return InvalidArgument("the grid is empty" + usage);
  std::vector<GridParam> params;
  std::set<std::string> names;
  for (const std::string& raw : Split(grid, ';')) {
    const std::string part = Trim(raw);
    if (part.empty()) continue;  // a trailing ';'
    const size_t eq = part.find('=');
    if (eq == std::string::npos) {
      return InvalidArgument("grid parameter '" + part + "' has no '='" + usage);
    }
    GridParam p;
    p.name = Trim(part.substr(0, eq));
    if (p.name.empty()) return InvalidArgument("grid parameter '" + part + "' has no name" + usage);
    if (!names.insert(p.name).second) {
      return InvalidArgument("grid parameter '" + p.name + "' is given twice: list its values "
                             "once, separated by '|'");
    }
    for (const std::string& v : Split(part.substr(eq + 1), '|')) {
      const std::string value = Trim(v);
      if (value.empty()) {
        return InvalidArgument("grid parameter '" + p.name + "' has an empty value in '" + part +
                               "'" + usage);
      }
      p.values.push_back(value);
    }
    params.push_back(std::move(p));
  }
  if (params.empty()) return InvalidArgument("the grid '" + grid + "' has no parameter" + usage);
  return params;
}

std::vector<GridConfig> ExpandGrid(const std::vector<GridParam>& params) {
  std::vector<GridConfig> configs = {GridConfig()};
  for (const GridParam& p : params) {
    std::vector<GridConfig> next;
    for (const GridConfig& prefix : configs) {
      for (const std::string& v : p.values) {
        GridConfig c = prefix;
        c.emplace_back(p.name, v);
        next.push_back(std::move(c));
      }
    }
    configs = std::move(next);
  }
  return configs;
}

std::string ConfigString(const GridConfig& config) {
  std::string out;
  for (const auto& [name, value] : config) out += (out.empty() ? "" : " ") + name + "=" + value;
  return out;
}

std::vector<TrialResult> RunGridSearch(const std::vector<GridConfig>& configs, int slots,
                                       const TrialFn& trial) {
  std::vector<TrialResult> results(configs.size());
  std::atomic<size_t> next{0};
  auto work = [&](int slot) {
    for (size_t i = next++; i < configs.size(); i = next++) {
      TrialResult& r = results[i];
      r.params = configs[i];
      r.slot = slot;
      const auto start = std::chrono::steady_clock::now();
      StatusOr<double> accuracy = trial(i, configs[i], slot);
      r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (accuracy.ok()) {
        r.accuracy = *accuracy;
      } else {
        r.status = accuracy.status();
      }
    }
  };
  std::vector<std::thread> threads;
  const int n = std::max(1, std::min<int>(slots, static_cast<int>(configs.size())));
  for (int s = 0; s < n; ++s) threads.emplace_back(work, s);
  for (std::thread& t : threads) t.join();
  return results;
}

int BestResult(const std::vector<TrialResult>& results) {
  int best = -1;
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].status.ok()) continue;
    if (best < 0 || results[i].accuracy > results[best].accuracy) best = static_cast<int>(i);
  }
  return best;
}

}  // namespace actorflow
