// Pieces shared by the subcommands of the `actorflow` command line: exit codes, the
// one-line error report and the frame that maps errors to exit codes, path
// resolution, and the flags several subcommands take with one meaning (--timeout-ms,
// --devices, --cluster).
//
// A subcommand lives in tools/<name>_command.{h,cc} and exposes
// `Subcommand Add<Name>Subcommand(CLI::App* parent)`, which declares its options on
// a new CLI11 subcommand and returns the function that runs it once the command line
// has parsed. tools/actorflow.cc lists them.
//
// Exit codes: 0 success, 1 a runtime error (the graph, a feed that does not fit, a
// failed step), 2 a usage error (arguments that cannot be understood without
// looking at the graph).
//
// Thread safety: the functions are reentrant.
#ifndef ACTORFLOW_TOOLS_CLI_CLI_COMMON_H_
#define ACTORFLOW_TOOLS_CLI_CLI_COMMON_H_

#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "graph/status.h"
#include "placement/cluster_spec.h"

// CLI11's types by name only: its header constructs its validators in every
// translation unit that includes it (about 4 s of compilation each at -O2), so only
// the files that declare flags include <CLI/CLI.hpp>.
namespace CLI {
class App;
class Option;
}  // namespace CLI

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

// The usage error for a command line that CLI11 could not parse (`cli11_message` is
// its exception's what()), phrased for the user. `args` is argv without the program
// name. Names the culprit and proposes the nearest valid name (tools/cli/did_you_mean.h):
// - no subcommand, or an unknown one: "unknown subcommand 'trian' (did you mean
//   'train'?): expected one of run, server, train, predict, tune";
// - an unknown flag of a known subcommand: "train: unknown flag --epoch (did you mean
//   --epochs?); run 'actorflow train --help' for the flags";
// - anything else: CLI11's message and where to find the usage.
Status DescribeParseError(const std::vector<Subcommand>& subcommands,
                          const std::vector<std::string>& args, const std::string& cli11_message);

// Resolves a path given on the command line. A relative path is taken relative to
// $BUILD_WORKING_DIRECTORY when that is set (`bazel run` changes the working
// directory to the runfiles tree and records the user's in that variable);
// otherwise the path is returned unchanged. "" (a flag not given) stays "".
std::string ResolveUserPath(const std::string& path);

// Writes "actorflow: <status.ToString()>" as exactly one line: newlines inside the
// message become spaces so that the report stays one line.
void PrintError(std::ostream& err, const Status& status);

// PrintError(err, status), then returns `exit_code`: how a command ends on an error.
int ReportError(std::ostream& err, const Status& status, int exit_code);

// For a foreground service (`server`, `serve`): blocks SIGTERM and SIGINT in the
// calling thread, so that every thread started afterwards (actors, HTTP) inherits
// the mask, and hands one that reaches an older thread to the calling one;
// WaitForShutdownSignal, on the same thread, then returns when one of them arrives.
void BlockShutdownSignals();
void WaitForShutdownSignal();

// Returns body()'s exit code. The libraries report errors as Status; an exception
// that escapes `body` anyway is reported as Internal "unexpected exception: ..." with
// kExitRuntimeError, so that a command never dies of one.
int CatchExceptions(std::ostream& err, const std::function<int()>& body);

// The frame of a subcommand, exceptions caught as CatchExceptions does: `check`
// judges the arguments without reading a file (its error: kExitUsageError), then
// `run` does the work and writes to `out` (its error: runtime_exit_code(status), by
// default kExitRuntimeError; `out` is flushed before the error line so that the
// output so far precedes it). kExitOk when both succeed.
int RunChecked(std::ostream& out, std::ostream& err, const std::function<Status()>& check,
               const std::function<Status()>& run,
               const std::function<int(const Status&)>& runtime_exit_code = nullptr);

// Declares `--timeout-ms N` (RunOptions::timeout_in_ms of every step, 0 = no
// deadline) on `app`. CLI11 only checks that N is an integer: the range is
// CheckTimeoutMs's, whose message is shorter than CLI11's. Returns the option (a
// caller that shows the default in --help chains capture_default_str()).
CLI::Option* AddTimeoutMsOption(CLI::App* app, int64_t* timeout_ms);

// InvalidArgument "--timeout-ms N: must be >= 0 (0 = no deadline)" for N < 0.
Status CheckTimeoutMs(int64_t timeout_ms);

// Parses --devices "cpu=2,gpu=1" into SessionOptions.device_count keys ("CPU",
// "GPU"). "" (the flag not given) is the empty map: every device type at its
// default. InvalidArgument quoting the flag for a bad or repeated entry or no CPU.
StatusOr<std::map<std::string, int>> ParseDeviceCounts(const std::string& text);

// The full names of the devices of a local session with `device_count` (as
// ParseDeviceCounts gives it), in the order a --split uses them: GPU:0.. first when
// device_count names GPUs (capped by the GPUs found), then CPU:0.., all of
// /job:localhost/replica:0/task:0. Without GPUs named: CPU:0.. then every GPU found.
std::vector<std::string> LocalDeviceNames(const std::map<std::string, int>& device_count);

// Whether a --cluster value is the "local:JOB=N,..." shorthand of a cluster started
// in this process; any other value names a cluster spec file (LoadClusterFile).
bool IsLocalCluster(const std::string& cluster);

// The cluster spec file a --cluster value names, through ResolveUserPath; errors as
// ClusterSpec::FromFile's.
StatusOr<ClusterSpec> LoadClusterFile(const std::string& cluster);

// ParseLocalClusterShape (placement/cluster_spec.h) of a --cluster value; its
// InvalidArgument is prefixed with "--cluster: ".
StatusOr<std::map<std::string, int>> ParseLocalClusterFlag(const std::string& cluster);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_CLI_CLI_COMMON_H_
