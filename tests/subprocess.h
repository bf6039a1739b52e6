// Runs a program to completion as a child process and collects what it wrote and
// how it ended: what the end-to-end tests of the built binaries need. A thin layer
// over ChildProcess (tests/child_process.h), the one place that spawns children:
// both pipes are drained together, so a child that writes much to one of them
// cannot stall; the wait is bounded (10 minutes), after which the child is killed.
//
// Thread safety: RunProcess may be called from several threads at once (each call
// owns its child and reaps it before returning).
#ifndef ACTORFLOW_TESTS_SUBPROCESS_H_
#define ACTORFLOW_TESTS_SUBPROCESS_H_

#include <string>
#include <vector>

namespace actorflow {
namespace subprocess {

struct ProcessResult {
  bool started = false;  // false when the program could not be spawned (see error)
  bool exited = false;   // ended through exit(); false when killed by a signal
  int exit_code = -1;    // valid when exited
  int signal = 0;        // the signal that ended it, when !exited
  std::string out;
  std::string err;
  // Why it could not be run (when !started), or why it was killed (it did not end
  // in time, or its pipes could not be polled); empty otherwise.
  std::string error;
};

// Runs `program` with `args` (argv[0] is the program) in the caller's working
// directory and environment, minus BUILD_WORKING_DIRECTORY (which would make the
// child resolve paths against a `bazel run` directory); waits for it to end and
// for its pipes to close. A child still running after 10 minutes is SIGKILLed
// (normally exited false, signal SIGKILL) and error says so.
ProcessResult RunProcess(const std::string& program, const std::vector<std::string>& args);

// The path of a runfile of the test: $TEST_SRCDIR/<workspace>/<relative>
// (TestRunfile of graph/test_files.h).
std::string Runfile(const std::string& relative);

}  // namespace subprocess
}  // namespace actorflow

#endif  // ACTORFLOW_TESTS_SUBPROCESS_H_
