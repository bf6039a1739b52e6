// The `actorflow` command line. Each subcommand lives in tools/<name>_command.cc and
// is listed in MakeSubcommands below; this file only dispatches.
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "graph/status.h"
#include "tools/cli_common.h"
#include "tools/graph_command.h"
#include "tools/launch_command.h"
#include "tools/plot_command.h"
#include "tools/predict_command.h"
#include "tools/run_command.h"
#include "tools/serve_command.h"
#include "tools/server_command.h"
#include "tools/train_command.h"
#include "tools/tune_command.h"

namespace actorflow {
namespace cli {
namespace {

std::vector<Subcommand> MakeSubcommands(CLI::App* app) {
  return {
      AddRunSubcommand(app),
      AddServerSubcommand(app),
      AddTrainSubcommand(app),
      AddPredictSubcommand(app),
      AddTuneSubcommand(app),
      AddLaunchSubcommand(app),
      AddPlotSubcommand(app),
      AddGraphSubcommand(app),
      AddServeSubcommand(app),
      AddExportSubcommand(app),
  };
}

int Main(int argc, char** argv) {
  CLI::App app{"actorflow: dataflow graphs run by actors"};
  app.require_subcommand(1);
  std::vector<Subcommand> subcommands = MakeSubcommands(&app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0 with CLI11's own output; any other parse error is
    // a usage error reported like every other error.
    if (e.get_exit_code() == 0) return app.exit(e);
    const std::vector<std::string> args(argv + 1, argv + argc);
    return ReportError(std::cerr, DescribeParseError(subcommands, args, e.what()),
                       kExitUsageError);
  }
  for (const Subcommand& sub : subcommands) {
    if (sub.app->parsed()) return sub.main();
  }
  return ReportError(std::cerr, DescribeParseError(subcommands, {}, ""), kExitUsageError);
}

}  // namespace
}  // namespace cli
}  // namespace actorflow

int main(int argc, char** argv) {
  return actorflow::cli::CatchExceptions(std::cerr,
                                         [&]() { return actorflow::cli::Main(argc, argv); });
}
