// The device actor's protocol: its atoms, payloads and typed interface
// (DeviceActor). Included only by actors/*.cc and actors headers that are themselves
// included only there (CAF). Payloads that cross processes have `inspect` overloads
// in actors/protocol/wire.h; Closure is local-only.
#ifndef ACTORFLOW_ACTORS_PROTOCOL_DEVICE_PROTOCOL_H_
#define ACTORFLOW_ACTORS_PROTOCOL_DEVICE_PROTOCOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "actors/protocol/wire_core.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/session.h"
#include "placement/partition.h"

namespace actorflow {

using register_atom = caf::atom_constant<caf::atom("register")>;
using deregister_atom = caf::atom_constant<caf::atom("deregister")>;
using run_atom = caf::atom_constant<caf::atom("run")>;
using tensor_atom = caf::atom_constant<caf::atom("tensor")>;
using abort_atom = caf::atom_constant<caf::atom("abort")>;
using peers_atom = caf::atom_constant<caf::atom("peers")>;
using device_stats_atom = caf::atom_constant<caf::atom("dstats")>;
using resume_atom = caf::atom_constant<caf::atom("resume")>;
using recv_timeout_atom = caf::atom_constant<caf::atom("recvtmo")>;
using direct_run_atom = caf::atom_constant<caf::atom("directrun")>;

struct DevicePeer;

// A partition registered once with its device, then run step after step. `peers`
// are the devices its Sends go to. partition_id is unique among the partitions of
// every master that shares the device (actors/runtime/step_ids.h).
struct PartitionRegistration {
  uint64_t partition_id = 0;
  std::shared_ptr<const DevicePartition> partition;
  std::vector<DevicePeer> peers;
  // The registering master's session (KernelContext::session_scope): resources
  // private to it are dropped with its last partition on the device.
  uint64_t session_scope = 0;
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
  // With collect_stats: this device's steady clock (micros) when it replied, for the
  // master's clock-offset estimate (DeviceClockOffset); 0 otherwise.
  int64_t device_clock_micros = 0;
  // With record_executed: what this device's Sends moved to each other device in the
  // step (src_device is this device), by destination.
  std::vector<CrossDeviceTransfer> transfers;
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

// Work a device posts to itself (a kernel's RunAfter or Post); local-only.
struct Closure {
  std::function<void()> fn;
};

// What a device reports about itself (tests assert nothing is left pending and no
// partition is left registered).
struct DeviceStats {
  std::string device;
  int64_t pending_recvs = 0;
  int64_t inbox_tensors = 0;
  int64_t active_steps = 0;
  int64_t partitions = 0;
};

// The answer to a step an in-process session sent straight to its device
// (direct_run_atom): filled once by the device, waited on by the session's thread.
struct PartitionReply {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  // `done`, readable without the lock: a waiter may poll it before parking on cv.
  std::atomic<bool> ready{false};
  RunPartitionResult result;
  // The device did not know the partition: nothing of the step ran, so the session
  // may send it again through the master (which registers the plan anew).
  bool not_run = false;

  // Notifies after unlocking (see StepReply::Deliver); the first answer wins.
  // Contract: the caller holds a shared_ptr to this reply until Deliver returns.
  void Deliver(RunPartitionResult&& r, bool unknown_partition = false) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (done) return;
      result = std::move(r);
      not_run = unknown_partition;
      done = true;
      ready.store(true, std::memory_order_release);
    }
    cv.notify_all();
  }
};

// A step sent straight to a device (direct_run_atom). Its reply is answered exactly
// once: by the step's end or abort, or, if the run is dropped unanswered (its device
// ended with it in the mailbox or running), by this destructor with Unavailable
// naming the device, so that no session waits for a device that is gone.
struct DirectRun {
  RunPartitionRequest request;
  std::shared_ptr<PartitionReply> reply;
  // The device's name, shared with its DirectPlan: a step copies a pointer, not the
  // name, and only this destructor's message reads it.
  std::shared_ptr<const std::string> device;

