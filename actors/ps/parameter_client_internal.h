// The ParameterClient behind ConnectParameterServers (actors/ps/parameter_client_impl.h):
// one class whose methods are defined by three files, one concern each:
//   parameter_client_impl.cc        construction, Connect, and the training path:
//                                   Register, Initialize, Pull, Push, Stats
//   parameter_client_failover.cc    getting shards from the ps tasks' fronts, standbys
//                                   (ps_replicas 2), FailOver to a standby or an empty
//                                   replacement, AdvanceGlobalStep after a recovery
//   parameter_client_checkpoint.cc  coordinated Snapshot and Restore
// Every request to the shards goes through the client's fan-out actor
// (actors/ps/shard_fanout.h), which owns the shard handles.
//
// Internal to //actors/ps:parameter_client_impl (listed in its srcs, not its hdrs):
// included only by those actors/*.cc files (CAF).
// Thread safety: as ParameterClient (one thread per client).
#ifndef ACTORFLOW_ACTORS_PS_PARAMETER_CLIENT_INTERNAL_H_
#define ACTORFLOW_ACTORS_PS_PARAMETER_CLIENT_INTERNAL_H_

#include <algorithm>
#include <caf/all.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "actors/transport/bulk_channel.h"
#include "actors/protocol/front_protocol.h"
#include "actors/ps/parameter_client_impl.h"
#include "actors/ps/shard_fanout.h"
#include "actors/protocol/shard_messages.h"
#include "graph/status.h"
#include "kernels/parameter_client.h"
#include "kernels/ps/shard_worker_protocol.h"
#include "placement/cluster_spec.h"
#include "placement/ps_strategy.h"

namespace actorflow {
namespace parameter_client_internal {

using Clock = std::chrono::steady_clock;
using PullReply = ShardPullReply;
using PushReply = ShardPushReply;
using ShardStats = ShardStats;

// A blocked call waits this much past its timeout, so that the shard's own
// DeadlineExceeded (which says what the request waited for) usually arrives first.
constexpr int64_t kDeadlineGraceMs = 250;

struct Deadline {
  bool bounded = false;
  Clock::time_point at;

  static Deadline After(int64_t timeout_ms) {
    Deadline d;
    d.bounded = timeout_ms > 0;
    d.at = Clock::now() + std::chrono::milliseconds(std::max<int64_t>(timeout_ms, 0));
    return d;
  }
  // What is left for a shard to wait, in ms (0 = unbounded).
  int64_t LeftMs() const {
    if (!bounded) return 0;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at - Clock::now()).count();
    return std::max<int64_t>(left, 1);
  }
  caf::duration RequestTimeout() const {
    if (!bounded) return caf::infinite;
    return caf::duration{std::chrono::milliseconds(LeftMs() + 5000)};
  }
  Clock::time_point WaitUntil() const { return at + std::chrono::milliseconds(kDeadlineGraceMs); }
};

class ParameterClientImpl : public ParameterClient {
 public:
  // --- parameter_client_impl.cc: construction, connect, the training path.
  ParameterClientImpl(const ParameterServerOptions& options,
                      const ParameterClientOptions& client_options, int64_t setup_timeout_ms);
  ~ParameterClientImpl() override;

  // Connects to the ps tasks and gets their shards.
  Status Connect(const ClusterSpec& cluster, const std::string& ps_job, int64_t timeout_ms);

  Status Register(int worker) override;
  Status Initialize(const std::map<std::string, Tensor>& initial_values) override;
  StatusOr<ParameterSnapshot> Pull(int64_t timeout_ms) override;
  StatusOr<PushResult> Push(const ParameterSnapshot& base,
                            const std::map<std::string, Tensor>& gradients,
                            int64_t timeout_ms) override;
  StatusOr<PushResult> PushAndPull(const ParameterSnapshot& base,
                                   const std::map<std::string, Tensor>& gradients,
                                   int64_t timeout_ms, ParameterSnapshot* next) override;
  StatusOr<ParameterStats> Stats(int64_t timeout_ms) override;

  // --- parameter_client_failover.cc: shards, standbys, failover and recovery.

  // Gets (or creates) the shard `name` from a ps task's front.
  StatusOr<ShardActor> GetShard(const FrontActor& front, const std::string& name,
                                const std::string& task_name, const Deadline& deadline);

  // ps_replicas 2: shard i's standby is "<shard name>/standby_of_<i>" on ps task
  // i + 1 (mod the tasks); every primary is told its standby (idempotent).
  Status ConnectStandbys(const std::vector<ShardActor>& primaries,
                         const std::vector<FrontActor>& fronts, const Deadline& deadline);

  StatusOr<FailOverReport> FailOver(int64_t timeout_ms) override;

  // Runs `fn` inside the fan-out actor (which owns the shard handles) and waits for
  // it; `fn` must own what it touches (it may run after a timeout here).
  Status AskFanOut(std::function<void(FanOutActor*)> fn, const Deadline& deadline);

