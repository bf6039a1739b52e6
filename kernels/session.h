// Session: the CAF-free interface every session implements (DirectSession here; the
// actor-based local and remote sessions in actors/), and what drivers and training/
// program against. TensorFlow 1.x's names and semantics:
//
//   Run(feeds, fetches, targets) runs only the nodes that the fetches and targets
//   need, stopping at fed tensors, and returns the fetched tensors in order.
//
// Lifetime: the Graph passed at creation must outlive the session. Nodes may be
// appended to the graph between runs (graphs are append-only); they become visible
// to the next Run.
// Thread safety: Run may be called from several threads at once; Close and the
// destructor must not race with Run.
#ifndef ACTORFLOW_KERNELS_SESSION_H_
#define ACTORFLOW_KERNELS_SESSION_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"
#include "graph/tensor.h"

namespace actorflow {

// The threads and connections that sessions on remote targets talk through
// (NewClientRuntime in actors/cluster/remote_session.h makes one; opaque here). Sessions
// given the same runtime share them, so a program that opens many sessions one
// after another (a hyperparameter search) starts threads and connects to each task
// once, not once per session. Lives as long as its last holder.
class ClientRuntime {
 public:
  virtual ~ClientRuntime() = default;

 protected:
  ClientRuntime() = default;
};

struct SessionOptions {
  // Where the session runs (actors/cluster/session_factory.h reads it): "" or "local" = the
  // actor runtime in this process, "direct" = a DirectSession, "actorflow://host:port"
  // = the master of that task.
  std::string target;
  // Devices of the local task by type, e.g. {"CPU": 2, "GPU": 1} (TensorFlow's
  // device_count). Absent types get their default (1 CPU, every GPU found).
  std::map<std::string, int> device_count;
  bool allow_soft_placement = false;
  bool log_device_placement = false;
  int inter_op_parallelism_threads = 0;  // 0 = the runtime picks
  // How long an idle scheduler thread of the in-process actor runtime, and the thread
  // waiting in Run, poll for the next message before parking (microseconds; 0 = park
  // at once). Polling saves the wake-ups between a step's hand-offs; it is bounded,
  // so an idle session costs no CPU. The same default as actors/scheduler/spinning_scheduler.h's
  // kDefaultSchedulerSpinUs (this header stays free of the actor runtime).
  int64_t scheduler_spin_us = 200;
  // Deadline for each blocking op (queues, Recv) when RunOptions sets none; 0 = none.
  // Honoured by the in-process actor session; a remote master's devices keep their own.
  int64_t operation_timeout_in_ms = 0;
  // The deadline of every step whose RunOptions.timeout_in_ms is 0; 0 = none.
  // How the deadlines combine: a step's deadline is RunOptions.timeout_in_ms when it
  // is > 0, else this; each blocking op inside the step is bounded as well by
  // operation_timeout_in_ms (or the op's own timeout). Whichever passes first ends
  // the step with DeadlineExceeded, naming the step's deadline or the blocked op.
  int64_t default_step_timeout_in_ms = 0;
  // Remote targets (actorflow://host:port): how long opening the session may take
  // (connecting to the master, retrying refused connections of a task still
  // starting, sending the graph), and re-sending the graph after nodes were added.
  // Past it: Unavailable naming the target. Must be > 0.
  int64_t connect_timeout_in_ms = 30000;
  // Remote targets: while a step runs, the master's task is pinged every quarter of
  // this; when it does not answer within this long (a hung or unreachable process,
  // whose connection may still look open) the step ends with Unavailable naming the
  // target, instead of at its deadline. 0 = only a closed connection is noticed.
  int64_t heartbeat_timeout_in_ms = 2000;
  // Remote targets: send steps on the server's step channel, a plain TCP port beside
  // its actor transport, when it has one (not with transport security); false: every
  // step goes through the actor transport. Same behaviour either way, only faster.
  bool step_channel = true;
  // Remote targets: the client runtime to talk through, shared with other sessions
  // (and with ResetCluster); null: the session makes its own and ends it when it is
  // destroyed.
  std::shared_ptr<ClientRuntime> client_runtime;
};

struct RunOptions {
  enum class TraceLevel { kNoTrace, kFullTrace };
  TraceLevel trace_level = TraceLevel::kNoTrace;
  // Deadline of the whole step; 0 = SessionOptions.default_step_timeout_in_ms (none
  // when that is 0 too). Exceeding it is DeadlineExceeded.
  int64_t timeout_in_ms = 0;
};

// One node's execution in a traced step.
struct NodeExecStats {
  std::string node_name;
  std::string op;
  std::string device;
  int64_t start_micros = 0;  // since the step started
  int64_t end_micros = 0;
  uint64_t thread_id = 0;
};

// The tensors that one step moved from one device to another (Send to Recv), summed
// per ordered pair of devices. bytes counts each tensor's data (Tensor::TotalBytes),
// not message headers.
struct CrossDeviceTransfer {
  std::string src_device;  // full device name of the Send
  std::string dst_device;  // full device name of the Recv
  int64_t tensors = 0;
  int64_t bytes = 0;

