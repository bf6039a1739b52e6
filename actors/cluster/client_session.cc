#include "actors/cluster/client_session.h"

#include <cassert>
#include <string>

#include "actors/cluster/session_factory.h"

namespace actorflow {
namespace {

// "fetch #2" style position names for errors about empty Outputs.
std::string Position(const char* what, size_t i) {
  return std::string(what) + " #" + std::to_string(i);
}

Status EmptyOutputError(const std::string& position) {
  return InvalidArgument(position +
                         " is an empty Output (the op function that returned it failed; "
                         "Scope::status() says why)");
}

}  // namespace

StatusOr<std::unique_ptr<ClientSession>> ClientSession::Create(const Scope& scope,
                                                               const SessionOptions& options) {
  AF_RETURN_IF_ERROR(scope.status());
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(scope.graph(), options));
  auto client = std::make_unique<ClientSession>(std::move(session));
  client->scope_ = scope;
  return StatusOr<std::unique_ptr<ClientSession>>(std::move(client));
}

StatusOr<std::unique_ptr<ClientSession>> ClientSession::Create(const Scope& scope,
                                                               const std::string& target) {
  SessionOptions options;
  options.target = target;
  return Create(scope, options);
}

StatusOr<std::unique_ptr<ClientSession>> ClientSession::Create(const Graph* graph,
                                                               const SessionOptions& options) {
  if (graph == nullptr) return InvalidArgument("ClientSession::Create: no graph");
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(graph, options));
  return StatusOr<std::unique_ptr<ClientSession>>(
      std::make_unique<ClientSession>(std::move(session)));
}

ClientSession::ClientSession(std::unique_ptr<Session> session) : session_(std::move(session)) {
  assert(session_ != nullptr);
}

Status ClientSession::Run(const std::vector<Output>& fetches, std::vector<Tensor>* outputs) {
  return Run(RunOptions(), {}, fetches, {}, outputs, nullptr);
}

Status ClientSession::Run(const FeedType& feeds, const std::vector<Output>& fetches,
                          std::vector<Tensor>* outputs) {
  return Run(RunOptions(), feeds, fetches, {}, outputs, nullptr);
}

Status ClientSession::Run(const FeedType& feeds, const std::vector<Output>& fetches,
                          const std::vector<RunTarget>& targets, std::vector<Tensor>* outputs) {
  return Run(RunOptions(), feeds, fetches, targets, outputs, nullptr);
}

Status ClientSession::Run(const RunOptions& options, const FeedType& feeds,
                          const std::vector<Output>& fetches,
                          const std::vector<RunTarget>& targets, std::vector<Tensor>* outputs,
                          RunMetadata* metadata) {
  // An op function that failed returned an empty Output and recorded why.
  if (scope_.has_value()) AF_RETURN_IF_ERROR(scope_->status());

  FeedList feed_list;
  feed_list.reserve(feeds.size());
  for (size_t i = 0; i < feeds.size(); ++i) {
    const Output& fed = feeds[i].first;
    if (!fed.valid()) return EmptyOutputError(Position("feed", i));
    feed_list.emplace_back(fed.name(), feeds[i].second.tensor());
  }

  // Fetches of ops without outputs run as targets; `fetched` maps each session
  // fetch back to its slot in `outputs`.
  std::vector<std::string> fetch_names;
  std::vector<std::string> target_names;
  std::vector<size_t> fetched;
  fetch_names.reserve(fetches.size());
  fetched.reserve(fetches.size());
  target_names.reserve(targets.size());
  for (size_t i = 0; i < fetches.size(); ++i) {
    const Output& fetch = fetches[i];
    if (!fetch.valid()) return EmptyOutputError(Position("fetch", i));
    if (fetch.node->num_outputs() == 0) {
      target_names.push_back(fetch.node->name());
    } else {
      fetch_names.push_back(fetch.name());
      fetched.push_back(i);
    }
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    if (targets[i].name().empty()) {
      return InvalidArgument(Position("target", i) +
                             " names no op: an empty Output (the op function that returned "
                             "it failed; Scope::status() says why), a null Node or an empty "
                             "name");
    }
    target_names.push_back(targets[i].name());
  }

  if (fetched.size() == fetches.size()) {
    // Every fetch has outputs: the session fills `outputs` in order itself.
    return session_->Run(options, feed_list, fetch_names, target_names, outputs, metadata);
  }
  std::vector<Tensor> values;
  AF_RETURN_IF_ERROR(
      session_->Run(options, feed_list, fetch_names, target_names, &values, metadata));
  if (outputs != nullptr) {
    outputs->assign(fetches.size(), Tensor());
    for (size_t k = 0; k < fetched.size() && k < values.size(); ++k) {
      (*outputs)[fetched[k]] = std::move(values[k]);
    }
  }
  return Status::OK();
}

}  // namespace actorflow
