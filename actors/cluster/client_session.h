// ClientSession: runs a graph built with the C++ builder API (graph/scope.h) and
// names feeds, fetches and targets by the Outputs that the op functions returned,
// not by strings: TensorFlow C++'s tensorflow::ClientSession.
//
//   Scope root = Scope::NewRootScope();
//   auto x = Placeholder(root, DType::kFloat32);
//   auto y = Mul(root, x, 2.0f);
//   AF_ASSIGN_OR_RETURN(auto session, ClientSession::Create(root));  // actor runtime
//   std::vector<Tensor> out;
//   AF_RETURN_IF_ERROR(session->Run({{x, 3.0f}}, {y}, &out));  // out[0]: float32 [] 6
//
// The session underneath comes from NewSession (actors/cluster/session_factory.h), so
// SessionOptions.target picks it: "" = the actor runtime in this process, "direct" =
// one device without actors, "actorflow://host:port" = a remote master (a Server or
// a LocalCluster task).
//
// Feeds are (Output, value) pairs; a value is a Tensor or a literal as op functions
// take them (3.0f, 2, {1.0f, 2.0f}). Fetches are Outputs; `outputs` gets one tensor
// per fetch, in order. Targets are ops run for their effect, given as an Output, a
// Node or a node name. A fetch of an op without outputs (the train op that
// Optimizer::Minimize returns, GlobalVariablesInitializer's op) runs it as a target,
// and its slot in `outputs` holds an empty Tensor (IsInitialized() false), so
// `Run({{x, batch}}, {loss, train_op}, &out)` is one training step that also
// returns the loss.
//
// Errors: those of Session::Run; the scope's first build error (Scope::status())
// when the session was created from a Scope whose op functions failed; and
// InvalidArgument for an empty Output (the result of a failed op function) among
// the feeds, fetches or targets, naming its position.
//
// Lifetime: the graph must outlive the session; one created from a Scope keeps the
// scope's graph alive itself. Nodes may be added to the graph between runs.
// Thread safety: as Session (Run from several threads at once; not racing Close or
// the destructor). CAF-free header.
#ifndef ACTORFLOW_ACTORS_CLUSTER_CLIENT_SESSION_H_
#define ACTORFLOW_ACTORS_CLUSTER_CLIENT_SESSION_H_

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "graph/scope.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/session.h"

namespace actorflow {

// The value of one feed: a Tensor or a literal (float literals are float32, integer
// literals int32, as for op functions' Inputs).
class FeedValue {
 public:
  FeedValue(Tensor t) : tensor_(std::move(t)) {}  // NOLINT: implicit by design
  FeedValue(float v) : tensor_(Tensor::Scalar(v)) {}  // NOLINT
  FeedValue(double v) : tensor_(Tensor::Scalar(v)) {}  // NOLINT
  FeedValue(int32_t v) : tensor_(Tensor::Scalar(v)) {}  // NOLINT
  FeedValue(int64_t v) : tensor_(Tensor::Scalar(v)) {}  // NOLINT
  FeedValue(bool v) : tensor_(Tensor::Scalar(v)) {}  // NOLINT
  FeedValue(std::initializer_list<float> v)  // NOLINT
      : tensor_(Tensor::FromVector(std::vector<float>(v))) {}
  FeedValue(std::initializer_list<int32_t> v)  // NOLINT
      : tensor_(Tensor::FromVector(std::vector<int32_t>(v))) {}

  const Tensor& tensor() const { return tensor_; }

 private:
  Tensor tensor_;
};

// An op run for its effect: an Output (its node), a Node, or a node name.
class RunTarget {
 public:
  RunTarget(const Output& op) : name_(op.node != nullptr ? op.node->name() : "") {}  // NOLINT
  RunTarget(const Node* node) : name_(node != nullptr ? node->name() : "") {}  // NOLINT
  RunTarget(std::string node_name) : name_(std::move(node_name)) {}  // NOLINT
  RunTarget(const char* node_name) : name_(node_name) {}  // NOLINT

  // Empty for an empty Output or a null Node.
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

class ClientSession {
 public:
  // {{x, tensor}, {y, 3.0f}}: each Output fed with a value.
  using FeedType = std::vector<std::pair<Output, FeedValue>>;

  // A session on `scope`'s graph (kept alive by the session). Errors: the scope's
  // first build error; NewSession's (an unknown target, an unreachable master).
  static StatusOr<std::unique_ptr<ClientSession>> Create(
      const Scope& scope, const SessionOptions& options = SessionOptions());
  // The same with only a target ("", "direct", "actorflow://host:port").
  static StatusOr<std::unique_ptr<ClientSession>> Create(const Scope& scope,
                                                         const std::string& target);
  // A session on a graph the caller keeps alive. InvalidArgument for a null graph.
  static StatusOr<std::unique_ptr<ClientSession>> Create(
      const Graph* graph, const SessionOptions& options = SessionOptions());

  // Wraps a session the caller opened (any Session: NewSession's, a test's), for the
  // Output-based calls. Precondition: `session` is not null.
  explicit ClientSession(std::unique_ptr<Session> session);

  ClientSession(const ClientSession&) = delete;
  ClientSession& operator=(const ClientSession&) = delete;

  // Evaluates `fetches` (see the top of this file for ops without outputs).
  Status Run(const std::vector<Output>& fetches, std::vector<Tensor>* outputs);
  Status Run(const FeedType& feeds, const std::vector<Output>& fetches,
             std::vector<Tensor>* outputs);
  // Also runs `targets`, whose outputs are not returned (`outputs` may be null when
  // there are no fetches).
  Status Run(const FeedType& feeds, const std::vector<Output>& fetches,
             const std::vector<RunTarget>& targets, std::vector<Tensor>* outputs);
  // With a step deadline or tracing (RunOptions) and what the step reports
  // (`metadata` may be null).
  Status Run(const RunOptions& options, const FeedType& feeds, const std::vector<Output>& fetches,
             const std::vector<RunTarget>& targets, std::vector<Tensor>* outputs,
             RunMetadata* metadata);

  // The session underneath, for the name-based API (Saver, DNNClassifier drivers).
  Session* session() const { return session_.get(); }

  // Releases the session's resources; later Runs fail with FailedPrecondition.
  Status Close() { return session_->Close(); }

 private:
  // Keeps a scope's graph (and its build status) alive; empty for Create(Graph*).
  std::optional<Scope> scope_;
  std::unique_ptr<Session> session_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_CLUSTER_CLIENT_SESSION_H_
