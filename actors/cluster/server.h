// A task of a cluster: TensorFlow's tf.train.Server. It owns an actor system with
// CAF's middleman, one device actor per device (their variables outlive sessions
// and clients), and one front actor published on the task's address, which serves
// both services of the task (worker: its devices; master: sessions of remote
// clients) on one port. The front's protocol is documented at FrontActor in
// actors/protocol/front_protocol.h. A server serves any number of sessions over its life:
// closing one frees its master, its plans and its partitions on every device.
//
// Supervision: the front monitors the device actors. A device actor that ends
// other than by Stop() (an exception escaped it, it was killed) is respawned from
// the same DeviceConfig under the same name, keeping its variables (they live in its
// ResourceManager, not in the actor); the task's devices, the sessions' masters and
// later clients get the new actor, and the restart is logged. More than
// max_device_restarts restarts within device_restart_window_ms mark the server
// failed: failure() says why and on_failure runs once, so that the process can exit
// and its supervisor start a fresh one.
// CAF-free header.
#ifndef ACTORFLOW_ACTORS_CLUSTER_SERVER_H_
#define ACTORFLOW_ACTORS_CLUSTER_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "actors/transport/bulk_channel.h"
#include "actors/transport/server_limits.h"
#include "graph/status.h"
#include "kernels/file_access.h"
#include "placement/cluster_spec.h"

namespace actorflow {

// 256 KiB. For small tensors the channel gains nothing measurable (4 KiB steps ran
// at the same rate through it and over CAF in tools/bench/cluster_bench.cc) and
// costs two thread hand-offs more; from 1 MiB on it moves tensors 1.3-2.7x faster.
inline constexpr int64_t kDefaultBulkMinBytes = int64_t{256} << 10;

struct ServerOptions {
  ClusterSpec cluster;
  // When set, SpawnTaskActors uses this spec instead of `cluster`, shared rather than
  // copied: a simulated cluster of W tasks would otherwise hold W copies of a W-task
  // spec (memory quadratic in W).
  std::shared_ptr<const ClusterSpec> shared_cluster;
  TaskId task;
  int cpus = 1;
  // Bind to this port instead of the spec's (0 = any free port; LocalCluster).
  int port_override = -1;
  // The masters of this task's sessions declare another task down when it does not
  // answer a ping within this long while a step uses it (MasterConfig).
  int64_t heartbeat_timeout_ms = DefaultPeerTimeoutMs();
  // What peers may send (actors/transport/server_limits.h): the transport closes connections
  // over `transport`; the front answers requests over `requests` ResourceExhausted.
  TransportLimits transport;
  RequestLimits requests;
  // Where kernels may open files named by the graphs this task runs (CsvReaderRead):
  // a graph comes from whoever reaches the port, so by default none at all.
  // LocalCluster, whose servers live in their client's process, allows any file.
  FileAccessPolicy file_access =
      FileAccessPolicy::DenyAll("start the server with --data-root DIR to allow files under DIR");
  // Device supervision (see above); 0: the first device failure fails the server.
  int max_device_restarts = 5;
  int64_t device_restart_window_ms = 60000;
  // How long an idle scheduler thread polls for work before parking (microseconds;
  // actors/scheduler/spinning_scheduler.h). Bounded: an idle server costs no CPU.
  // The same default as kDefaultSchedulerSpinUs (this header stays CAF-free).
  int64_t scheduler_spin_us = 200;
  // Tensors of at least this many bytes that this task's devices send to devices of
  // other processes go through the bulk channel (actors/transport/bulk_channel.h): a second
  // port on the same host, any free one, advertised with the task's devices. 0: off.
  // Never opened with transport security on (tensors stay on CAF's TLS path).
  int64_t bulk_min_bytes = kDefaultBulkMinBytes;
  // Between processes of one host, the bulk channel's tensors go through shared
  // memory (actors/transport/shared_segments.h); false: through its Unix socket.
  bool bulk_shared_memory = true;
  // Remote sessions send their steps on a plain TCP port of this task's host (any
  // free one) beside the actor transport (actors/cluster/step_channel.h); false: over CAF.
  // Never opened with transport security on.
  bool step_channel = true;
  // Receives one line per device restart or failure; null: standard error.
  std::function<void(const std::string& line)> log;
  // Runs once, on an actor thread, when the server has failed; must not block.
  std::function<void(const Status& failure)> on_failure;
};

class Server {
 public:
  // Starts the task and publishes its front actor on the spec's host (only that
  // interface) and port. Errors: the task is not in the spec (InvalidArgument), the
  // port is in use (Unavailable naming it).
  static StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options);
  // The task a TF_CONFIG names (TfConfigFromEnv), with the other options' defaults:
  // what a driver started by `actorflow launch` runs.
  static StatusOr<std::unique_ptr<Server>> Start(const TfConfig& config);
  virtual ~Server() = default;

  virtual uint16_t port() const = 0;
  virtual std::string host() const = 0;
  // "actorflow://host:port"
  std::string target() const { return "actorflow://" + host() + ":" + std::to_string(port()); }
  // Replaces the cluster spec (LocalCluster fills in the ports it got).
  virtual void SetCluster(const ClusterSpec& cluster) = 0;
  // Stops serving; the destructor does it too.
  virtual void Stop() = 0;
  // OK while the server is healthy; for good once a device kept failing (more
  // restarts than ServerOptions allow): Unavailable naming the device.
  virtual Status failure() const = 0;
  // The bulk channel's traffic: frames received, and frames sent whole or handed to
  // CAF (zeros when the channel is off).
  virtual BulkChannelStats bulk_received() const = 0;
  // "host:port" of the bulk channel's port; empty when it is off.
  virtual std::string bulk_endpoint() const = 0;
  virtual BulkChannelStats bulk_sent() const = 0;
  // The step channel's port (0: off) and the steps it answered (on sockets, and for
  // clients in this process on their own threads).
  virtual uint16_t step_port() const = 0;
  virtual int64_t steps_on_step_channel() const = 0;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_CLUSTER_SERVER_H_
