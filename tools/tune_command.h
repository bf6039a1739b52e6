// `actorflow tune`: a hyperparameter grid search with one network per device or
// task, trained in parallel (training/distributed/hparam_search.h has the grid grammar).
//
//   actorflow tune --cluster local:worker=W --grid 'lr=0.01|0.1;hidden=10,10|32'
//                  [the model and data flags of `actorflow train`] [--json]
//
// - --cluster local:worker=W starts W worker tasks in this process (a LocalCluster:
//   real servers on 127.0.0.1); a cluster spec FILE uses the tasks of its "worker"
//   job. Each configuration trains a DNNClassifier whose session runs on one worker
//   task (its master and every node there); the configurations are queued to
//   whichever worker is free, W at a time. A worker's variables are cleared (its
//   containers reset) before each configuration it trains.
// - --grid: parameters separated by ';', a parameter's alternatives by '|'; a value
//   may contain commas (hidden=10,10 is two layers of 10). Parameters: the `actorflow
//   train` options lr, hidden, optimizer, batch, steps, epochs, seed, normalize and
//   classes. The other train flags (--train, --test, --label, ...) apply to every
//   configuration; data and model default to train's (Iris, a DNN [10, 10]).
// - Output: a line per finished configuration, then a table of all of them (one row
//   each: its parameters, test accuracy, seconds and task) and the best
//   configuration (the most accurate; the first on ties). With --json those go to
//   stderr and stdout is exactly one line, {"results": [{"params": {"lr": "0.01",
//   ...}, "accuracy": 0.97, "seconds": 1.2, "task": "/job:worker/task:0"}, ...],
//   "best": {...}}.
// - Exit codes (cli_common.h): 2 for a grid that does not parse, an unknown
//   parameter or a bad value (before anything trains), 1 when a configuration
//   failed (the table still shows the others, the failed ones with their error).
#ifndef ACTORFLOW_TOOLS_TUNE_COMMAND_H_
#define ACTORFLOW_TOOLS_TUNE_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

#include "graph/status.h"
#include "tools/cli/cli_common.h"
#include "tools/train/train_command.h"
#include "training/distributed/hparam_search.h"

namespace actorflow {
namespace cli {

struct TuneCommandOptions {
  std::string cluster = "local:worker=1";
  std::string grid;
  // The base of every configuration: train's flags (its json flag is ignored).
  TrainCommandOptions train;
  bool json = false;
};

struct TuneReport {
  std::vector<TrialResult> results;  // in grid order; TrialResult::slot indexes tasks
  std::vector<std::string> tasks;    // "/job:worker/task:I" per slot
  int best = -1;                     // index into results; -1 when every one failed
  double seconds = 0.0;              // wall time of the whole search
};

// The C++ API of the command: checks the grid and every configuration, starts or
// reaches the cluster, trains, and returns every result. `progress` (may be null)
// gets a line per finished configuration. Errors: InvalidArgument for a bad grid,
// parameter or value (naming it) or cluster flag; the data's and the cluster's
// errors. A failed configuration is a result with its status, not an error.
// With a local cluster, leaves OpenBLAS at one thread for the rest of the process
// (tools/cli/blas_core.h: its configurations compute on this process's cores).
StatusOr<TuneReport> RunTune(const TuneCommandOptions& options, std::ostream* progress);

// The table and the best configuration, as the command prints them.
void PrintTuneTable(const TuneReport& report, std::ostream& out);
// The --json line (without the newline).
std::string TuneReportJson(const TuneReport& report);

// Runs the command: the lines and the table go to `out` (to `err` under --json, when
// `out` gets the JSON line alone), an error line to `err`. Returns the exit code.
int TuneCommand(const TuneCommandOptions& options, std::ostream& out, std::ostream& err);
Subcommand AddTuneSubcommand(CLI::App* parent);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TUNE_COMMAND_H_
