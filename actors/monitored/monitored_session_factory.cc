#include "actors/monitored/monitored_session_factory.h"

#include <utility>

#include "actors/cluster/session_factory.h"

namespace actorflow {

StatusOr<std::unique_ptr<MonitoredTrainingSession>> NewMonitoredTrainingSession(
    Graph* graph, const SessionOptions& session_options, MonitoredTrainingSessionOptions options) {
  auto open = [graph, session_options]() { return NewSession(graph, session_options); };
  return MonitoredTrainingSession::Create(graph, open, std::move(options));
}

StatusOr<std::unique_ptr<MonitoredTrainingSession>> NewMonitoredTrainingSession(
    Graph* graph, const std::string& target, MonitoredTrainingSessionOptions options) {
  SessionOptions session_options;
  session_options.target = target;
  return NewMonitoredTrainingSession(graph, session_options, std::move(options));
}

}  // namespace actorflow
