// Runs the children of `actorflow launch` (a plan from tools/launch_plan.h) the way
// torchrun runs its workers:
//   - server tasks start first; each must print its "actorflow server ready:" line
//     within `ready_timeout`, then the other tasks start;
//   - every line a child writes is copied to this process's stdout or stderr (the
//     same stream) prefixed with "[job:index] ";
//   - SIGINT, SIGTERM and SIGHUP are forwarded to every child; the launcher then
//     exits with 128 + the signal once they have ended;
//   - when a child fails (a non-zero exit or a signal) the others are stopped and the
//     launcher exits with that child's code (128 + signal for a signal);
//   - when every non-server task has exited with 0, the servers are stopped and the
//     launcher exits 0 (with no non-server task it runs until the servers end or a
//     signal comes).
// Stopping is SIGTERM, then SIGKILL after `stop_grace`. Children get SIGKILL if the
// launcher itself dies (PR_SET_PDEATHSIG), so none is left behind.
//
// Thread safety: call from the process's main thread, with no other thread
// running (it blocks the forwarded signals process-wide while it runs).
#ifndef ACTORFLOW_TOOLS_PROCESS_GROUP_H_
#define ACTORFLOW_TOOLS_PROCESS_GROUP_H_

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

#include "tools/launch_plan.h"

namespace actorflow {
namespace cli {

struct ProcessGroupOptions {
  std::string program;  // the actorflow binary: what a task without its own program runs
  std::chrono::milliseconds ready_timeout{30000};
  std::chrono::milliseconds stop_grace{5000};
};

// Runs `plan` to its end and returns the launcher's exit code. Lines about the
// group itself ("actorflow launch: ...") go to `err`.
int RunProcessGroup(const std::vector<LaunchTask>& plan, const ProcessGroupOptions& options,
                    std::ostream& out, std::ostream& err);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_PROCESS_GROUP_H_
