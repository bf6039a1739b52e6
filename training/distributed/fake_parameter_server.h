// FakeParameterServer: the ParameterClient contract (kernels/parameter_client.h) in
// one process, for testing drivers without an actor system. It holds one parameter
// shard's protocol state (kernels/ps/parameter_shard_state.h; ParameterServerOptions
// names no number of ps tasks, so one shard holds every variable) and drives it as
// the shard actor (actors/ps/parameter_shard.cc) does, and each client speaks the
// worker's side through kernels/ps/shard_worker_protocol.h as the real client does
// (gradients checked against the variables, pushes numbered, snapshots assembled),
// so its rules are the real ones, not a copy: the three update modes, elastic membership,
// staleness and versions, every optimizer the shards apply (sgd, momentum, adam,
// adagrad), learning-rate decay and scaling, coordinated Snapshot, Restore and
// AdvanceGlobalStep.
//
// How the state is driven (under one mutex): each call of a client gets a RequestId
// and a deadline (now + its timeout; none for a timeout <= 0), calls the state and
// delivers the replies that call produced, its own and those of other clients' waiting
// requests that it released, into per-request slots (a push that asked for values gets
// them as the actor attaches them, FillValues). A call whose request was parked waits
// on a condition variable until its slot is filled; whichever waiting call wakes at
// the earliest parked deadline (NextDeadline) expires what is due (Expire), as the
// actor's sweep does, which answers its request with the state's own DeadlineExceeded.
// As the real client, a call gives up 250 ms after its deadline (the state then
// forgets the request, Cancel). A client that is destroyed counts as a lost worker
// (WorkerLost, as the actor counts a worker whose actor died), unless another client
// registered as that worker since.
//
// Thread safety: the server and its clients may be used from any threads (one
// thread per client, as the interface says).
#ifndef ACTORFLOW_TRAINING_DISTRIBUTED_FAKE_PARAMETER_SERVER_H_
#define ACTORFLOW_TRAINING_DISTRIBUTED_FAKE_PARAMETER_SERVER_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "graph/status.h"
#include "kernels/parameter_client.h"
#include "kernels/ps/parameter_shard_state.h"

namespace actorflow {

class FakeParameterServer : public std::enable_shared_from_this<FakeParameterServer> {
 public:
  // Options the shards refuse (ValidateShardConfig) make every client call fail with
  // that InvalidArgument, as ConnectParameterServers would.
  static std::shared_ptr<FakeParameterServer> Create(const ParameterServerOptions& options);

  // A new client (a worker's connection). It keeps the server alive.
  std::unique_ptr<ParameterClient> NewClient();

  // Pushes that reached the shard (applied or not), for tests.
  int64_t pushes_received() const;

 private:
  class Client;
  friend class Client;
  using RequestId = ParameterShardState::RequestId;
  using Lock = std::unique_lock<std::mutex>;

  FakeParameterServer(const ParameterServerOptions& options,
                      StatusOr<std::unique_ptr<ParameterShardState>> shard);

  // The shard's side of the client calls, each the request the real client sends a
  // shard (the client's side is kernels/ps/shard_worker_protocol.h); the shard's
  // answer, or the options' error.
  Status Register(const Client* client, int worker);
  Status InitializeShard(const std::vector<std::string>& names, const std::vector<Tensor>& values);
  StatusOr<ShardPullReply> PullShard(int64_t min_version, int64_t timeout_ms);
  // A push asking for values (push-and-pull) gets them attached to its reply.
  StatusOr<ShardPushReply> PushShard(ShardPushArgs push, int64_t timeout_ms);
  StatusOr<ParameterStats> Stats();
  StatusOr<ParameterSnapshot> Snapshot(int64_t version, int64_t timeout_ms);
  Status Restore(const std::map<std::string, Tensor>& values, int64_t version);
  Status AdvanceGlobalStep(int64_t at_least);
  void Disconnect(const Client* client, int worker);

  // Milliseconds on the steady clock, and a request's deadline on it (the actor's
  // DeadlineFor: kNoDeadline for a timeout <= 0).
  static int64_t NowMs();
  static int64_t DeadlineFor(int64_t timeout_ms);
  // Requires mu_. Puts each reply in its request's slot and wakes the waiting calls.
  void Deliver(ParameterShardState::Replies* out);
  // Requires mu_ (held by `lock`). Waits until request `id` (with `deadline`) has
  // its answer in `slots`, expiring the parked requests whose deadline passed
  // meanwhile; a DeadlineExceeded of its own when it gives up.
  template <typename Reply>
  Reply Await(Lock& lock, std::map<RequestId, Reply>* slots, RequestId id, int64_t deadline);
  // Requires mu_. A cut at `version` (< 0: the shard's own), as the real client's
  // SnapshotAt.
  StatusOr<ParameterSnapshot> SnapshotAtLocked(Lock& lock, int64_t version, int64_t timeout_ms);

  const ParameterServerOptions options_;
  const Status config_status_;  // ValidateShardConfig's verdict on options_
  mutable std::mutex mu_;
  std::condition_variable answered_;
  std::unique_ptr<ParameterShardState> shard_;  // null when config_status_ is not OK
  RequestId next_id_ = 1;
  // Answers that arrived for waiting calls, by request.
  std::map<RequestId, ShardPullReply> pull_replies_;
  std::map<RequestId, ShardPushReply> push_replies_;
  // Pushes whose reply carries the shard's values (push-and-pull).
  std::set<RequestId> values_wanted_;
  // The client each registered worker joined through (the actor's actor_of).
  std::map<int, const Client*> client_of_;
  int64_t pushes_received_ = 0;
};

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DISTRIBUTED_FAKE_PARAMETER_SERVER_H_
