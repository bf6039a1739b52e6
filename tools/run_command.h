// `actorflow run`: loads a graph JSON file, runs it once through the actor runtime
// (or a remote master) and prints the fetched tensors.
//
//   actorflow run --graph FILE.json --fetch NAME[,NAME...] [--feed NAME=JSON]...
//                 [--before TARGET]... [--json] [--timeout-ms N]
//                 [--devices cpu=N[,gpu=M]] [--soft-placement] [--log-placement]
//                 [--trace OUT.json] [--target actorflow://HOST:PORT]
//
// - Nodes' "device" fields are honoured; --devices sets the local task's devices
//   (SessionOptions.device_count), --soft-placement and --log-placement the
//   placement options, --trace writes the fetch step's Chrome trace (one track per
//   device), --target runs on a remote master instead of in this process.
// - Each `--before TARGET` runs as its own step (targets = {TARGET}), in the order
//   given, before the fetch step: that is how variables get initialized. TARGET is
//   any node, with or without outputs ("init:0" means the node "init").
// - A --fetch NAME that is a node without outputs (a NoOp, a group of updates) and is
//   given without ":k" runs as a target of the fetch step, since it has nothing to
//   fetch: it prints `NAME: ran (no outputs)`, and null in the JSON "fetches".
// - A --fetch, --before or --feed name that is no node of the graph is an error that
//   proposes the near node names ("did you mean 'loss'?").
// - A feed's JSON is a number or nested lists; numbers convert to the fed output's
//   dtype, and the value's shape must be one the output's inferred shape admits.
//   NAME is "node" or "node:k"; any node's output may be fed, not only placeholders.
// - Without --json, one line per fetch: `sum = float32[2] [3, 7]`. With --json,
//   exactly one line of compact JSON:
//     {"fetches": {"NAME": {"dtype": ..., "shape": [...], "data": [...]}},
//      "executed": ["node", ...]}
//   where NAME is the fetch as given (its value null for a node run as a target) and
//   "executed" lists the nodes the fetch step ran (RunMetadata::executed_nodes).
// - `--timeout-ms N` (default 30000) is every step's RunOptions::timeout_in_ms.
//
// Errors are reported as one line `actorflow: <Status>` naming the culprit; see
// cli_common.h for the exit codes.
#ifndef ACTORFLOW_TOOLS_RUN_COMMAND_H_
#define ACTORFLOW_TOOLS_RUN_COMMAND_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "graph/status.h"
#include "tools/cli/cli_common.h"

namespace actorflow {
namespace cli {

struct RunCommandOptions {
  // The graph JSON file; relative paths go through ResolveUserPath.
  std::string graph_path;
  // Tensor names to fetch ("node" or "node:k"), in output order; a node without
  // outputs runs as a target. At least one.
  std::vector<std::string> fetches;
  // "NAME=JSON" as written on the command line.
  std::vector<std::string> feeds;
  // Nodes run one step each, in order, before the fetch step.
  std::vector<std::string> before;
  // Print one line of JSON instead of the human-readable lines.
  bool json = false;
  // RunOptions::timeout_in_ms of every step; 0 = no deadline.
  int64_t timeout_ms = 30000;
  // "cpu=N[,gpu=M]" (ParseDeviceCounts); empty = one CPU.
  std::string devices;
  bool soft_placement = false;
  bool log_placement = false;
  // Chrome trace file for the fetch step; empty = none.
  std::string trace_path;
  // "" = this process; "actorflow://host:port" = a remote master.
  std::string target;
};

// Runs the command: results go to `out`, an error line to `err`. Returns the exit
// code (kExitOk, kExitRuntimeError or kExitUsageError). Never throws.
int RunGraphCommand(const RunCommandOptions& options, std::ostream& out, std::ostream& err);

// Declares `run` and its options on `parent`; the returned main calls
// RunGraphCommand with the parsed options on std::cout / std::cerr.
Subcommand AddRunSubcommand(CLI::App* parent);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_RUN_COMMAND_H_
