// `actorflow graph`: draws a graph JSON file (graph/graph_json.h) with Graphviz,
// before placement or as placed on the local devices.
//
//   actorflow graph --graph G.json --format dot|svg [--out FILE]
//                   [--devices cpu=N[,gpu=M]] [--placed] [--soft-placement]
//
// - DOT (placement/graph_dot.h): a box per node with its name, op and the dtype and
//   inferred shape of each output; solid data edges labelled with what they carry,
//   dashed control edges.
// - --placed: the graph placed and partitioned as `actorflow run` would for a step
//   that runs every node (the same --devices and --soft-placement), one cluster per
//   device with the _Send/_Recv nodes the partitioner adds, and the Send -> Recv
//   edges between clusters in bold red. As in `run`, gpu=M is capped at the GPUs
//   this process finds (a note on stderr says so).
// - --format svg runs Graphviz's `dot -Tsvg` (found on PATH) on the DOT text; without
//   it the command fails saying to install Graphviz. --format dot needs nothing.
// - Without --out the text goes to stdout; with --out it goes to FILE and stdout gets
//   one line, "wrote FILE: N nodes" (", on D devices" when placed).
//
// Errors are one line `actorflow: <Status>` on stderr naming the culprit (the file
// with line and column for malformed JSON, the node for a device that cannot be
// had); see cli_common.h for the exit codes.
#ifndef ACTORFLOW_TOOLS_GRAPH_COMMAND_H_
#define ACTORFLOW_TOOLS_GRAPH_COMMAND_H_

#include <ostream>
#include <string>

#include "graph/status.h"
#include "tools/cli/cli_common.h"

namespace actorflow {
namespace cli {

struct GraphCommandOptions {
  // Relative paths go through ResolveUserPath.
  std::string graph_path;
  std::string format = "dot";  // "dot" or "svg"
  std::string out_path;        // empty = stdout
  std::string devices;         // "cpu=N[,gpu=M]" (ParseDeviceCounts); only with placed
  bool placed = false;
  bool soft_placement = false;  // only with placed
};

// The path of the executable `name` in the directories of `path_list` (PATH's
// syntax: separated by ':', an empty entry is the current directory); "" if none.
std::string FindExecutableOnPath(const std::string& name, const std::string& path_list);

// `dot_text` rendered by the Graphviz executable `dot_program` as SVG. Internal
// naming the program and quoting its stderr when it fails.
StatusOr<std::string> RenderDotAsSvg(const std::string& dot_program, const std::string& dot_text);

// Runs the command: the drawing (or the "wrote" line) goes to `out`, notes and the
// error line to `err`. Returns the exit code. Never throws.
int GraphCommand(const GraphCommandOptions& options, std::ostream& out, std::ostream& err);

// Declares `graph` on `parent`; the returned main runs GraphCommand on std::cout /
// std::cerr.
Subcommand AddGraphSubcommand(CLI::App* parent);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_GRAPH_COMMAND_H_
