// The protocol state of one parameter shard (a ps task's share of a model's
// variables), kept apart from the actor (actors/ps/parameter_shard.h) so that every rule
// is testable without a scheduler, and so that training/ can use the same rules in
// one process (training/distributed/fake_parameter_server.h drives it from threads).
// The owner turns requests into calls here and delivers the replies these calls
// produce; a request that cannot be answered yet is parked under the RequestId the
// owner gave it (the actor maps ids to response promises), and is answered later by
// the call that releases it, or by Expire at its deadline.
//
// The protocols (see kernels/parameter_client.h for the client's view):
//   kAsync  a push is applied on arrival; version += 1; its staleness is
//           version - base_version at arrival.
//   kSync   a push computed on the current version v joins the accumulation of v and
//           is parked; the replicas_to_aggregate-th one averages them (sum / R),
//           applies the update once, bumps v and releases every parked push of v
//           (applied, staleness 0). A push computed on an older version is dropped at
//           once (not applied, staleness = v - base). A parked push whose deadline
//           passes is answered DeadlineExceeded; its gradient stays accumulated.
//   kStaleSynchronous (bound s)  applied as in kAsync; the worker's clock (its
//           number of pushes) += 1; the reply is parked while its clock exceeds the
//           smallest clock of the live workers by more than s.
// Live workers are the indices 0..total_replicas-1 minus those lost (their actor
// died) or gone (they left); a worker that never joined counts as live at clock 0.
// Under kSync, when fewer live workers remain than replicas_to_aggregate, parked and
// new pushes fail with Unavailable naming the missing workers (instead of stalling).
// A pull waits (parked) until the chief's Initialize and until version >= its
// min_version.
//
// Coordinated checkpoints (training/checkpoint/ps_checkpoint.h drives them):
//   SnapshotAt(v)  the variables and the optimizer slots (ShardOptimizer's
//           "<var>/<suffix>" tensors) at exactly version v: at once when the shard
//           is at v; parked until it reaches v when it is behind (or not initialized
//           yet); from the retained previous version when it is exactly one past v
//           (every update keeps the values and slots it replaces, sharing their
//           buffers, which makes the optimizer copy instead of writing in place: one
//           copy of the variables and of their slots per update); FailedPrecondition
//           when it is further past. Under kSync every shard
//           bumps its version once per global step, so the chief cuts all shards at
//           one v and gets a consistent model.
//   Hold/Release  the cut of kAsync and SSP, where versions do not meet: the chief
//           holds every shard (new pushes are parked unapplied, in arrival order),
//           reads every shard at its current version, and releases (the held pushes
//           are then applied in order). A push already applied on one shard and
//           held on another is split by such a cut; async training tolerates that.
//   Restore  replaces the variables, their optimizer slots and the version (a
//           restarted ps task, or a rollback to a checkpoint): a fresh optimizer
//           that imports the slots given (a variable given none, as in a checkpoint
//           of sgd or one written without slots, starts with fresh ones), the kSync
//           accumulation dropped, parked pushes answered Aborted (their gradients
//           were computed on values that no longer exist), parked pulls of versions
//           <= the restored one released. The version restored is never below
//           the floor (next).
//   RaiseVersion(f)  the global step never goes backwards: after a recovery each
//           worker raises every shard's version to at least the highest global step
//           it saw (a restore to an older checkpoint keeps that floor, and a floor
//           raised before the restore is kept by it). Raising a version does not
//           change the variables; it drops the kSync accumulation and answers the
//           parked kSync pushes as stale (not applied): they were computed on an
//           older version.
// A snapshot restored with its slots continues exactly where the cut was taken,
// for every rule (sgd has no slots; adam's slots include its beta powers).
//
// Every push is checked whole before anything changes: one gradient per variable of
// the shard, each with the variable's dtype and shape; otherwise InvalidArgument
// naming the variable, and nothing is applied or accumulated.
//
// Times (deadlines, `now`) are milliseconds on whatever clock the owner uses;
// kNoDeadline never passes. Thread safety: none (one owner: the shard actor, or the
// in-process double under its mutex). CAF-free.
#ifndef ACTORFLOW_KERNELS_PS_PARAMETER_SHARD_STATE_H_
#define ACTORFLOW_KERNELS_PS_PARAMETER_SHARD_STATE_H_

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kernels/ps/shard_payloads.h"
#include "kernels/ps/shard_config.h"
#include "kernels/ps/shard_optimizer.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/parameter_client.h"

namespace actorflow {

class ParameterShardState {
 public:
  using RequestId = uint64_t;
  static constexpr int64_t kNoDeadline = std::numeric_limits<int64_t>::max();

  using PullReply = ShardPullReply;
  using PushReply = ShardPushReply;
  // What a call produced: replies to deliver now (including released parked ones).
  struct Replies {
    std::vector<PullReply> pulls;
    std::vector<PushReply> pushes;
  };

  using Stats = ShardStats;

