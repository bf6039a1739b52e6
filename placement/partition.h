// Partitioning: splits a placed step into one graph per device, joined by _Send/_Recv
// pairs, so that each device runs its own partition with its own executor.
//
// What a partition holds:
//  - the step's nodes placed on its device, with their names, ops and attrs kept and
//    NodeDef::device set to the full device name;
//  - for each data edge src:k -> dst that crosses from device A to device B: a _Send
//    on A (input src:k) and a _Recv on B that replaces src:k as dst's input. There is
//    one pair per (tensor, destination device), however many consumers B has;
//  - for each control edge src -> dst that crosses devices: on A a Const (an int32
//    scalar with a control input on src) feeding a _Send, and on B a _Recv that dst
//    takes as a control input; one pair per (src, destination device);
//  - for each fed tensor consumed on the device whose producer is not computed there:
//    a Placeholder standing in for it (named as the producer for output 0, else
//    "_feed/<producer>_<k>");
//  - for each ref input (Assign's variable) whose Variable is not in the step's node
//    set: a copy of that Variable node (without control inputs), so the input
//    resolves; the placer colocates it with its consumer.
//
// Rendezvous keys: a pair's tensor_name attr is "src:k" for data ("src:0" for output
// 0) and "^src" for control; (step id, send_device, recv_device, tensor_name) is
// unique within a step.
//
// Naming: generated nodes are "_send/<src>_<k>/to_<device>", "_recv/<src>_<k>/to_<device>",
// "_ctrl/<src>/to_<device>" with <device> the destination's name with '/' and ':'
// replaced by '_' (a control pair uses "<src>_ctrl"); a name already taken gets a
// "_1", "_2", ... suffix. Generated names never clash with the original graph's.
//
// Thread safety: a pure function of its arguments.
#ifndef ACTORFLOW_PLACEMENT_PARTITION_H_
#define ACTORFLOW_PLACEMENT_PARTITION_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"
#include "placement/placer.h"

namespace actorflow {

struct DevicePartition {
  std::string device;  // a full device name from the placement
  // The original nodes placed here (same names, inputs rewritten) + _Send/_Recv,
  // Const (control pairs), Placeholder (fed tensors) and Variable (ref inputs) nodes.
  std::unique_ptr<Graph> graph;
  // Tensor names fed by the caller (as named in the original graph, in the order of
  // the step's feeds) that this partition consumes; every consuming partition lists
  // the feed, so the caller feeds each of them.
  std::vector<std::string> feeds;
  // Parallel to `feeds`: the tensor in `graph` that takes the value ("x", or
  // "_feed/y_1" for a stand-in of "y:1" when y is not computed here).
  std::vector<std::string> feed_inputs;
  // Tensor names this partition returns to the caller (computed here; same names in
  // both graphs), in the order of the step's fetches. A fetch of a fed tensor is in
  // no partition: the caller answers it with the fed value.
  std::vector<std::string> fetches;
  // Node names to run for their effect: the step's targets placed here, then every
  // _Send of this partition (nothing in the partition consumes a _Send).
  std::vector<std::string> targets;
};

// Splits `nodes` (a closed step: every non-fed, non-ref data input and every control
// input of a node is in the set) according to `placement` (an entry for every node)
// into one partition per device, ordered by device name. The executor's node set of
// a partition is PruneForRun(*graph, {feed_inputs, fetches, targets}).
// Errors (InvalidArgument): a node without placement, a set that is not closed, a
// fetch or target outside the set, a ref input whose Variable is on another device.
StatusOr<std::vector<DevicePartition>> Partition(const Graph& graph,
                                                 const std::vector<const Node*>& nodes,
                                                 const std::map<int, Placement>& placement,
                                                 const std::vector<Endpoint>& feeds,
                                                 const std::vector<Endpoint>& fetches,
                                                 const std::vector<const Node*>& targets);

}  // namespace actorflow

#endif  // ACTORFLOW_PLACEMENT_PARTITION_H_