  DirectRun() = default;
  DirectRun(const DirectRun&) = delete;
  DirectRun& operator=(const DirectRun&) = delete;
  ~DirectRun() {
    if (reply == nullptr || reply->ready.load(std::memory_order_acquire)) return;
    RunPartitionResult r;
    r.status = Unavailable("device " + (device != nullptr ? *device : std::string("(unnamed)")) +
                           " ended before answering step " +
                           std::to_string(request.step_id));
    reply->Deliver(std::move(r));
  }
};

}  // namespace actorflow

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorflow::Closure)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<actorflow::DirectRun>)

namespace actorflow {

// The device actor (SpawnDeviceActor, actors/runtime/device_actor.h): one per device; it
// runs the partitions registered with it and is the receiving end of every Send
// addressed to its device. It never blocks its thread: a Recv with no tensor yet
// parks a callback that the tensor's arrival (or the step's abort) fires.
//
//   (register_atom, PartitionRegistration) -> Status
//       Builds the partition's kernels and executor under partition_id (replacing a
//       partition of that id) and adds `peers`. An error names the node and device.
//   (deregister_atom, vector<uint64> partition_ids) -> Status
//       Forgets those partitions (unknown ids are ignored: a master deregisters
//       everything it may have registered). A step still running on one finishes
//       normally. Always OK. The other half of register: a master that closes
//       deregisters every partition it registered, so a long-lived device does not
//       accumulate the partitions of finished sessions.
//   (run_atom, RunPartitionRequest) -> RunPartitionResult, when the step ends
//       Runs one step of a registered partition (Internal naming the partition for
//       an unknown one; the abort's status at once for an aborted step).
//       record_executed: fill executed_nodes (and with collect_stats step_stats);
//       false skips all per-node bookkeeping (no clock reads, no name copies).
//   (direct_run_atom, shared_ptr<DirectRun>)
//       Local-only: the same run, answered through the DirectRun's reply instead of
//       as a response (an in-process session's step of a one-partition plan, sent
//       without its master; an unknown partition answers with not_run set).
//   (tensor_atom, TensorDelivery)
//       A Send's tensor; early ones wait in an inbox, those of aborted steps are
//       dropped.
//   (abort_atom, AbortRequest)
//       Ends the step here: its run is answered with the abort's status at once, its
//       pending Recvs fail, its early tensors go, its waiting queue requests are
//       withdrawn (their queues stay usable), and its late messages are dropped.
//   (peers_atom, vector<DevicePeer>)
//       The other devices, for Sends (monitored; a newer actor for a name replaces
//       the old one, a dead one is forgotten).
//   (device_stats_atom) -> DeviceStats
//   (resume_atom, Closure)
//       Internal (local-only): a kernel's scheduled callback, run on the actor.
//   (recv_timeout_atom, string key)
//       Internal: the delayed message that fails Recv `key` with DeadlineExceeded
//       if it still waits (DeviceConfig::operation_timeout_in_ms).
using DeviceActor = caf::typed_actor<
    caf::replies_to<register_atom, PartitionRegistration>::with<Status>,
    caf::replies_to<deregister_atom, std::vector<uint64_t>>::with<Status>,
    caf::replies_to<run_atom, RunPartitionRequest>::with<RunPartitionResult>,
    caf::reacts_to<direct_run_atom, std::shared_ptr<DirectRun>>,
    caf::reacts_to<tensor_atom, TensorDelivery>,
    caf::reacts_to<abort_atom, AbortRequest>,
    caf::reacts_to<peers_atom, std::vector<DevicePeer>>,
    caf::replies_to<device_stats_atom>::with<DeviceStats>,
    caf::reacts_to<resume_atom, Closure>,
    caf::reacts_to<recv_timeout_atom, std::string>>;

// A device as other actors know it.
struct DevicePeer {
  std::string name;  // full device name
  std::string type;  // "CPU", "GPU", ...
  DeviceActor actor;
  // Where its process's bulk channel listens ("host:port"; actors/transport/bulk_channel.h),
  // for large tensors from other processes; empty: CAF's transport only.
  std::string bulk_endpoint;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_PROTOCOL_DEVICE_PROTOCOL_H_
