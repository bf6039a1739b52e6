// The placer: assigns every node of a step one concrete device.
//
// Rules, in order of precedence:
//  1. Colocation. A node with a ref input (Assign's variable) and the Variable it
//     refers to form one group, and so do the nodes named in a "_class" attr
//     (["loc:@other", ...]); groups are closed under union. A group is placed as a
//     whole, and its members' requested devices (NodeDef::device) must be compatible
//     (InvalidArgument naming two members and their specs otherwise).
//  2. Requested devices. A group's merged spec is matched against the available
//     devices: when the spec names no task, the default device's task is preferred;
//     when it names no type, the default device's type is preferred; then the lowest
//     task and the lowest device id win.
//  3. Kernels. Every member needs a kernel for (op, device type, kernel dtype) on the
//     chosen device; a matching device whose type lacks one is skipped.
//  4. Soft placement. When no available device matches the spec, or none of the
//     matching ones has all kernels, the group goes to the CPU of the requested task
//     (else of the default task) if allow_soft_placement; otherwise InvalidArgument
//     naming the node, the requested device and what is missing (the available
//     devices, or the missing kernel), suggesting allow_soft_placement.
//  5. Default. A group with no requested device goes to the default device; when
//     that is not a CPU and lacks a kernel for a member (a GPU and an integer op),
//     the group goes to the default task's CPU instead (as in TensorFlow, a default
//     is a preference, so this needs no allow_soft_placement).
//
// A group is decided from all its members in the graph, not only those in the step's
// node set, so a node lands on the same device in every step (a variable's state
// lives on one device).
//
// Thread safety: pure functions of their arguments (the kernel registry is read-only
// after static initialization).
#ifndef ACTORFLOW_PLACEMENT_PLACER_H_
#define ACTORFLOW_PLACEMENT_PLACER_H_

#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"

namespace actorflow {

struct DeviceInfo {
  std::string name;  // full name: "/job:worker/replica:0/task:1/device:GPU:0"
  std::string type;  // "CPU", "GPU", or a test type; empty = the type in `name`
};

struct PlacerOptions {
  // The available devices of every task. Empty: the default device alone, as a CPU.
  std::vector<DeviceInfo> devices;
  // Where nodes without a requested device go: the client task's CPU:0. Must match
  // an available device. Empty = kLocalCpuDeviceName.
  std::string default_device;
  // Whether a group whose requested device is missing or lacks a kernel may run on
  // a CPU instead of failing.
  bool allow_soft_placement = false;
};

struct Placement {
  std::string device;  // a full device name from PlacerOptions::devices
  // Why: "requested /gpu:0", "colocated with v", "default",
  // "soft placement: no GPU kernel for op Mul with dtype int32 (requested /gpu:0)",
  // "default, on the CPU: no GPU kernel for op Mul with dtype int32 (default device
  // /job:localhost/replica:0/task:0/device:GPU:0)".
  std::string reason;
};

// Assigns a device to every node in `nodes` (a subset of `graph`, e.g. a pruned
// step); the result is keyed by node id. Errors: InvalidArgument for a malformed
// device spec or device list, a "_class" naming no node, conflicting colocation,
// an unsatisfiable request without soft placement, or a node with no kernel on the
// device it would get.
StatusOr<std::map<int, Placement>> PlaceNodes(const Graph& graph,
                                              const std::vector<const Node*>& nodes,
                                              const PlacerOptions& options);

// One line per placed node, in graph order:
// "name (Op): /job:localhost/replica:0/task:0/device:CPU:0 — requested /cpu:0".
std::string ExplainPlacement(const Graph& graph, const std::map<int, Placement>& placement);

}  // namespace actorflow

#endif  // ACTORFLOW_PLACEMENT_PLACER_H_
