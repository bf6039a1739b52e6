#include "training/monitored/session_run_hook.h"

namespace actorflow {

SessionRunContext::SessionRunContext(Session* session,
                                     const std::vector<std::string>& original_fetches,
                                     const std::vector<std::string>& original_targets)
    : session_(session), original_fetches_(original_fetches), original_targets_(original_targets) {}

Session* SessionRunContext::session() const { return session_; }

const std::vector<std::string>& SessionRunContext::original_fetches() const {
  return original_fetches_;
}

const std::vector<std::string>& SessionRunContext::original_targets() const {
  return original_targets_;
}

void SessionRunContext::RequestStop() { stop_requested_ = true; }

bool SessionRunContext::stop_requested() const { return stop_requested_; }

}  // namespace actorflow
