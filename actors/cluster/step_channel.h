// A step channel beside CAF's transport: a remote session sends each step, and gets
// its answer, on a plain TCP connection to the task instead of through CAF's broker.
//
// Why: a remote step through CAF crosses each process's broker thread both ways
// (four hand-offs besides the step's own), and a bare CAF echo between two
// processes already takes 80-115 µs here against 10-20 µs for a TCP round trip
// (tools/bench/floor_bench.cc). On this channel the client's thread writes the step
// and reads the answer itself, and the task's connection thread hands the step to
// the session's master as an in-process session does (a StepRequest answered
// through a StepReply; with one device the master and device run on that thread
// when idle, actors/scheduler/caller_jobs.h). Nothing else changes: the master runs the step,
// enforces its deadline and aborts it as for any other client.
//
// Frame (host byte order; a cluster's processes share one architecture):
//   u32 magic "AFST" | u32 kind (1 step, 2 answer, 3 welcome) | u64 payload bytes |
//   payload: a RemoteStep or RemoteStepResult as CAF's binary serializer writes it
//            (the inspect overloads of actors/protocol/wire.h; tensors as one raw block,
//            written from the tensors' own buffers: actors/transport/gather_serializer.h);
//            none for the welcome, which the server sends first on a connection it
//            takes (one over its limit is closed without it, and the client uses
//            CAF instead).
// A connection carries one step at a time; a client opens one per step in flight
// and keeps it for the next.
//
// A client on the task's host connects through the channel's host-local socket
// (actors/transport/socket_acceptor.h) rather than loopback TCP, and the server offers
// it a mailbox in shared memory with its welcome: both ends then pass frames through
// memory they poll, with no system call while the other polls
// (actors/transport/step_mailbox.h). A client in the task's own
// process (an in-process cluster: `local:worker=N`, LocalCluster) needs no socket:
// its thread hands the step to the master as the connection's thread would, and
// tensors stay by reference.
//
// Reliability: a step not written whole never runs (the server acts only on whole
// frames), so the client sends it over CAF instead. Once sent, a lost connection
// answers Unavailable and a missed deadline DeadlineExceeded, both naming the
// target; a silent server is caught by the session's heartbeat over CAF. The server
// refuses a malformed frame (bad magic or kind, over the size limit, a payload that
// does not parse) by closing that connection; the process goes on. Trust: opened
// only where the CAF port itself takes plain, unauthenticated connections (as the
// bulk channel); with transport security on, steps stay on CAF's TLS path.
//
// Includes CAF (front protocol): actors/*.cc only.
#ifndef ACTORFLOW_ACTORS_CLUSTER_STEP_CHANNEL_H_
#define ACTORFLOW_ACTORS_CLUSTER_STEP_CHANNEL_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "actors/protocol/front_protocol.h"
#include "actors/transport/server_limits.h"
#include "graph/status.h"

namespace actorflow {

struct TaskServices;

struct StepChannelOptions {
  // A frame announcing a larger payload closes its connection (both ends).
  uint64_t max_frame_bytes = uint64_t{512} << 20;
  RequestLimits limits;  // fed tensors over max_fed_tensor_bytes: ResourceExhausted
  int max_connections = 64;
  // Once a frame has begun, the rest of it must arrive within this long.
  int64_t frame_timeout_ms = 30000;
  // An answer not written whole within this long ends its connection.
  int64_t write_timeout_ms = 30000;
  // The task has one device: the step's chain may run on the connection's thread.
  bool run_on_connection_thread = false;
  // How long a connection's thread polls for its step's answer before parking.
  int64_t spin_us = 200;
  // Client: reach a task of this host through its host-local socket rather than TCP
  // (actors/transport/socket_acceptor.h); false: always TCP.
  bool host_local = true;
  // Client: after a connection fails (or is turned away), steps go over CAF for
  // this long before the channel connects again.
  int64_t retry_after_ms = 1000;
  // Client: run a step for a task of this very process on the calling thread, as an
  // in-process session does, with no socket; false: always a socket.
  bool in_process = true;
  // Server: a host-local connection's frames go through shared memory both ways
  // (actors/transport/step_mailbox.h); false: through its Unix socket.
  bool shared_memory = true;
};

// The task's side: listens beside its CAF port and answers steps of the sessions
// its front opened.
class StepChannelServer {
 public:
  static StatusOr<std::unique_ptr<StepChannelServer>> Listen(caf::actor_system& system,
                                                             const std::string& host,
                                                             const std::string& task_name,
                                                             StepChannelOptions options);
  virtual ~StepChannelServer() = default;  // ends every connection and joins its thread
  // Where steps find their sessions' masters (TaskServices::masters). Until then a
  // step is answered Unavailable.
  virtual void Serve(std::shared_ptr<TaskServices> services) = 0;
  virtual uint16_t port() const = 0;
  virtual int64_t steps() const = 0;    // steps answered on sockets
  // Steps of clients in this process, run on their threads (no socket).
  virtual int64_t in_process_steps() const = 0;
  virtual int64_t refused() const = 0;  // connections closed on a malformed frame
  // Connections from this host's clients on the host-local socket, which they use
  // instead of TCP (actors/transport/socket_acceptor.h).
  virtual int64_t local_connections() const = 0;
  // Of those, the connections whose frames go through shared memory
  // (actors/transport/step_mailbox.h).
  virtual int64_t shared_memory_connections() const = 0;
};

// The client's side: connections to one task's step port, reused across steps.
class StepChannelClient {
 public:
  using Clock = std::chrono::steady_clock;
  // While a step waits for its answer: `on_long_wait` runs once after `long_wait`
  // (the session starts its heartbeat), and `lost` is asked every few milliseconds
  // after that; true (with a status) ends the step with it.
  struct Watch {
    std::chrono::milliseconds long_wait{50};
    std::function<void()> on_long_wait;
    std::function<bool(Status*)> lost;
  };
  enum class Outcome {
    kAnswered,  // *result holds the server's answer or the error that ended the step
    kNotSent,   // nothing reached the server whole: send the step another way
  };

  // endpoint: "host:port"; target names the server in errors.
  StepChannelClient(caf::actor_system& system, std::string endpoint, std::string target,
                    StepChannelOptions options, int64_t connect_timeout_ms);
  ~StepChannelClient();  // CloseAll()
  StepChannelClient(const StepChannelClient&) = delete;
  StepChannelClient& operator=(const StepChannelClient&) = delete;

  // Sends `step` and waits for its answer until `deadline` (none: Clock::time_point::max()).
  Outcome Run(const RemoteStep& step, Clock::time_point deadline, const Watch& watch,
              RemoteStepResult* result);
  // Ends every connection: steps waiting on one end Cancelled; later Runs are kNotSent.
  void CloseAll();
  // Steps answered over the channel (tests).
  int64_t steps() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_CLUSTER_STEP_CHANNEL_H_
