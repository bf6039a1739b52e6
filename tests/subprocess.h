// Runs a program as a child process and collects what it wrote and how it ended:
// what the end-to-end tests of the built binaries need. Both pipes are drained
// together, so a child that writes much to one of them cannot stall.
//
// Thread safety: RunProcess may be called from several threads at once.
#ifndef ACTORFLOW_TESTS_SUBPROCESS_H_
#define ACTORFLOW_TESTS_SUBPROCESS_H_

#include <string>
#include <vector>

namespace actorflow {
namespace subprocess {

struct ProcessResult {
  bool started = false;  // false when the program could not be spawned (see error)
  bool exited = false;   // ended through exit(); false when killed by a signal
  int exit_code = -1;
  int signal = 0;
  std::string out;
  std::string err;
  std::string error;  // why it could not be run, when !started
};

// Runs `program` with `args` (argv[0] is the program) in the caller's working
// directory and environment, minus BUILD_WORKING_DIRECTORY (which would make the
// child resolve paths against a `bazel run` directory); waits for it to end.
ProcessResult RunProcess(const std::string& program, const std::vector<std::string>& args);

// The path of a runfile of the test: $TEST_SRCDIR/<workspace>/<relative>.
std::string Runfile(const std::string& relative);

}  // namespace subprocess
}  // namespace actorflow

#endif  // ACTORFLOW_TESTS_SUBPROCESS_H_
