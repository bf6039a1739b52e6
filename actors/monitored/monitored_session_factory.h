// NewMonitoredTrainingSession: a MonitoredTrainingSession (training/monitored/
// monitored_session.h) whose sessions are opened by NewSession
// (actors/cluster/session_factory.h), so a user names only the target: "" (the actor
// runtime in this process), "direct", or "actorflow://host:port" (a task of a
// cluster: its own worker's, in between-graph replication).
//
//   auto setter = ReplicaDeviceSetter(cluster, "/job:worker/task:" + std::to_string(k));
//   Scope root = Scope::NewRootScope();
//   Scope model = root.WithDeviceFunction(*setter);   ... build, CreateGlobalStep ...
//   MonitoredTrainingSessionOptions options;
//   options.is_chief = k == 0;
//   AF_ASSIGN_OR_RETURN(auto mts, NewMonitoredTrainingSession(root.graph(), target, options));
//
// CAF-free header.
#ifndef ACTORFLOW_ACTORS_MONITORED_MONITORED_SESSION_FACTORY_H_
#define ACTORFLOW_ACTORS_MONITORED_MONITORED_SESSION_FACTORY_H_

#include <memory>
#include <string>

#include "graph/graph.h"
#include "graph/status.h"
#include "kernels/session.h"
#include "training/monitored/monitored_session.h"

namespace actorflow {

// MonitoredTrainingSession::Create with sessions from NewSession(graph, options).
// Errors: NewSession's (an unknown target, an unreachable master) and Create's.
// Precondition: `graph` outlives the monitored session.
StatusOr<std::unique_ptr<MonitoredTrainingSession>> NewMonitoredTrainingSession(
    Graph* graph, const SessionOptions& session_options, MonitoredTrainingSessionOptions options);

// The same with SessionOptions.target = target and every other session option default.
StatusOr<std::unique_ptr<MonitoredTrainingSession>> NewMonitoredTrainingSession(
    Graph* graph, const std::string& target, MonitoredTrainingSessionOptions options);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_MONITORED_MONITORED_SESSION_FACTORY_H_
