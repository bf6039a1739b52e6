#include "placement/ps_strategy.h"

#include <algorithm>
#include <set>

namespace actorflow {

Status ParsePsStrategy(const std::string& text, PsStrategy* strategy) {
  if (text == "round_robin") {
    *strategy = PsStrategy::kRoundRobin;
    return Status::OK();
  }
  if (text == "greedy_bytes") {
    *strategy = PsStrategy::kGreedyBytes;
    return Status::OK();
  }
  return InvalidArgument("unknown ps strategy '" + text +
                         "': expected round_robin or greedy_bytes");
}

const char* PsStrategyName(PsStrategy strategy) {
  return strategy == PsStrategy::kRoundRobin ? "round_robin" : "greedy_bytes";
}

StatusOr<PsAssignment> AssignVariablesToPs(const std::vector<VariableSize>& variables,
                                           int num_tasks, PsStrategy strategy) {
  if (num_tasks < 1) {
    return InvalidArgument("variables need at least one ps task, got " + std::to_string(num_tasks));
  }
  std::set<std::string> seen;
  for (const VariableSize& v : variables) {
    if (v.name.empty()) return InvalidArgument("a variable to place on a ps task has no name");
    if (!seen.insert(v.name).second) {
      return InvalidArgument("variable '" + v.name + "' is listed twice for ps placement");
    }
    if (v.bytes < 0) {
      return InvalidArgument("variable '" + v.name + "' has a negative size (" +
                             std::to_string(v.bytes) + " bytes)");
    }
  }

  std::vector<VariableSize> order = variables;
  if (strategy == PsStrategy::kRoundRobin) {
    std::sort(order.begin(), order.end(),
              [](const VariableSize& a, const VariableSize& b) { return a.name < b.name; });
  } else {
    std::sort(order.begin(), order.end(), [](const VariableSize& a, const VariableSize& b) {
      return a.bytes != b.bytes ? a.bytes > b.bytes : a.name < b.name;
    });
  }

  PsAssignment out;
  out.variables.resize(num_tasks);
  out.bytes.assign(num_tasks, 0);
  for (size_t i = 0; i < order.size(); ++i) {
    int task = 0;
    if (strategy == PsStrategy::kRoundRobin) {
      task = static_cast<int>(i % num_tasks);
    } else {
      // min_element returns the first minimum: ties go to the lowest index.
      task = static_cast<int>(std::min_element(out.bytes.begin(), out.bytes.end()) -
                              out.bytes.begin());
    }
    out.task_of[order[i].name] = task;
    out.variables[task].push_back(order[i].name);
    out.bytes[task] += order[i].bytes;
  }
  for (auto& names : out.variables) std::sort(names.begin(), names.end());
  return out;
}

StatusOr<std::map<std::string, int>> AssignVariablesByBytes(
    const std::map<std::string, int64_t>& bytes, int num_tasks, PsStrategy strategy) {
  std::vector<VariableSize> sizes;
  for (const auto& [name, size] : bytes) sizes.push_back(VariableSize{name, size});
  AF_ASSIGN_OR_RETURN(PsAssignment assignment, AssignVariablesToPs(sizes, num_tasks, strategy));
  return assignment.task_of;
}

std::string PsDeviceName(const std::string& ps_job, int task) {
  return "/job:" + ps_job + "/replica:0/task:" + std::to_string(task) + "/device:CPU:0";
}

}  // namespace actorflow
