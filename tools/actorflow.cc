// The `actorflow` command line. Each subcommand lives in tools/<name>_command.cc and
// is listed in MakeSubcommands below; this file only dispatches.
#include <exception>
#include <iostream>
#include <vector>

#include <CLI/CLI.hpp>

#include "graph/status.h"
#include "tools/cli_common.h"
#include "tools/predict_command.h"
#include "tools/run_command.h"
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
    PrintError(std::cerr, InvalidArgument(std::string(e.what()) +
                                          " (run 'actorflow --help' for usage)"));
    return kExitUsageError;
  }
  for (const Subcommand& sub : subcommands) {
    if (sub.app->parsed()) return sub.main();
  }
  PrintError(std::cerr, InvalidArgument("no subcommand given"));
  return kExitUsageError;
}

}  // namespace
}  // namespace cli
}  // namespace actorflow

int main(int argc, char** argv) {
  try {
    return actorflow::cli::Main(argc, argv);
  } catch (const std::exception& e) {
    actorflow::cli::PrintError(
        std::cerr, actorflow::Internal(std::string("unexpected exception: ") + e.what()));
    return actorflow::cli::kExitRuntimeError;
  }
}
