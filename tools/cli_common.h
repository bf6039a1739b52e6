// Pieces shared by the subcommands of the `actorflow` command line: exit codes,
// the one-line error report, path resolution, and the shape of a subcommand.
//
// A subcommand lives in tools/<name>_command.{h,cc} and exposes
// `Subcommand Add<Name>Subcommand(CLI::App* parent)`, which declares its options on
// a new CLI11 subcommand and returns the function that runs it once the command line
// has parsed. tools/actorflow.cc lists them.
//
// Exit codes: 0 success, 1 a runtime error (the graph, a feed that does not fit, a
// failed step), 2 a usage error (arguments that cannot be understood without
// looking at the graph).
#ifndef ACTORFLOW_TOOLS_CLI_COMMON_H_
#define ACTORFLOW_TOOLS_CLI_COMMON_H_

#include <functional>
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "graph/status.h"

namespace actorflow {
namespace cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntimeError = 1;
inline constexpr int kExitUsageError = 2;

// A subcommand as registered on the top-level app: `app` is the CLI11 subcommand
// (owned by its parent) and `main` runs it, returning the process exit code. `main`
// may only be called after the parent app parsed the command line.
struct Subcommand {
  CLI::App* app = nullptr;
  std::function<int()> main;
};

// Resolves a path given on the command line. A relative path is taken relative to
// $BUILD_WORKING_DIRECTORY when that is set (`bazel run` changes the working
// directory to the runfiles tree and records the user's in that variable);
// otherwise the path is returned unchanged.
std::string ResolveUserPath(const std::string& path);

// Writes "actorflow: <status.ToString()>" as exactly one line: newlines inside the
// message become spaces so that the report stays one line.
void PrintError(std::ostream& err, const Status& status);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_CLI_COMMON_H_
