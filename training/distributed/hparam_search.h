// Grid search over hyperparameters, one trial per worker slot at a time: the
// grid grammar, its expansion into configurations, and a scheduler that hands each
// configuration to whichever slot (a device or a task) is free.
//
// Grammar: parameters are separated by ';', a parameter's alternatives by '|'; a
// value may contain commas. "lr=0.01|0.1;hidden=10,10|32" is 2 x 2 = 4
// configurations: {lr=0.01, hidden=10,10}, {lr=0.01, hidden=32}, {lr=0.1,
// hidden=10,10}, {lr=0.1, hidden=32} (the first parameter varies slowest). Spaces
// around names and values are ignored.
//
// Thread safety: ParseGrid/ExpandGrid are reentrant. RunGridSearch calls `trial`
// from `slots` threads at once, each call with its own slot index.
#ifndef ACTORFLOW_TRAINING_DISTRIBUTED_HPARAM_SEARCH_H_
#define ACTORFLOW_TRAINING_DISTRIBUTED_HPARAM_SEARCH_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "graph/status.h"

namespace actorflow {

struct GridParam {
  std::string name;
  std::vector<std::string> values;  // alternatives, in the order written
};

// One configuration: (name, value) in the grid's parameter order.
using GridConfig = std::vector<std::pair<std::string, std::string>>;

// InvalidArgument quoting the offending part for an empty grid, a parameter
// without '=' or a name, an empty alternative, or a parameter given twice.
StatusOr<std::vector<GridParam>> ParseGrid(const std::string& grid);
std::vector<GridConfig> ExpandGrid(const std::vector<GridParam>& params);
// "lr=0.01 hidden=10,10"
std::string ConfigString(const GridConfig& config);

struct TrialResult {
  GridConfig params;
  Status status;          // of the trial; accuracy and seconds are set when OK
  double accuracy = 0.0;  // test accuracy
  double seconds = 0.0;   // wall time of the trial
  int slot = -1;          // the slot that ran it
};

// Runs `trial(index, config, slot)` for every configuration (configs[index]) with
// `slots` (>= 1) threads; a free slot takes the next configuration in order. The
// results are in configuration order, each with the status `trial` returned.
using TrialFn = std::function<StatusOr<double>(size_t index, const GridConfig& config, int slot)>;
std::vector<TrialResult> RunGridSearch(const std::vector<GridConfig>& configs, int slots,
                                       const TrialFn& trial);

// The index of the most accurate successful result (the first on ties); -1 if none
// succeeded.
int BestResult(const std::vector<TrialResult>& results);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DISTRIBUTED_HPARAM_SEARCH_H_
