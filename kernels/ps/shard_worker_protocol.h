// A worker's side of the parameter shard protocol, as a state machine without I/O:
// it takes the shards' replies and gives the next requests and snapshots. One
// implementation of the worker's rules for the parameter client over shard actors
// (actors/ps/parameter_client_internal.h) and the simulated worker driver
// (actors/sim/sim_worker.cc); they do the sending, waiting, deadlines and retries.
//
// Contract, in call order (shards are numbered 0..num_shards-1, as the caller's
// connections are):
//   1. JoinedAs(worker) once the shards accepted the worker's join; it numbers the
//      pushes from 1 again.
//   2. The chief: PlanInitialization(values), send plan.names[s]/plan.values[s] to
//      shard s, and Initialized(plan) once they accepted it.
//   3. A pull: StartPull() gives the first round; send a pull with the round's
//      min_version to each of its shards, AddPullReply() every answer, then
//      NextPullRound(); repeat while it names shards. Then snapshot() is the pull's
//      result; a failed pull starts over with StartPull().
//   4. A push: PlanPush(base, gradients) gives one ShardPushArgs per shard to send;
//      fold the answers with PushResultOf(), and (push-and-pull) take the next
//      snapshot from SnapshotFromPushReplies(), which is empty when the caller must
//      pull instead.
// Locations and shapes of the variables are learned from Initialized() and from
// every reply carrying values; PlanPush() validates gradients against them.
//
// Sync catch-up (UpdateMode::kSync: every shard must be at the same version for a
// consistent snapshot), two named rules; a pull's replies that disagree are caught up
// by one of them:
//   kPullShardsBehind    pull the shards behind again with min_version = the newest
//                        version seen: they answer once they reach it. For callers
//                        whose messages arrive or fail the call (the parameter client).
//   kPushToShardsBehind  the snapshot stays as pulled; the next push goes only to the
//                        shards at the oldest version, whose push-and-pull replies
//                        leave the snapshot incomplete, so the caller pulls again. For
//                        callers whose messages may be dropped (the simulator): a
//                        shard behind may wait for the very gradient that was lost,
//                        and a pull parked at min_version would wait for it in vain.
//
// CAF-free. Thread safety: none; one owner calls it (the client's thread, the
// driver actor).
#ifndef ACTORFLOW_KERNELS_PS_SHARD_WORKER_PROTOCOL_H_
#define ACTORFLOW_KERNELS_PS_SHARD_WORKER_PROTOCOL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/parameter_client.h"
#include "kernels/ps/shard_payloads.h"

namespace actorflow {

// Which shard holds each variable, given every variable's size in bytes: a
// deterministic function every worker computes alike (placement/ps_strategy.h's
// AssignVariablesByBytes bound to a strategy; kernels/ cannot name placement/).
using ShardAssigner = std::function<StatusOr<std::map<std::string, int>>(
    const std::map<std::string, int64_t>& bytes, int num_shards)>;

// How kSync pulls whose shards disagree are caught up: see "Sync catch-up" above.
enum class SyncCatchUp { kPullShardsBehind, kPushToShardsBehind };

struct ShardWorkerOptions {
  int num_shards = 0;
  UpdateMode mode = UpdateMode::kAsync;
  SyncCatchUp catch_up = SyncCatchUp::kPullShardsBehind;
  ShardAssigner assign;  // needed by PlanInitialization only
};

// What the chief sends each shard to initialize it.
struct InitializationPlan {
  std::map<std::string, int> shard_of;          // variable -> shard
  std::vector<std::vector<std::string>> names;  // [num_shards], sorted
  std::vector<std::vector<Tensor>> values;      // [num_shards], parallel to names
};

// One round of a pull: ask each of `shards` for its values at min_version or later.
struct PullRound {
  std::vector<int> shards;
  int64_t min_version = 0;
};

// A push as sent: args[i] goes to shard shards[i].
struct PushPlan {
  std::vector<int> shards;
  std::vector<ShardPushArgs> args;
};

class ShardWorkerProtocol {
 public:
  ShardWorkerProtocol() = default;
  explicit ShardWorkerProtocol(ShardWorkerOptions options);

