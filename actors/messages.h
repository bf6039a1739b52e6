// The actor runtime's message vocabulary: atoms and payloads exchanged between the
// client, the master actor and device actors. Included only by actors/*.cc (CAF).
//
// Payloads travel in-process by reference (CAF does not serialize local messages,
// and a Tensor shares its buffer), so no tensor is copied by a message. Every type
// that can cross processes has an `inspect` overload (actors/wire.h) that writes a
// tensor as dtype, shape and one raw byte block; types marked unsafe below are
// local-only (closures, the client's reply handle).
#ifndef ACTORFLOW_ACTORS_MESSAGES_H_
#define ACTORFLOW_ACTORS_MESSAGES_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/session.h"
#include "placement/partition.h"

namespace actorflow {

// Device protocol.
using register_atom = caf::atom_constant<caf::atom("register")>;  // partition -> ok
using run_atom = caf::atom_constant<caf::atom("run")>;             // run one partition step
using tensor_atom = caf::atom_constant<caf::atom("tensor")>;       // a Send's tensor
using abort_atom = caf::atom_constant<caf::atom("abort")>;         // end a step everywhere
using resume_atom = caf::atom_constant<caf::atom("resume")>;       // scheduled callback
using recv_timeout_atom = caf::atom_constant<caf::atom("recvtmo")>;  // operation timeout
using peers_atom = caf::atom_constant<caf::atom("peers")>;         // the other devices
using stats_atom = caf::atom_constant<caf::atom("stats")>;         // introspection
// Master protocol.
using step_atom = caf::atom_constant<caf::atom("step")>;
// Server (front actor) protocol: worker service and master service of a task.
using devices_atom = caf::atom_constant<caf::atom("devices")>;  // -> vector<DevicePeer>
using open_atom = caf::atom_constant<caf::atom("open")>;        // graph -> session id
using close_atom = caf::atom_constant<caf::atom("close")>;      // session id
using reset_atom = caf::atom_constant<caf::atom("reset")>;      // containers
using ping_atom = caf::atom_constant<caf::atom("ping")>;        // -> identity string

struct DevicePeer {
  std::string name;
  std::string type;
  caf::actor actor;
};

// A partition registered once with its device, then run step after step. `peers`
// are the devices its Sends go to.
struct PartitionRegistration {
  uint64_t partition_id = 0;
  std::shared_ptr<const DevicePartition> partition;
  std::vector<DevicePeer> peers;
};

struct RunPartitionRequest {
  int64_t step_id = 0;
  uint64_t partition_id = 0;
  std::vector<Tensor> feed_values;  // parallel to the partition's feeds
  bool collect_stats = false;
  // Report the executed nodes (and their start times): only for a run whose client
  // wants run metadata.
  bool record_executed = true;
};

struct RunPartitionResult {
  Status status;
  std::vector<Tensor> fetches;  // parallel to the partition's fetches
  std::vector<std::string> executed_nodes;
  std::vector<int64_t> executed_start_micros;  // steady clock, parallel to executed_nodes
  std::vector<NodeExecStats> step_stats;       // steady-clock micros
};

struct AbortRequest {
  int64_t step_id = 0;
  Status status;
};

// A tensor sent from one device to another for a (step, edge) key.
struct TensorDelivery {
  int64_t step_id = 0;
  std::string key;  // RendezvousKey::ToString()
  Tensor value;
};

struct Closure {
  std::function<void()> fn;
};

// What a device reports about itself (tests assert nothing is left pending).
struct DeviceStats {
  std::string device;
  int64_t pending_recvs = 0;
  int64_t inbox_tensors = 0;
  int64_t active_steps = 0;
  int64_t partitions = 0;
};

// A client's step: filled by the session, answered by the master through `reply`.
struct StepReply {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Status status;
  std::vector<Tensor> outputs;
  RunMetadata metadata;

  // Notifies after unlocking: a waiter woken while the lock is still held would block
  // on it at once and need a second wake-up. Contract: the caller keeps this reply
  // alive until Deliver returns (it holds a shared_ptr), since the waiter may return
  // as soon as the lock is released.
  void Deliver(Status s, std::vector<Tensor> out, RunMetadata meta) {
    {
      std::lock_guard<std::mutex> lock(mu);
      status = std::move(s);
      outputs = std::move(out);
      metadata = std::move(meta);
      done = true;
    }
    cv.notify_all();
  }
};

// A step as it travels from a remote client to a master.
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
};

// What a client asks a master for: a session over a graph.
struct OpenSessionRequest {
  std::string graph_json;
  bool allow_soft_placement = false;
  bool log_device_placement = false;
};

struct OpenSessionResult {
  Status status;
  uint64_t session_id = 0;
};

// A step inside a task: from the in-process session (answered through `reply`, a
// condition variable the client thread waits on) or from the front actor for a
// remote client (answered through `promise`).
struct StepRequest {
  FeedList feeds;
  std::vector<std::string> fetches;
  std::vector<std::string> targets;
  RunOptions options;
  // Build RunMetadata (executed nodes; stats when traced) for the reply: only when
  // the caller passed a RunMetadata to fill.
  bool want_metadata = true;
  std::shared_ptr<StepReply> reply;
  caf::response_promise promise;
};

}  // namespace actorflow

// Local-only payloads.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorflow::Closure)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<actorflow::StepRequest>)

#include "actors/wire.h"

#endif  // ACTORFLOW_ACTORS_MESSAGES_H_
