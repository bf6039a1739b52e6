#include "actors/cluster/client_session.h"

#include <cassert>
#include <string>

#include "actors/cluster/session_factory.h"
#include "graph/output_fetches.h"

namespace actorflow {
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
    if (!fed.valid()) return EmptyOutputError("feed", i);
    feed_list.emplace_back(fed.name(), feeds[i].second.tensor());
  }

  // Fetches of ops without outputs run as targets.
  AF_ASSIGN_OR_RETURN(OutputFetches split, SplitOutputFetches(fetches));
  std::vector<std::string>& target_names = split.target_names;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (targets[i].name().empty()) {
      return InvalidArgument("target #" + std::to_string(i) +
                             " names no op: an empty Output (the op function that returned "
                             "it failed; Scope::status() says why), a null Node or an empty "
                             "name");
    }
    target_names.push_back(targets[i].name());
  }

  if (split.all_fetched()) {
    // Every fetch has outputs: the session fills `outputs` in order itself.
    return session_->Run(options, feed_list, split.fetch_names, target_names, outputs, metadata);
  }
  std::vector<Tensor> values;
  AF_RETURN_IF_ERROR(
      session_->Run(options, feed_list, split.fetch_names, target_names, &values, metadata));
  split.PlaceValues(std::move(values), outputs);
  return Status::OK();
}

}  // namespace actorflow
