// Collective operations between the members of a group of devices (TensorFlow's
// CollectiveReduce / CollectiveBcast / CollectiveGather, Horovod's allreduce): every
// member runs the same op on its own device with its own input, and every member's
// output is the collective result. Ops and attrs: graph/ops_collective.cc; the
// algorithms (ring, recursive doubling): kernels/collective/collective_algorithms.h;
// the kernels talk through the runtime's rendezvous, so chunks travel as the step's
// tensors do (by reference in-process, one raw byte block across processes, the bulk
// channel when large).
//
// A group is named by `group_key` and lists its members' full device names in rank
// order (`group_devices`, "/job:worker/replica:0/task:1/device:CPU:0"); a member's rank
// is the position of the device its op runs on. `instance_key` tells apart the
// collectives of one group (one per tensor or bucket of a step). Members match their
// executions by count: the k-th run of (group, instance) on one member meets the k-th
// run on every other, so every member must run the same collectives in the same
// order (as replicas of one training step do). A member whose peer never comes waits
// until the step's deadline (or fails at once when the peer's task goes down, naming
// it). The ops run in the actor runtime only (DirectSession has no rendezvous).
//
//   std::vector<std::string> members = {"/job:worker/replica:0/task:0/device:CPU:0",
//                                       "/job:worker/replica:0/task:1/device:CPU:0"};
//   CollectiveGroup group{"grads", members};
//   Output mean = CollectiveAllReduce(scope, grad, group, /*instance_key=*/1, "mean");
#ifndef ACTORFLOW_GRAPH_COLLECTIVE_OPS_H_
#define ACTORFLOW_GRAPH_COLLECTIVE_OPS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/scope.h"

namespace actorflow {

struct CollectiveGroup {
  std::string key;                   // names the group, e.g. "gradients"
  std::vector<std::string> devices;  // full device names, rank order, no repeats
};

// The element-wise sum ("sum") or mean ("mean") of every member's input (same dtype:
// float32, float64, int32 or int64; same shape). algorithm: "auto" (recursive
// doubling for small tensors, ring for large), "ring" or "recursive_doubling".
Output CollectiveAllReduce(const Scope& scope, const Input& input, const CollectiveGroup& group,
                           int64_t instance_key, const std::string& merge_op = "sum",
                           const std::string& algorithm = "auto");
// The input of the member of rank `root_rank`, on every member (each passes a tensor
// of the same dtype and shape, whose values only the root's matter).
Output CollectiveBroadcast(const Scope& scope, const Input& input, const CollectiveGroup& group,
                           int64_t instance_key, int64_t root_rank = 0);
// Every member's input concatenated along dimension 0 in rank order (the inputs may
// differ in dimension 0 only).
Output CollectiveAllGather(const Scope& scope, const Input& input, const CollectiveGroup& group,
                           int64_t instance_key);
// Member r's block of the reduced, flattened input: the flattened input is cut into
// group-size contiguous blocks whose sizes differ by at most one (the first ones
// larger); a 1-D tensor.
Output CollectiveReduceScatter(const Scope& scope, const Input& input,
                               const CollectiveGroup& group, int64_t instance_key,
                               const std::string& merge_op = "sum");

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_COLLECTIVE_OPS_H_
