// Clears the resource containers (variables, queues) of one task of a cluster, and
// only that one: TensorFlow's Session::Reset narrowed to a task, for tools that run
// one model after another on the same task (`actorflow tune`). CAF-free header.
#ifndef ACTORFLOW_TOOLS_TASK_RESET_H_
#define ACTORFLOW_TOOLS_TASK_RESET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/status.h"

namespace actorflow {
namespace cli {

// `target` is "actorflow://host:port". Clears `containers` (all if empty).
// Unavailable naming the target when it cannot be reached within timeout_ms.
Status ResetTask(const std::string& target, const std::vector<std::string>& containers = {},
                 int64_t timeout_ms = 10000);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TASK_RESET_H_
