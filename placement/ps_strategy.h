// Which ps task holds which variable: the equivalent of TensorFlow's
// replica_device_setter ps strategies. Variables live on the ps tasks (one parameter
// shard per task); the compute that reads and updates them stays on the workers.
//
//   kRoundRobin   variables in sorted name order go to tasks 0, 1, ..., N-1, 0, ...
//                 (sorted, so that the order in which a caller lists them does not
//                 matter: every worker computes the same assignment).
//   kGreedyBytes  largest variable first (ties by name) to the task holding the fewest
//                 bytes so far (ties to the lowest index): TensorFlow's
//                 GreedyLoadBalancingStrategy with byte size as the load.
//
// Both are deterministic functions of the (name, bytes) set and the task count.
//
// Thread safety: pure functions.
#ifndef ACTORFLOW_PLACEMENT_PS_STRATEGY_H_
#define ACTORFLOW_PLACEMENT_PS_STRATEGY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/status.h"

namespace actorflow {

enum class PsStrategy { kRoundRobin, kGreedyBytes };

// "round_robin" or "greedy_bytes"; InvalidArgument listing both otherwise.
Status ParsePsStrategy(const std::string& text, PsStrategy* strategy);
const char* PsStrategyName(PsStrategy strategy);

struct VariableSize {
  std::string name;
  int64_t bytes = 0;
};

struct PsAssignment {
  std::map<std::string, int> task_of;               // variable -> ps task index
  std::vector<std::vector<std::string>> variables;  // per task, in sorted name order
  std::vector<int64_t> bytes;                       // per task, the sum of its variables
};

// Assigns every variable to one of `num_tasks` ps tasks. InvalidArgument for
// num_tasks < 1, an empty or repeated variable name, or negative bytes (naming it).
// Tasks may be left empty when there are fewer variables than tasks.
StatusOr<PsAssignment> AssignVariablesToPs(const std::vector<VariableSize>& variables,
                                           int num_tasks, PsStrategy strategy);

// AssignVariablesToPs over every variable's size by name: the ps task of each, in
// the form a worker's shard protocol takes it (kernels/ps/shard_worker_protocol.h's
// ShardAssigner, bound to a strategy).
StatusOr<std::map<std::string, int>> AssignVariablesByBytes(
    const std::map<std::string, int64_t>& bytes, int num_tasks, PsStrategy strategy);

// "/job:<ps_job>/replica:0/task:<task>/device:CPU:0": where a variable assigned to
// `task` lives, as a device name.
std::string PsDeviceName(const std::string& ps_job, int task);

}  // namespace actorflow

#endif  // ACTORFLOW_PLACEMENT_PS_STRATEGY_H_
