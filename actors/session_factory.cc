#include "actors/session_factory.h"

#include "actors/local_session.h"
#include "actors/remote_session.h"
#include "kernels/direct_session.h"

namespace actorflow {

StatusOr<std::unique_ptr<Session>> NewSession(const Graph* graph, const SessionOptions& options) {
  const std::string& target = options.target;
  if (target.empty() || target == "local") {
    AF_ASSIGN_OR_RETURN(std::unique_ptr<ActorSession> session, NewActorSession(graph, options));
    return std::unique_ptr<Session>(std::move(session));
  }
  if (target == "direct") return NewDirectSession(graph, options);
  if (target.rfind("actorflow://", 0) == 0) return NewRemoteSession(graph, options);
  return InvalidArgument("unknown session target '" + target +
                         "' (expected \"\", \"local\", \"direct\" or actorflow://HOST:PORT)");
}

}  // namespace actorflow
