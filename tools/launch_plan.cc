#include "tools/launch_plan.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include <nlohmann/json.hpp>

namespace actorflow {
namespace cli {
namespace {

std::string Label(const TaskId& task) { return task.job + ":" + std::to_string(task.index); }

std::string JoinWith(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

bool ParseNonNegative(const std::string& text, long* value) {
  if (text.empty() || text.size() > 9) return false;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  *value = std::stol(text);
  return true;
}

// Splits at commas outside brackets ("a[1,2],b" -> "a[1,2]", "b").
StatusOr<std::vector<std::string>> SplitTopLevel(const std::string& list) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']' && --depth < 0) break;
    if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (depth != 0) return InvalidArgument("SLURM hostlist '" + list + "': unbalanced brackets");
  parts.push_back(current);
  return parts;
}

std::vector<std::string> TaskNames(const ClusterSpec& spec) {
  std::vector<std::string> names;
  for (const TaskId& t : spec.AllTasks()) names.push_back(Label(t));
  return names;
}

}  // namespace

bool IsLocalHost(const std::string& host, const std::set<std::string>& also) {
  std::string h = host;
  std::transform(h.begin(), h.end(), h.begin(), [](unsigned char c) { return std::tolower(c); });
  return h == "localhost" || h == "[::1]" || h == "0.0.0.0" || h.rfind("127.", 0) == 0 ||
         also.count(host) > 0 || also.count(h) > 0;
}

StatusOr<std::vector<LaunchTask>> MakeLaunchPlan(const ClusterSpec& spec,
                                                 const std::string& cluster_file,
                                                 const LaunchPlanOptions& options) {
  // A program of the user's own gets the command unchanged (its flags are its own).
  const bool own_program =
      !options.command.empty() && options.actorflow_commands.count(options.command[0]) == 0;
  for (const std::string& arg : own_program ? std::vector<std::string>() : options.command) {
    for (const char* reserved : {"--cluster", "--job", "--task"}) {
      if (arg == reserved || arg.rfind(std::string(reserved) + "=", 0) == 0) {
        return InvalidArgument("launch: the command after -- must not carry " +
                               std::string(reserved) + ": the launcher gives every task its own");
      }
    }
  }
  std::vector<TaskId> selected;
  if (options.tasks.empty()) {
    std::vector<std::string> hosts;
    for (const TaskId& t : spec.AllTasks()) {
      AF_ASSIGN_OR_RETURN(TaskAddress address, spec.Address(t));
      if (IsLocalHost(address.host, options.local_hosts)) selected.push_back(t);
      hosts.push_back(address.host);
    }
    if (selected.empty()) {
      std::vector<std::string> looked(options.local_hosts.begin(), options.local_hosts.end());
      looked.insert(looked.begin(), "loopback addresses");
      return InvalidArgument("launch: no task of the cluster lives on this host (looked for " +
                             JoinWith(looked, ", ") + "; the cluster's hosts are " +
                             JoinWith(hosts, ", ") + "); name tasks with --tasks job:index");
    }
  }
  for (const std::string& entry : options.tasks) {
    const size_t colon = entry.find(':');
    long index = -1;
    if (colon == std::string::npos || !ParseNonNegative(entry.substr(colon + 1), &index)) {
      return InvalidArgument("launch: --tasks entry '" + entry +
                             "' is not job:index (e.g. worker:0)");
    }
    const TaskId task{entry.substr(0, colon), static_cast<int>(index)};
    if (index >= spec.num_tasks(task.job)) {
      return InvalidArgument("launch: --tasks entry '" + entry + "' is no task of the cluster (" +
                             JoinWith(TaskNames(spec), ", ") + ")");
    }
    if (std::find(selected.begin(), selected.end(), task) != selected.end()) {
      return InvalidArgument("launch: --tasks names " + entry + " twice");
    }
    selected.push_back(task);
  }
  std::vector<LaunchTask> plan;
  for (const TaskId& task : selected) {
    LaunchTask child;
    child.task = task;
    child.label = Label(task);
    child.server = options.server_jobs.count(task.job) > 0 || options.command.empty();
    child.env = {"TF_CONFIG={\"cluster\": " + spec.ToJson() + ", \"task\": {\"type\": \"" +
                 task.job + "\", \"index\": " + std::to_string(task.index) + "}}"};
    if (!child.server && own_program) {
      child.program = options.command[0];
      child.args.assign(options.command.begin() + 1, options.command.end());
      plan.push_back(std::move(child));
      continue;
    }
    child.args = child.server ? std::vector<std::string>{"server"} : options.command;
    for (const std::string& a : {std::string("--cluster"), cluster_file, std::string("--job"),
                                 task.job, std::string("--task"), std::to_string(task.index)}) {
      child.args.push_back(a);
    }
    plan.push_back(std::move(child));
  }
  return plan;
}

StatusOr<std::vector<std::string>> ExpandSlurmHostlist(const std::string& hostlist) {
  AF_ASSIGN_OR_RETURN(std::vector<std::string> parts, SplitTopLevel(hostlist));
  std::vector<std::string> hosts;
  for (const std::string& part : parts) {
    const size_t open = part.find('[');
    if (part.empty()) return InvalidArgument("SLURM hostlist '" + hostlist + "': an empty entry");
    if (open == std::string::npos) {
      hosts.push_back(part);
      continue;
    }
    const size_t close = part.find(']', open);
    if (close == std::string::npos || close != part.size() - 1) {
      return InvalidArgument("SLURM hostlist '" + hostlist + "': '" + part +
                             "' must end with its [range]");
    }
    const std::string prefix = part.substr(0, open);
    for (const std::string& range : Split(part.substr(open + 1, close - open - 1), ',')) {
      const std::vector<std::string> ends = Split(range, '-');
      long first = 0, last = 0;
      if (ends.size() > 2 || !ParseNonNegative(ends[0], &first) ||
          !ParseNonNegative(ends.back(), &last) || last < first || last - first > 100000) {
        return InvalidArgument("SLURM hostlist '" + hostlist + "': bad range '" + range + "'");
      }
      const size_t width = ends[0].size();
      for (long n = first; n <= last; ++n) {
        std::string digits = std::to_string(n);
        if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
        hosts.push_back(prefix + digits);
      }
    }
  }
  return hosts;
}

StatusOr<std::vector<int>> ExpandSlurmTasksPerNode(const std::string& text) {
  std::vector<int> counts;
  for (const std::string& entry : Split(text, ',')) {
    long count = 0, repeat = 1;
    const size_t paren = entry.find("(x");
    const std::string head = paren == std::string::npos ? entry : entry.substr(0, paren);
    bool ok = ParseNonNegative(head, &count);
    if (ok && paren != std::string::npos) {
      ok = entry.back() == ')' &&
           ParseNonNegative(entry.substr(paren + 2, entry.size() - paren - 3), &repeat);
    }
    if (!ok || repeat > 100000) {
      return InvalidArgument("SLURM_TASKS_PER_NODE '" + text + "': bad entry '" + entry +
                             "' (expected N or N(xR))");
    }
    counts.insert(counts.end(), repeat, static_cast<int>(count));
  }
  return counts;
}

StatusOr<ClusterSpec> SlurmClusterSpec(const std::string& nodelist,
                                       const std::string& tasks_per_node,
                                       const std::string& jobs, int port_base) {
  if (nodelist.empty()) {
    return InvalidArgument("--cluster slurm: SLURM_JOB_NODELIST is not set (run inside an "
                           "allocation: salloc or sbatch)");
  }
  AF_ASSIGN_OR_RETURN(std::vector<std::string> nodes, ExpandSlurmHostlist(nodelist));
  std::vector<int> per_node(nodes.size(), 1);
  if (!tasks_per_node.empty()) {
    AF_ASSIGN_OR_RETURN(per_node, ExpandSlurmTasksPerNode(tasks_per_node));
    if (per_node.size() != nodes.size()) {
      return InvalidArgument("SLURM_TASKS_PER_NODE '" + tasks_per_node + "' gives " +
                             std::to_string(per_node.size()) + " nodes, SLURM_JOB_NODELIST " +
                             std::to_string(nodes.size()));
    }
  }
  // (node, slot on that node) of every task slot, in order.
  std::vector<std::pair<std::string, int>> slots;
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (int k = 0; k < per_node[n]; ++k) slots.emplace_back(nodes[n], k);
  }
  if (jobs.empty()) return InvalidArgument("--cluster slurm needs --slurm-jobs (e.g. ps=1,worker=2)");
  nlohmann::ordered_json cluster = nlohmann::ordered_json::object();
  size_t next = 0;
  for (const std::string& entry : Split(jobs, ',')) {
    const size_t eq = entry.find('=');
    long count = 0;
    if (eq == std::string::npos || !ParseNonNegative(entry.substr(eq + 1), &count) || count < 1) {
      return InvalidArgument("--slurm-jobs entry '" + entry + "' is not job=count (e.g. worker=2)");
    }
    nlohmann::ordered_json addresses = nlohmann::ordered_json::array();
    for (long i = 0; i < count; ++i, ++next) {
      if (next >= slots.size()) {
        return InvalidArgument("--slurm-jobs " + jobs + " needs more tasks than the allocation's " +
                               std::to_string(slots.size()) + " task slots");
      }
      addresses.push_back(slots[next].first + ":" + std::to_string(port_base + slots[next].second));
    }
    cluster[entry.substr(0, eq)] = addresses;
  }
  return ClusterSpec::FromJson(cluster.dump(), "--cluster slurm");
}

}  // namespace cli
}  // namespace actorflow
