#include "tests/subprocess.h"

#include <signal.h>

#include <chrono>
#include <memory>
#include <string>

#include "graph/test_files.h"
#include "tests/child_process.h"

namespace actorflow {
namespace subprocess {
namespace {

// Far beyond what any end-to-end run takes (Bazel's own test timeout usually ends
// the test first); it only guarantees that RunProcess returns.
constexpr std::chrono::minutes kRunTimeout{10};
// After a SIGKILL: how long to keep reading what the child wrote before it died.
constexpr std::chrono::seconds kDrainAfterKill{5};

}  // namespace

std::string Runfile(const std::string& relative) { return TestRunfile(relative); }

ProcessResult RunProcess(const std::string& program, const std::vector<std::string>& args) {
  ProcessResult result;
  std::unique_ptr<ChildProcess> child = ChildProcess::Start(program, args, &result.error);
  if (child == nullptr) return result;
  result.started = true;
  const auto deadline = std::chrono::steady_clock::now() + kRunTimeout;
  if (!child->WaitForExit(kRunTimeout)) {
    result.error = std::chrono::steady_clock::now() >= deadline
                       ? program + " did not end within " +
                             std::to_string(kRunTimeout.count()) + " minutes; killed it"
                       : "polling the pipes of " + program + " failed; killed it";
    child->Kill(SIGKILL);
    child->WaitForExit(kDrainAfterKill);
  }
  result.exited = child->exited();
  result.exit_code = child->exit_code();
  result.signal = child->term_signal();
  result.out = child->out();
  result.err = child->err();
  return result;
}

}  // namespace subprocess
}  // namespace actorflow
