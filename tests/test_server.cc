// `test_server`: exactly `actorflow server` (same options, same ready line, same
// shutdown), built with the test-only ops as well (kernels/test_ops.cc: TestDelay,
// TestBarrier, TestNotify; tests/fifo_signal_op.cc: TestSignalFifo;
// tests/throwing_op.cc: TestThrow), so that end-to-end cluster tests can run steps
// that wait on purpose, or whose kernels throw, inside a real server process.
//
//   test_server server --cluster FILE --job NAME --task I [--devices cpu=N]
#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "tools/cli/cli_common.h"
#include "tools/server_command.h"

int main(int argc, char** argv) {
  using namespace actorflow::cli;
  try {
    CLI::App app{"actorflow server with the test-only ops"};
    app.require_subcommand(1);
    Subcommand server = AddServerSubcommand(&app);
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      if (e.get_exit_code() == 0) return app.exit(e);
      PrintError(std::cerr, actorflow::InvalidArgument(e.what()));
      return kExitUsageError;
    }
    return server.main();
  } catch (const std::exception& e) {
    PrintError(std::cerr, actorflow::Internal(std::string("unexpected exception: ") + e.what()));
    return kExitRuntimeError;
  }
}
