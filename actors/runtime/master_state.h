// Internal to the master actor (actors/runtime/master_*.cc): its plans, steps in flight,
// the partitions it registered, and the directory of tasks and devices it knows.
#ifndef ACTORFLOW_ACTORS_RUNTIME_MASTER_STATE_H_
#define ACTORFLOW_ACTORS_RUNTIME_MASTER_STATE_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/protocol/front_protocol.h"
#include "actors/runtime/master_actor.h"
#include "actors/protocol/messages.h"
#include "graph/prune.h"

namespace actorflow {

// One partition of a plan, registered with one device.
struct PlanPart {
  std::string device;
  DeviceActor device_actor;
  uint64_t partition_id = 0;
  std::vector<int> feed_sources;   // per partition feed: index into the client's feeds
  std::vector<int> fetch_targets;  // per partition fetch: index into the client's fetches
};

struct Plan {
  RunSignature signature;
  std::vector<PlanPart> parts;
  // The devices of the plan's collectives' groups (graph/collective_ops.h): a step
  // fails when one goes down, also where the plan has no partition on it, since its
  // peers would wait for that member's chunks until the deadline.
  std::set<std::string> collective_members;
  // Client fetches answered straight from a feed: (fetch index, feed index).
  std::vector<std::pair<int, int>> fed_fetches;
  // A tensor fetched again: (fetch index, index of its first fetch).
  std::vector<std::pair<int, int>> duplicate_fetches;
  int registrations_pending = 0;
  Status registration_status;
  // Made by the first step that can hand it to an in-process client (one part, all
  // registered); invalidated when the plan is dropped.
  std::shared_ptr<DirectPlan> direct;
  std::vector<std::shared_ptr<StepRequest>> waiting;  // steps that came before registration
};

// A step in flight: what has come back from its devices so far.
struct StepInFlight {
  int64_t step_id = 0;
  int64_t start_micros = 0;
  // Only when request->want_metadata do the devices record their executed nodes
  // (and stats, when traced) and `executed`/`stats` fill.
  std::shared_ptr<StepRequest> request;
  std::shared_ptr<Plan> plan;
  // When request->options.timeout_in_ms (> 0) runs out, on the actor clock.
  caf::actor_clock::time_point deadline;
  std::vector<bool> part_done;
  int remaining = 0;
  Status status;
  std::vector<Tensor> outputs;
  std::vector<std::pair<int64_t, std::string>> executed;  // (start, node)
  std::vector<NodeExecStats> stats;
  std::vector<CrossDeviceTransfer> transfers;  // as the devices reported them
  // Traced steps: when each part's run request left (master clock), the inserted
  // Send/Recv nodes' stats, and each device's clock offset.
  std::vector<int64_t> part_sent_micros;
  std::vector<NodeExecStats> transfer_stats;
  std::vector<DeviceClockOffset> clock_offsets;
};

// Another task of the cluster, as far as this master knows it.
struct TaskEntry {
  enum class State { kUnknown, kConnecting, kConnected } state = State::kUnknown;
  std::vector<DevicePeer> devices;
  FrontActor front;           // while connected: pinged by the heartbeat
  std::string address;        // "host:port", for messages
  bool ping_outstanding = false;
  std::vector<std::function<void(const Status&)>> waiters;
};

// The partitions registered with one device and not deregistered yet.
struct Registered {
  DeviceActor actor;
  std::string device;
  std::vector<uint64_t> partition_ids;
};

struct MasterState {
  MasterConfig config;
  const Graph* graph = nullptr;
  // The versions the session's graph grew into (extend_atom); graph is the last.
  // Kept alive for the plans and steps made on earlier ones.
  std::vector<std::shared_ptr<const Graph>> extended_graphs;
  std::unordered_map<std::string, std::shared_ptr<Plan>> plans;
  std::map<int64_t, std::shared_ptr<StepInFlight>> in_flight;
  std::map<std::string, TaskEntry> tasks;  // by task name, other tasks only
  // By device address: what must be deregistered when a plan is dropped or the
  // session closes (a device that went down is removed without a message).
  std::map<caf::actor_addr, Registered> registered;
  // TaskOrdinal of the master's task, for its step and partition ids.
  uint32_t ordinal = 0;
  // This session's KernelContext::session_scope on every device: unique among the
  // sessions of every process (an id drawn like a partition id).
  uint64_t session_scope = 0;
  bool closed = false;
  bool heartbeat_ticking = false;
  // The step_deadline_atom timer: armed for `deadline_check_at`; a message with an
  // older generation is stale (the timer was re-armed earlier since).
  bool deadline_check_armed = false;
  caf::actor_clock::time_point deadline_check_at;
  uint64_t deadline_generation = 0;
  const char* name = "actorflow_master";

  // Every device known now: the local task's and those of connected tasks.
  std::vector<DevicePeer> KnownDevices() const;
};

using MasterSelf = MasterActor::stateful_pointer<MasterState>;

// "/job:worker/replica:0/task:1" from a full device name.
std::string TaskOfDevice(const std::string& device);

// A finished step's RunMetadata from what its devices recorded (the graph's own
// nodes in start order, stats relative to the step's start); consumes the step's
// records (actors/runtime/master_metadata.cc).
RunMetadata BuildMetadata(const Graph& graph, StepInFlight* step);

// A traced part's device clock offset, recorded in `step`: the correction to
// subtract from the device's times (0 for a clock consistent with the master's).
int64_t ClockOffset(StepInFlight& step, size_t part_index, const std::string& device,
                    const RunPartitionResult& result);

// The other tasks that `nodes` name in their device specs and that are not
// connected yet; InvalidArgument naming the node for a job or task the cluster
// lacks.
StatusOr<std::vector<TaskId>> TasksToConnect(const MasterState& st,
                                             const std::vector<const Node*>& nodes);

// The members named by a collective node's group ("group_devices"); none for other
// nodes.
std::vector<std::string> CollectiveMembers(const Node& node);

// Whether one of `devices` is a member of a collective of `plan`.
bool HasCollectiveMember(const Plan& plan, const std::set<std::string>& devices);
// Whether `plan` has a partition on, or a collective member among, `devices`.
bool UsesAny(const Plan& plan, const std::set<std::string>& devices);

// Makes `grown` the graph later steps plan on (extend_atom at MasterActor):
// InvalidArgument naming the first node of the current graph that `grown` lacks or
// has in another place or op.
Status ExtendGraph(MasterState& st, std::shared_ptr<const Graph> grown);

// Prunes, places and partitions for `req`, and registers the partitions with their
// devices (the plan becomes ready when all have answered); records them in
// MasterState::registered.
StatusOr<std::shared_ptr<Plan>> BuildPlan(MasterSelf self, const StepRequest& req,
                                          const RunSignature& sig,
                                          const std::vector<const Node*>& nodes);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_RUNTIME_MASTER_STATE_H_