  Status AdvanceGlobalStep(int64_t at_least, int64_t timeout_ms) override;

  // --- parameter_client_checkpoint.cc: coordinated snapshots and restores.
  StatusOr<ParameterSnapshot> Snapshot(int64_t version, int64_t timeout_ms) override;
  Status Restore(const std::map<std::string, Tensor>& values, int64_t version,
                 int64_t timeout_ms) override;

 private:
  // --- parameter_client_impl.cc

  // The bulk channel endpoint a ps task's front advertises with its devices; "" when
  // it has none or does not say in time.
  std::string AskBulkEndpoint(const FrontActor& front, const Deadline& deadline);

  // When the task's bulk channel serves shard position t: writes the gradients of
  // `push` on it and leaves only their key in `push`, and asks for the reply's values
  // on values_receiver_; each only when big enough (bulk_min_bytes). Otherwise
  // leaves `push` as it is.
  void SendApart(int t, ShardPushArgs* push);

  // Whether shard position t is still the ps task's own shard with a bulk channel.
  bool BulkServes(int t) const;

  // Opens values_receiver_ (see ParameterClientOptions::bulk_reply_host); without
  // it, or when it cannot listen, values stay in the replies.
  void OpenValuesReceiver(const std::vector<std::string>& ps_hosts);

  // Push and, when `next` is given, push-and-pull: `next` becomes the snapshot the
  // replies carry, or stays empty (no shard_versions) when they do not make a
  // consistent one (sync shards answering at different versions).
  StatusOr<PushResult> PushImpl(const ParameterSnapshot& base,
                                const std::map<std::string, Tensor>& gradients,
                                int64_t timeout_ms, ParameterSnapshot* next);

  // --- parameter_client_checkpoint.cc

  Status HoldAll(bool hold, const Deadline& deadline);

  // Every shard's values at `version` (< 0: each shard's (async) or the newest
  // (sync) current version, read from the shards' stats).
  StatusOr<ParameterSnapshot> SnapshotAt(int64_t version, const Deadline& deadline);

  // --- Shared by the three files.

  int NumShards() const { return static_cast<int>(names_.size()); }
  std::vector<int> AllShards() const {
    std::vector<int> all(NumShards());
    for (int i = 0; i < NumShards(); ++i) all[i] = i;
    return all;
  }

  // Sends one request per target (args_of(position) -> tuple of the message) through
  // the fan-out actor.
  template <class Reply, class ArgsOf>
  std::shared_ptr<Call<Reply>> Fan(const std::vector<int>& targets, const Deadline& deadline,
                                   ArgsOf args_of) {
    std::vector<std::string> names;
    for (int t : targets) names.push_back(names_[t]);
    auto call = std::make_shared<Call<Reply>>(targets, names);
    using Args = decltype(args_of(size_t{0}));
    std::vector<Args> args;
    for (size_t pos = 0; pos < targets.size(); ++pos) args.push_back(args_of(pos));
    const caf::duration timeout = deadline.RequestTimeout();
    caf::anon_send(fanout_, FanOutTask{[call, args, timeout](FanOutActor* self) {
                     SendToTargets<Reply>(self, call, timeout,
                                          [&args](size_t pos) { return args[pos]; });
                   }});
    return call;
  }

  Status WaitFor(const std::shared_ptr<CallBase>& call, const Deadline& deadline,
                 const std::string& what) {
    return call->Wait(deadline.bounded, deadline.WaitUntil(), what);
  }

  ParameterServerOptions options_;
  ParameterClientOptions client_options_;
  int64_t setup_timeout_ms_;
  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> system_;
  caf::actor fanout_;
  caf::actor worker_actor_;
  std::vector<std::string> names_;  // per ps task: "/job:ps/task:i at host:port"
  std::vector<std::string> addresses_;  // per ps task: "host:port"
  // ps_replicas 2: each shard's standby, its name, the ps task that holds it, and
  // whether it took over already.
  std::vector<ShardActor> standbys_;
  std::vector<std::string> standby_names_;
  std::vector<int> standby_hosts_;
  std::vector<bool> failed_over_;
  // Every ps task's front (for replacements), and which shards were replaced.
  std::vector<FrontActor> fronts_;
  std::vector<bool> replaced_;
  // Per ps task: its bulk channel's endpoint ("" when it has none); this client's id
  // in bulk keys; the sender, made on the first push that uses it.
  std::vector<std::string> bulk_endpoints_;
  std::string bulk_client_id_;
  std::unique_ptr<BulkSender> bulk_sender_;
  // Receives the values of push replies sent apart (null: they stay in the replies).
  std::unique_ptr<BulkReceiver> values_receiver_;
  // The worker's side of the shard protocol (made by Connect): the registered
  // worker, push sequence numbers, where each variable lives, what a pull's and a
  // push's replies make.
  ShardWorkerProtocol protocol_;
};

}  // namespace parameter_client_internal
}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_PS_PARAMETER_CLIENT_INTERNAL_H_
