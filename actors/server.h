// A task of a cluster: TensorFlow's tf.train.Server. It owns an actor system with
// CAF's middleman, one device actor per device (their variables outlive sessions
// and clients), and one front actor published on the task's address, which serves
// both services of the task (worker: its devices; master: sessions of remote
// clients) on one port. The front's protocol is documented at FrontActor in
// actors/front_protocol.h. A server serves any number of sessions over its life:
// closing one frees its master, its plans and its partitions on every device.
// CAF-free header.
#ifndef ACTORFLOW_ACTORS_SERVER_H_
#define ACTORFLOW_ACTORS_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "graph/status.h"
#include "placement/cluster_spec.h"

namespace actorflow {

struct ServerOptions {
  ClusterSpec cluster;
  TaskId task;
  int cpus = 1;
  // Bind to this port instead of the spec's (0 = any free port; LocalCluster).
  int port_override = -1;
  // The masters of this task's sessions declare another task down when it does not
  // answer a ping within this long while a step uses it (MasterConfig).
  int64_t heartbeat_timeout_ms = 2000;
};

class Server {
 public:
  // Starts the task and publishes its front actor on the spec's host (only that
  // interface) and port. Errors: the task is not in the spec (InvalidArgument), the
  // port is in use (Unavailable naming it).
  static StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options);
  virtual ~Server() = default;

  virtual uint16_t port() const = 0;
  virtual std::string host() const = 0;
  // "actorflow://host:port"
  std::string target() const { return "actorflow://" + host() + ":" + std::to_string(port()); }
  // Replaces the cluster spec (LocalCluster fills in the ports it got).
  virtual void SetCluster(const ClusterSpec& cluster) = 0;
  // Stops serving; the destructor does it too.
  virtual void Stop() = 0;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SERVER_H_
