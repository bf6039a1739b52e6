#include "actors/cluster/session_factory.h"

#include <string>

#include "actors/cluster/driver_environment.h"
#include "actors/runtime/local_session.h"
#include "actors/cluster/remote_session.h"
#include "kernels/direct_session.h"

namespace actorflow {

StatusOr<std::unique_ptr<Session>> NewSession(const Graph* graph, const SessionOptions& options) {
  const std::string& target = options.target;
  if (options.default_step_timeout_in_ms < 0) {
    return InvalidArgument("SessionOptions.default_step_timeout_in_ms must be >= 0, got " +
                           std::to_string(options.default_step_timeout_in_ms));
  }
  if (DriverEnvironment* environment = CurrentDriverEnvironment();
      environment != nullptr && environment->Serves(target)) {
    return environment->OpenSession(graph, options);
  }
  if (target.empty() || target == "local") {
    AF_ASSIGN_OR_RETURN(std::unique_ptr<ActorSession> session, NewActorSession(graph, options));
    return std::unique_ptr<Session>(std::move(session));
  }
  if (target == "direct") return NewDirectSession(graph, options);
  if (target.rfind("actorflow://", 0) == 0) {
    if (options.connect_timeout_in_ms <= 0) {
      return InvalidArgument("SessionOptions.connect_timeout_in_ms must be > 0, got " +
                             std::to_string(options.connect_timeout_in_ms) + " (target " +
                             target + ")");
    }
    return NewRemoteSession(graph, options, options.connect_timeout_in_ms);
  }
  return InvalidArgument("unknown session target '" + target +
                         "' (expected \"\", \"local\", \"direct\" or actorflow://HOST:PORT)");
}

}  // namespace actorflow
