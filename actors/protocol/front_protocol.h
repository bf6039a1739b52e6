// The front actor's protocol: the one actor a task (a Server) publishes on its
// address, serving the task's worker service and master service on one port. Its
// atoms, payloads and typed interface (FrontActor). Included only by actors/*.cc,
// tools/*.cc and actors headers included only there (CAF).
//
// Every payload crosses processes (`inspect` overloads in actors/protocol/wire.h). A client
// gets a checked handle with `middleman().remote_actor<FrontActor>(host, port)`
// (ConnectToServer, actors/transport/connect.h): a peer that publishes another interface is
// refused at connect time.
#ifndef ACTORFLOW_ACTORS_PROTOCOL_FRONT_PROTOCOL_H_
#define ACTORFLOW_ACTORS_PROTOCOL_FRONT_PROTOCOL_H_

#include <cstdint>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "actors/protocol/wire_core.h"
#include "actors/protocol/device_protocol.h"
#include "actors/protocol/master_protocol.h"
#include "actors/protocol/shard_messages.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/session.h"

namespace actorflow {

using ping_atom = caf::atom_constant<caf::atom("ping")>;
using devices_atom = caf::atom_constant<caf::atom("devices")>;
using open_atom = caf::atom_constant<caf::atom("open")>;
using remote_step_atom = caf::atom_constant<caf::atom("rstep")>;
using reset_atom = caf::atom_constant<caf::atom("reset")>;
using front_stats_atom = caf::atom_constant<caf::atom("fstats")>;
using get_shard_atom = caf::atom_constant<caf::atom("getshard")>;
// close_atom (actors/protocol/master_protocol.h): closing a session, here named by its id.

// What a client asks a task for: a session over a graph.
struct OpenSessionRequest {
  std::string graph_json;
  // Instead of graph_json, for a task of the client's own process: the ticket of
  // the graph left for it (actors/cluster/graph_handoff.h); 0 when not.
  uint64_t graph_ticket = 0;
  bool allow_soft_placement = false;
  bool log_device_placement = false;
};

struct OpenSessionResult {
  Status status;
  uint64_t session_id = 0;
  // The task's step channel on the host the client reached it by (0: none; steps go
  // over CAF). actors/cluster/step_channel.h.
  uint16_t step_port = 0;
};

// A step as it travels from a remote client to a task's master.
struct RemoteStep {
  uint64_t session_id = 0;
  std::vector<std::string> feed_names;
  std::vector<Tensor> feed_values;
  std::vector<std::string> fetches;
  std::vector<std::string> targets;
  int64_t timeout_in_ms = 0;
  bool trace = false;
  bool want_metadata = true;  // the client passed a RunMetadata to fill
};

struct RemoteStepResult {
  Status status;
  std::vector<Tensor> outputs;
  std::vector<std::string> executed_nodes;
  std::vector<NodeExecStats> step_stats;
  std::vector<CrossDeviceTransfer> transfers;
  std::vector<NodeExecStats> transfer_stats;
  std::vector<DeviceClockOffset> clock_offsets;
};

// A step's answer as a remote client gets it: the master's status, outputs and run
// metadata (the master's promise, and the step channel's StepReply, both end here).
inline RemoteStepResult MakeRemoteStepResult(Status status, std::vector<Tensor> outputs,
                                             RunMetadata meta) {
  RemoteStepResult r;
  r.status = std::move(status);
  r.outputs = std::move(outputs);
  r.executed_nodes = std::move(meta.executed_nodes);
  r.step_stats = std::move(meta.step_stats);
  r.transfers = std::move(meta.transfers);
  r.transfer_stats = std::move(meta.transfer_stats);
  r.clock_offsets = std::move(meta.clock_offsets);
  return r;
}

// The run metadata of `r` into *metadata (the other way round), leaving `r`'s
// moved from.
inline void MoveRunMetadata(RemoteStepResult* r, RunMetadata* metadata) {
  metadata->executed_nodes = std::move(r->executed_nodes);
  metadata->step_stats = std::move(r->step_stats);
  metadata->transfers = std::move(r->transfers);
  metadata->transfer_stats = std::move(r->transfer_stats);
  metadata->clock_offsets = std::move(r->clock_offsets);
}

// What a task holds (tests assert a long-lived server frees closed sessions).
struct FrontStats {
  std::string task;
  int64_t sessions = 0;  // open sessions (one master each)
  int64_t devices = 0;
};

// The front actor of a task (actors/cluster/server.cc).
//
//   (ping_atom) -> string             "actorflow server /job:J/replica:0/task:I"
//   (devices_atom) -> vector<DevicePeer>
//       The task's device actors (worker service): masters of other tasks send
//       their partitions and steps straight to them.
//   (open_atom, OpenSessionRequest) -> OpenSessionResult
//       Spawns a master over the graph (InvalidArgument for bad graph JSON); the id
//       names the session in later messages.
//   (extend_atom, uint64 session_id, OpenSessionRequest) -> Status
//       The session's graph grew (TensorFlow's Session::Extend): graph_json is the
//       whole graph now, the session's graph with nodes added after its own (the
//       other fields are ignored). The session keeps its id, master, plans, steps in
//       flight and private resources (queues and readers without a shared name).
//       FailedPrecondition for a session that is not open; InvalidArgument for bad
//       graph JSON, too many nodes, or a graph that does not extend the session's
//       (MasterActor's extend_atom).
//   (remote_step_atom, RemoteStep) -> RemoteStepResult
//       One step of an open session (FailedPrecondition naming the session and
//       task when it is not open); the master's contract (MasterActor) applies.
//   (close_atom, uint64 session_id) -> Status
//       Closes the session: its master deregisters every partition it registered
//       (on this task's devices and others'), drops its plans and ends; answered
//       once that is done. Unknown ids are OK (closing twice is harmless).
//   (reset_atom, vector<string> containers) -> string
//       Clears the containers' variables, queues and shards on this task (all when
//       empty); answers the task's cluster spec as JSON.
//   (front_stats_atom) -> FrontStats
//   (get_shard_atom, string name, ShardConfig) -> (Status, ShardActor)
//       The task's parameter shard `name`, created on first use; see
//       GetOrCreateShard (actors/ps/parameter_shard.h).
using FrontActor = caf::typed_actor<
    caf::replies_to<ping_atom>::with<std::string>,
    caf::replies_to<devices_atom>::with<std::vector<DevicePeer>>,
    caf::replies_to<open_atom, OpenSessionRequest>::with<OpenSessionResult>,
    caf::replies_to<extend_atom, uint64_t, OpenSessionRequest>::with<Status>,
    caf::replies_to<remote_step_atom, RemoteStep>::with<RemoteStepResult>,
    caf::replies_to<close_atom, uint64_t>::with<Status>,
    caf::replies_to<reset_atom, std::vector<std::string>>::with<std::string>,
    caf::replies_to<front_stats_atom>::with<FrontStats>,
    caf::replies_to<get_shard_atom, std::string, ShardConfig>::with<Status, ShardActor>>;

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_PROTOCOL_FRONT_PROTOCOL_H_