  // `name` names the shard in every message ("/job:ps/replica:0/task:0 shard p").
  static StatusOr<std::unique_ptr<ParameterShardState>> Create(std::string name,
                                                               ShardConfig config);

  // Creates the variables (float32/float64 only, distinct names) and releases the
  // parked pulls. AlreadyExists when the shard was already initialized (its values
  // and version are kept); InvalidArgument naming a bad variable.
  Status Initialize(const std::vector<std::string>& names, const std::vector<Tensor>& values,
                    Replies* out);
  void Pull(RequestId id, int64_t min_version, int64_t deadline, Replies* out);
  // The values and slots at exactly `version` (see the top of this file); the reply
  // is a PullReply whose version is `version`.
  void SnapshotAt(RequestId id, int64_t version, int64_t deadline, Replies* out);
  // Replaces every variable, its optimizer slots (`slot_names` "<var>/<suffix>",
  // parallel to `slot_values`; see ShardOptimizer::ImportSlots) and the version.
  // InvalidArgument (nothing changes) for a negative version, a bad variable (as
  // Initialize) or a bad slot (naming it).
  Status Restore(const std::vector<std::string>& names, const std::vector<Tensor>& values,
                 const std::vector<std::string>& slot_names,
                 const std::vector<Tensor>& slot_values, int64_t version, Replies* out);
  // The same with no slots: every variable starts with fresh ones.
  Status Restore(const std::vector<std::string>& names, const std::vector<Tensor>& values,
                 int64_t version, Replies* out) {
    return Restore(names, values, {}, {}, version, out);
  }
  // Raises the version to at least `floor` (a no-op when it is higher already) and
  // remembers the floor for later Restores; see the top of this file.
  void RaiseVersion(int64_t floor, Replies* out);
  // Holds (true) or releases (false) pushes; releasing applies the held ones.
  void Hold(bool hold, Replies* out);
  void Push(RequestId id, const ShardPushArgs& push, int64_t deadline, Replies* out);

  // Worker membership. Join (re)admits a worker: a lost or gone one becomes live
  // again with its SSP clock raised to the slowest live worker's (it must not hold
  // the others back for the pushes it missed). InvalidArgument outside
  // 0..total_replicas-1.
  // Elastic (ShardConfig::elastic, kSync): only joined workers are live and may push.
  // Each version waits for the gradients of its members: the workers live when it
  // opened (a worker joining while no gradient of the current version has arrived,
  // or while training is paused, joins the current version; otherwise the next). A
  // member lost or leaving is dropped from its version at once, and the gradients
  // that arrived complete it; so does the first parked push's deadline, with the
  // gradients that arrived by then, and the members that sent none are evicted
  // (they must Join again to push). A version with fewer than min_workers members
  // does not complete (training pauses); its pushes are answered Unavailable at
  // their deadlines, saying so, until workers join. Every join, loss or leave bumps
  // the membership epoch.
  Status Join(int worker, Replies* out);
  void Leave(int worker, Replies* out);
  // Elastic: `worker` says it computes its next gradient on version `version` or
  // later (its sync pull found another shard there already). A version before that
  // one stops waiting for it (it stays a member of the later ones) and completes
  // when the gradients of the others arrived, unless it would then have fewer than
  // min_workers members. Why: shards decide a newcomer's first version each on its
  // own (see Join), so one shard may wait for it at a version the others completed
  // without it, while the newcomer waits for that shard to reach theirs. A gradient
  // of `worker` already here still counts. No-op outside elastic training.
  void WillPushFrom(int worker, int64_t version, Replies* out);
  // Elastic: whether `worker` is a live member now.
  bool IsLiveMember(int worker) const { return Elastic() && members_.count(worker) > 0; }
  // `how`: the transport's account of the loss, for the stats (lost_causes); may
  // be empty.
  void WorkerLost(int worker, Replies* out, std::string how = "");

  // Answers every parked request whose deadline is <= now with DeadlineExceeded.
  void Expire(int64_t now, Replies* out);
  // Forgets a parked request without answering it (its requester is gone).
  void Cancel(RequestId id);
  // The earliest deadline of a parked request; kNoDeadline when none.
  int64_t NextDeadline() const;

  // The current variables and optimizer slots ("<var>/<suffix>"), sorted by name,
  // for a standby's Restore (shared buffers, read-only).
  void ExportCurrent(std::vector<std::string>* names, std::vector<Tensor>* values,
                     std::vector<std::string>* slot_names,
                     std::vector<Tensor>* slot_values) const;
  // Attaches the current variables and version to a push reply (push-and-pull).
  void FillValues(PushReply* reply) const;

  Stats GetStats() const;
  const std::string& name() const { return name_; }
  const ShardConfig& config() const { return config_; }
  int64_t version() const { return version_; }
  bool initialized() const { return initialized_; }

