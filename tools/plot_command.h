// `actorflow plot`: draws the scalar curves of a TensorBoard log directory (what
// `actorflow train --logdir DIR` writes) as one SVG picture, without TensorBoard.
//
//   actorflow plot --logdir DIR --out curves.svg [--tags loss,accuracy]
//
// - Every event file under DIR is read (training/summary/event_file_reader.h); each
//   directory holding event files is a run (DIR/worker_0, DIR/worker_1, ...).
// - One panel per tag, x = step, y = value, one curve per run in a colour that the
//   run keeps in every panel, with a legend naming the runs (tools/svg_plot.h). A
//   run that logged a tag once (accuracy at the end) is a marker.
// - Tags: --tags in the order given, else every scalar tag found with "loss" and
//   "accuracy" first and the others in name order.
// - Prints one line: "wrote curves.svg: 2 runs (worker_0, worker_1), 4 panels (loss,
//   accuracy, ...)". An event file cut short (a run still writing) is a warning line
//   on stderr; its complete records are drawn.
//
// Errors, one line `actorflow: <Status>` on stderr and a non-zero exit: DIR missing
// or without event files (naming DIR), a damaged event file (naming it and the
// offset), a --tags entry that no run logged (listing the tags there are), an --out
// file that cannot be written (naming it).
#ifndef ACTORFLOW_TOOLS_PLOT_COMMAND_H_
#define ACTORFLOW_TOOLS_PLOT_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

#include "tools/cli/cli_common.h"

namespace actorflow {
namespace cli {

struct PlotCommandOptions {
  // Relative paths go through ResolveUserPath.
  std::string logdir;
  std::string out_path;
  // Empty: every scalar tag found.
  std::vector<std::string> tags;
};

// Runs the command: the summary line goes to `out`, warnings and the error line to
// `err`. Returns the exit code. Never throws.
int PlotCommand(const PlotCommandOptions& options, std::ostream& out, std::ostream& err);

// Declares `plot` on `parent`; the returned main runs PlotCommand on std::cout /
// std::cerr.
Subcommand AddPlotSubcommand(CLI::App* parent);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_PLOT_COMMAND_H_