  bool operator==(const CrossDeviceTransfer& o) const {
    return src_device == o.src_device && dst_device == o.dst_device && tensors == o.tensors &&
           bytes == o.bytes;
  }
};

// How far a device's clock was from the master's during a traced step, estimated
// from the run request and its reply (Cristian's method): the device's clock read
// when it replied, minus the midpoint of the master's send and receive times.
// uncertainty_micros is half the round trip: the true offset lies within
// offset_micros +- uncertainty_micros. The master corrects a device's times only
// when |offset| exceeds the uncertainty (on one host every process shares one
// monotonic clock, and the estimate then stays within it).
struct DeviceClockOffset {
  std::string device;
  int64_t offset_micros = 0;       // device clock - master clock; 0 when not corrected
  int64_t uncertainty_micros = 0;
  bool operator==(const DeviceClockOffset& o) const {
    return device == o.device && offset_micros == o.offset_micros &&
           uncertainty_micros == o.uncertainty_micros;
  }
};

// What a step reports about itself when the caller passes a RunMetadata to Run. It
// costs work per node (names, clock reads): a session may skip that work for a
// caller that passes none (the in-process actor session does).
struct RunMetadata {
  // The graph's own nodes that the step ran, in execution (start) order; each once.
  std::vector<std::string> executed_nodes;
  // Filled when RunOptions.trace_level is kFullTrace.
  std::vector<NodeExecStats> step_stats;
  // Cross-device traffic of the step, sorted by (src_device, dst_device); empty for
  // a step on one device (and from sessions without devices, e.g. DirectSession).
  std::vector<CrossDeviceTransfer> transfers;
  // With kFullTrace, from sessions with several devices: the Send and Recv nodes the
  // partitioner inserted (named "_send/<tensor>/to_<device>" and "_recv/<tensor>/to_
  // <device>", so a pair shares the part after the prefix), on the same clock as
  // step_stats; and each device's clock offset, one entry per device of the step.
  std::vector<NodeExecStats> transfer_stats;
  std::vector<DeviceClockOffset> clock_offsets;
};

// A feed: tensor name ("x" or "x:1") and its value.
using FeedList = std::vector<std::pair<std::string, Tensor>>;

class Session {
 public:
  virtual ~Session() = default;

  // Fetches and targets are tensor/node names. On success `outputs` holds one
  // tensor per fetch, in order. Errors name the culprit: InvalidArgument for a wrong
  // feed (dtype, shape, unknown name) or a placeholder that needs a feed, NotFound
  // for an unknown fetch or target, FailedPrecondition for an uninitialized
  // variable, DeadlineExceeded past RunOptions.timeout_in_ms, Cancelled/
  // FailedPrecondition after Close.
  virtual Status Run(const RunOptions& options, const FeedList& feeds,
                     const std::vector<std::string>& fetches,
                     const std::vector<std::string>& targets, std::vector<Tensor>* outputs,
                     RunMetadata* metadata) = 0;

  Status Run(const FeedList& feeds, const std::vector<std::string>& fetches,
             const std::vector<std::string>& targets, std::vector<Tensor>* outputs) {
    return Run(RunOptions(), feeds, fetches, targets, outputs, nullptr);
  }

  // Releases resources; later Runs fail with FailedPrecondition. A remote session
  // returns once the server has freed the session's master and partitions (bounded
  // by SessionOptions.connect_timeout_in_ms; Unavailable if the server did not say).
  virtual Status Close() = 0;
};

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_SESSION_H_
