// FaultPlan: the faults a simulated cluster injects, read from JSON or built in C++.
// CAF-free.
//
// JSON (a contract; `actorflow simulate --faults FILE` reads it):
//   {"faults": [ENTRY, ...]}
// Each ENTRY is an object with exactly one of the action keys below, plus its
// fields. Unknown keys are refused, so a typo never silently disables a fault.
//
//   {"kill": TASK, "at_step": N}        the task dies (its actors stop, its messages
//   {"kill": TASK, "at_s": T}           in flight are lost) when the global step
//                                       reaches N (data-parallel: as any worker saw it;
//                                       in-graph: the chief's) / at virtual second T.
//   {"restart": TASK, "at_step"|"at_s"} a killed task comes back (empty state, as a
//                                       restarted process).
//   {"drop": MATCH, "probability": P}   each matching message is lost with
//   {"drop": MATCH, "every": K}         probability P (drawn from the seed), or every
//                                       K-th matching message (1-based: K, 2K, ...).
//   {"delay": MATCH, "ms": X}           matching messages arrive X ms later; optional
//                                       "jitter_ms": J adds a uniform [0, J) from the
//                                       seed; optional "probability" (default 1).
//   {"duplicate": MATCH, "probability": P}  delivered twice.
//   {"reorder": MATCH, "probability": P}    delivered after an extra delay drawn from
//                                           the seed, up to ten link latencies, so
//                                           that later messages may overtake it.
//   {"partition": [SIDE, SIDE, ...], "from_s": A, "until_s": B}
//                                       no message crosses between sides from virtual
//                                       second A (default 0) until B (default: never
//                                       healed). SIDE: a list of TASK patterns; the sides
//                                       may not share a task.
// Message faults (drop, delay, duplicate, reorder) also take an optional window,
// "from_s" / "until_s", in virtual seconds.
//
// MATCH: {"from": PATTERN, "to": PATTERN, "kind": KIND}, each optional ("*").
// TASK: "/job:J/task:I" (a "/replica:0" part is accepted), naming a task of the cluster.
// PATTERN: a TASK, "/job:J/*" (every task of job J) or "*" (every task).
// KIND: "*" or one of kMessageKinds: "step" (client/master/worker step requests and
// answers), "tensor" (Send/Recv between tasks), "push" (gradients and updates to a ps
// shard), "pull" (variable reads from a ps shard), "heartbeat", "checkpoint", "queue".
//
// Errors (InvalidArgument, naming "faults[i]" and the field): malformed JSON (line and
// column), a missing or repeated action, an unknown key, a task or job not in the
// cluster, a wildcard where one task is needed, a probability outside [0, 1], a
// negative time, step or delay, a time above kMaxFaultPlanSeconds (a delay in ms above
// it times 1000), more than kMaxFaults entries, "every" below 1, an empty or overlapping partition, a
// window whose end is not after its start, an unknown message kind.
#ifndef ACTORFLOW_ACTORS_SIM_FAULT_PLAN_H_
#define ACTORFLOW_ACTORS_SIM_FAULT_PLAN_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "graph/status.h"
#include "placement/cluster_spec.h"

namespace actorflow {

// A plan's bounds: its entries (every message is matched against each), and its
// times (a window, a kill time, a delay): at most about 11.6 days of virtual time.
inline constexpr size_t kMaxFaults = 10000;
inline constexpr double kMaxFaultPlanSeconds = 1e6;

// The message kinds a MATCH may name, besides "*".
inline constexpr const char* kMessageKinds[] = {"step", "tensor",     "push", "pull",
                                                "heartbeat", "checkpoint", "queue"};

// A set of tasks: one task, every task of a job, or every task.
struct TaskPattern {
  std::string job;  // empty: every job
  int index = -1;   // -1: every task of `job`

  static TaskPattern Any() { return TaskPattern{}; }
  bool Matches(const TaskId& task) const;
  bool IsSingleTask() const { return !job.empty() && index >= 0; }
  // "*", "/job:worker/*" or "/job:worker/task:3".
  std::string ToString() const;
};

// Parses a PATTERN (see above) and checks it against `cluster`. `where` starts errors.
StatusOr<TaskPattern> ParseTaskPattern(std::string_view text, const ClusterSpec& cluster,
                                       const std::string& where);

struct MessageMatch {
  TaskPattern from;
  TaskPattern to;
  std::string kind = "*";

  bool Matches(const TaskId& sender, const TaskId& receiver, std::string_view message_kind) const;
};

struct Fault {
  enum class Action { kKill, kRestart, kDrop, kDelay, kDuplicate, kReorder, kPartition };
  Action action = Action::kDrop;

  // kKill, kRestart: the task and when (exactly one of at_step, at_s is >= 0).
  TaskId task;
  int64_t at_step = -1;
  double at_s = -1;

  // Message faults.
  MessageMatch match;
  double probability = 1.0;
  int64_t every = 0;  // > 0: every K-th matching message instead of `probability`
  double delay_ms = 0;
  double jitter_ms = 0;

  // kPartition: the sides.
  std::vector<std::vector<TaskPattern>> sides;

  // Message faults and partitions act in [from_s, until_s) of virtual time.
  double from_s = 0;
  double until_s = std::numeric_limits<double>::infinity();

  bool ActiveAt(double virtual_s) const { return virtual_s >= from_s && virtual_s < until_s; }
};

// "kill", "restart", "drop", "delay", "duplicate", "reorder" or "partition".
const char* ActionName(Fault::Action action);

struct FaultPlan {
  std::vector<Fault> faults;
};

// Reads and checks a plan (see the top of this file). `source` (e.g. the file name)
// starts every error message.
StatusOr<FaultPlan> ParseFaultPlan(std::string_view json_text, const ClusterSpec& cluster,
                                   const std::string& source = "fault plan");

// ParseFaultPlan of a file's contents; NotFound naming the path if it cannot be read.
StatusOr<FaultPlan> LoadFaultPlan(const std::string& path, const ClusterSpec& cluster);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SIM_FAULT_PLAN_H_