 private:
  struct ParkedPull {
    int64_t min_version = 0;
    int64_t deadline = kNoDeadline;
  };
  struct ParkedPush {
    int worker = 0;
    int64_t staleness = 0;
    int64_t deadline = kNoDeadline;
  };
  struct HeldPush {
    RequestId id = 0;
    ShardPushArgs push;
    int64_t deadline = kNoDeadline;
  };
  // Checks the variables of Initialize and Restore into `vars`.
  Status CheckVariables(const std::vector<std::string>& names, const std::vector<Tensor>& values,
                        std::map<std::string, Tensor>* vars) const;
  void ReleaseSnapshots(Replies* out);

  ParameterShardState(std::string name, ShardConfig config,
                      std::unique_ptr<ShardOptimizer> optimizer);

  Status CheckPush(const ShardPushArgs& push) const;
  PullReply Snapshot(RequestId id) const;
  // Applies one update from per-variable gradients (parallel to variables_' order).
  void ApplyUpdate(const std::vector<Tensor>& gradients);
  // kSync: records worker push.worker's gradient for version_ (replacing, and
  // answering, an earlier one of the same worker), and applies the average of the
  // pending gradients.
  void AddPending(RequestId id, const ShardPushArgs& push, Replies* out);
  void ApplyPending();
  // After the version moved: releases satisfied pulls (and, kSync, the waiters).
  void ReleasePulls(Replies* out);
  void ReleaseSsp(Replies* out);
  // kSync: fails the parked pushes when the live workers cannot complete a version.
  void CheckSyncCoverage(Replies* out);
  Status SyncCoverage() const;
  // kSync: averages the pending gradients into one update, answers the parked pushes
  // (applied, with the count) and opens the next version.
  void CompleteSyncVersion(Replies* out);
  // Elastic: completes the version when every member's gradient arrived.
  void TryCompleteElasticVersion(Replies* out);
  // Elastic: the members of a newly opened version are the live workers.
  void OpenElasticVersion();
  bool Elastic() const { return config_.elastic && config_.mode == UpdateMode::kSync; }
  void MemberJoined(int worker, Replies* out);
  void MemberGone(int worker, const char* kind, Replies* out);
  // Elastic, at a step deadline: the members of the version that sent nothing leave.
  void EvictSilentMembers();
  // Bumps the membership epoch and records the change at the current version.
  void RecordMembershipChange(const char* kind, int worker);
  std::string PausedReason() const;
  bool IsLive(int worker) const;
  // "; none from workers 1, 3" naming the live workers whose gradient for the
  // current sync version has not arrived ("" when none is missing).
  std::string MissingPushers() const;
  int64_t MinLiveClock() const;  // -1 when no worker is live

  std::string name_;
  ShardConfig config_;
  std::unique_ptr<ShardOptimizer> optimizer_;

  bool initialized_ = false;
  std::map<std::string, Tensor> variables_;  // name -> value
  int64_t version_ = 0;
  // The highest version any worker reported seeing (RaiseVersion): no Restore goes
  // below it.
  int64_t version_floor_ = 0;
  // The lowest version whose values are variables_: every version from it to
  // version_ holds the same values, since RaiseVersion relabels without updating.
  // A cut at any of them is the current values.
  int64_t values_since_ = 0;

  // kSync: the gradients pushed for version_, one per worker (by variable, in
  // variables_' order), and the request that brought each.
  struct PendingGradient {
    RequestId request = 0;
    std::vector<Tensor> gradients;
  };
  std::map<int, PendingGradient> pending_;

  std::vector<int64_t> clocks_;          // [total_replicas]
  std::vector<int64_t> applied_by_worker_;  // [total_replicas]
  std::vector<uint64_t> last_sequence_;  // [total_replicas]
  std::set<int> lost_;
  std::map<int, std::string> lost_how_;  // of lost_, where the loss was accounted for
  std::set<int> left_;
  // Elastic: the joined, live workers; the members the current version waits for.
  std::set<int> members_;
  std::set<int> version_members_;
  int64_t membership_epoch_ = 0;
  std::vector<int64_t> updates_by_aggregated_;  // [total_replicas + 1]
  int64_t applied_gradients_ = 0;
  int64_t updates_lost_ = 0;
  std::vector<MembershipChange> membership_changes_;
  MembershipView Membership() const;

  std::map<RequestId, ParkedPull> parked_pulls_;
  std::map<RequestId, ParkedPush> parked_pushes_;  // kSync waiters or SSP-parked
  // Snapshot requests waiting for their version: id -> (version, deadline).
  std::map<RequestId, std::pair<int64_t, int64_t>> parked_snapshots_;
  // The values of values_since_ - 1 and their slots (kept by every update); empty
  // before the first and after a RaiseVersion.
  std::map<std::string, Tensor> previous_;
  std::map<std::string, Tensor> previous_slots_;
  bool hold_ = false;
  std::vector<HeldPush> held_;

  int64_t dropped_stale_ = 0;
  int64_t staleness_sum_ = 0;
  int64_t staleness_count_ = 0;
  int64_t max_staleness_ = 0;
};

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_PS_PARAMETER_SHARD_STATE_H_