  int num_shards() const { return options_.num_shards; }

  void JoinedAs(int worker);
  int worker() const { return worker_; }  // -1 until JoinedAs

  // InvalidArgument naming the variable unless every value is a float32 or float64
  // tensor (`described_as` names the values in that message: "initial value"), or
  // the assigner's error.
  StatusOr<InitializationPlan> PlanInitialization(
      const std::map<std::string, Tensor>& values,
      const std::string& described_as = "initial value") const;
  // The shards hold the plan's variables: remembers where and what they are.
  void Initialized(const InitializationPlan& plan);

  // Starts a pull's snapshot (versions 0, nothing held) and gives its first round:
  // every shard, min_version 0. snapshot() stays the last complete one meanwhile.
  PullRound StartPull();
  // Folds shard `shard`'s answer in; the reply's error, folding nothing, when it has
  // one. A shard holds variables when it names some; the membership is that of the
  // lowest-numbered shard holding variables.
  Status AddPullReply(int shard, const ShardPullReply& reply);
  // After every reply of a round: the next round, or one without shards when the
  // pull is done and its snapshot became snapshot(). kSync with kPullShardsBehind:
  // the shards holding variables behind the newest version, at min_version = the
  // newest. Otherwise none.
  PullRound NextPullRound();

  // The last complete snapshot (a pull's, or one SnapshotFromPushReplies made), and
  // whether each shard held variables in it.
  const ParameterSnapshot& snapshot() const { return snapshot_; }
  bool Holds(int shard) const { return holds_[shard]; }
  // The newest and oldest version among the shards holding variables (0 if none).
  int64_t NewestVersion() const;
  int64_t OldestVersion() const;

  // The bytes of the known variables that live on `shard`.
  int64_t BytesHeldBy(int shard) const;

  // The push of `gradients` on `base` (a snapshot of this protocol's shards), split
  // per shard with base versions and the next sequence number. Every gradient must
  // match a known variable's dtype and shape and every known variable needs one;
  // InvalidArgument saying so otherwise (nothing is planned or numbered);
  // FailedPrecondition before JoinedAs. kSync with kPushToShardsBehind: only the
  // shards at the oldest base version among those the push reaches. No shard at all
  // (and no sequence number used) when no variable is known yet.
  StatusOr<PushPlan> PlanPush(const ParameterSnapshot& base,
                              const std::map<std::string, Tensor>& gradients,
                              bool return_values);

  // The push's result from the shards' replies (AddShardPushReply): the first
  // reply's error for a push a shard did not apply.
  static StatusOr<PushResult> PushResultOf(const std::vector<ShardPushReply>& replies);

  // The values push-and-pull replies (parallel to plan.shards) carried, as a pull
  // would have returned them; it becomes snapshot(). Empty (no shard_versions),
  // leaving snapshot() as it was, when they make no complete snapshot: a shard
  // holding variables was not pushed to, a reply carries no values, or (kSync) the
  // replies are at different versions.
  ParameterSnapshot SnapshotFromPushReplies(const ParameterSnapshot& base, const PushPlan& plan,
                                            const std::vector<ShardPushReply>& replies);

 private:
  struct Like {
    DType dtype;
    Shape shape;
  };
  void Remember(const std::string& name, int shard, const Tensor& value);
  Status ValidateGradients(const std::map<std::string, Tensor>& gradients) const;

  ShardWorkerOptions options_;
  int worker_ = -1;
  uint64_t next_sequence_ = 1;
  // Where each variable lives and what it looks like (from Initialized and replies).
  std::map<std::string, int> location_;
  std::map<std::string, Like> like_;
  // The last complete snapshot, and the pull in progress, each with which shards
  // hold variables in it ([num_shards]).
  ParameterSnapshot snapshot_;
  std::vector<bool> holds_;
  ParameterSnapshot pulling_;
  std::vector<bool> pulling_holds_;
  int membership_from_ = 0;  // the shard pulling_'s membership came from
};

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_PS_SHARD_WORKER_PROTOCOL_H_
