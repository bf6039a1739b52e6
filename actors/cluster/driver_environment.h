// DriverEnvironment: where a driver's Server::Start(TfConfig) and its sessions'
// targets lead when the driver runs as a thread of a process that hosts its cluster
// (a SimulatedCluster's RunDrivers, actors/sim/simulated_cluster.h) instead of as a
// process of its own. The process installs one on each driver thread; the driver's
// code is the same as under `actorflow launch`: Server::Start(TfConfigFromEnv())
// gives a server whose target() this environment serves, and NewSession(graph,
// {target}) opens a session of that in-process cluster.
// CAF-free header.
#ifndef ACTORFLOW_ACTORS_CLUSTER_DRIVER_ENVIRONMENT_H_
#define ACTORFLOW_ACTORS_CLUSTER_DRIVER_ENVIRONMENT_H_

#include <memory>
#include <string>

#include "graph/graph.h"
#include "graph/status.h"
#include "kernels/session.h"
#include "placement/cluster_spec.h"

namespace actorflow {

class Server;

class DriverEnvironment {
 public:
  virtual ~DriverEnvironment() = default;
  // What Server::Start(config) returns on a thread of this environment.
  virtual StatusOr<std::unique_ptr<Server>> StartServer(const TfConfig& config) = 0;
  // Whether NewSession should open `target` here.
  virtual bool Serves(const std::string& target) const = 0;
  // A session of `graph` on `target` (one this environment serves).
  virtual StatusOr<std::unique_ptr<Session>> OpenSession(const Graph* graph,
                                                         const SessionOptions& options) = 0;
};

// The calling thread's environment; null for a driver that is a process of its own.
DriverEnvironment* CurrentDriverEnvironment();

// Installs `environment` on the calling thread while it lives.
class ScopedDriverEnvironment {
 public:
  explicit ScopedDriverEnvironment(DriverEnvironment* environment);
  ~ScopedDriverEnvironment();
  ScopedDriverEnvironment(const ScopedDriverEnvironment&) = delete;
  ScopedDriverEnvironment& operator=(const ScopedDriverEnvironment&) = delete;

 private:
  DriverEnvironment* previous_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_CLUSTER_DRIVER_ENVIRONMENT_H_
