// ParameterClient: what a data-parallel worker sees of the parameter servers. The
// variables of a model live in parameter shard actors on the ps tasks (actors/
// implements this interface); a worker pulls a snapshot, computes gradients on its
// own mini-batch, and pushes them. How pushes become updates is the shards' mailbox
// protocol, chosen by UpdateMode:
//   kAsync  a pushed gradient is applied on arrival; a pull returns the latest values.
//   kSync   for version v, the shard averages `replicas_to_aggregate` gradients
//           computed on v (out of `total_replicas`; the rest are backup workers),
//           applies once, bumps v and releases the waiting pushes. A gradient computed
//           on an older version is dropped and its push says by how many versions.
//   kStaleSynchronous (SSP, bound s): like async, but a worker more than s pushes
//           ahead of the slowest live worker waits (its request parked, not a thread).
// Workers that die are noticed (the shards monitor registered workers) and no longer
// hold back SSP or count as lost in the stats.
//
// Lives beside Session (kernels/) because both sides use it: training/ drives it,
// actors/ implements it.
//
// Thread safety: one client per worker thread.
#ifndef ACTORFLOW_KERNELS_PARAMETER_CLIENT_H_
#define ACTORFLOW_KERNELS_PARAMETER_CLIENT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/default_learning_rate.h"
#include "kernels/optimizer_rules.h"

namespace actorflow {

enum class UpdateMode { kAsync, kSync, kStaleSynchronous };

// "sync", "async", "ssp:S" -> mode and staleness bound; InvalidArgument otherwise.
Status ParseUpdateMode(const std::string& text, UpdateMode* mode, int* staleness_bound);

struct ParameterServerOptions {
  UpdateMode mode = UpdateMode::kSync;
  int total_replicas = 1;         // workers pushing gradients
  int replicas_to_aggregate = 1;  // kSync: gradients averaged per version (<= total)
  int staleness_bound = 0;        // kStaleSynchronous
  // The update rule the shards apply: "sgd", "momentum", "adam", "adagrad".
  std::string optimizer = "sgd";
  double learning_rate = kDefaultLearningRate;
  // kSync with elastic membership: workers join and leave, each update averages the
  // gradients of the workers live for its version (at least min_workers; fewer
  // pauses training), total_replicas is the number of worker slots.
  bool elastic = false;
  int min_workers = 1;
  std::string lr_scaling = "none";  // or "linear": lr * aggregated / total_replicas
  // The learning rate decays with each shard's version (its updates applied so far).
  LearningRateDecay lr_decay;
};

// Elastic training: the workers a synchronous version waits for (sorted task
// indices), the membership epoch (changes so far), and the gradients applied so far
// over all updates, which is where the data cursor of the next version stands.
struct MembershipView {
  std::vector<int> members;
  int64_t epoch = 0;
  int64_t applied_gradients = 0;
};

// The words by which a shard's answer says why a push was not taken, so that a
// driver tells them from other errors of the same code (one spelling, used by both
// sides): an elastic version paused below min_workers (Unavailable), and a worker
// that is no longer a member and must Register again (FailedPrecondition).
inline constexpr char kTrainingPausedText[] = "training paused";
inline constexpr char kRegisterAgainText[] = "must Register again";

// One change of an elastic training's membership, as a shard saw it.
struct MembershipChange {
  // "join"; "leave" (the worker closed its client); "lost" (its actor died); or
  // "timeout" (it sent no gradient by a step deadline and was evicted).
  std::string kind;
  int worker = 0;
  int64_t global_step = 0;  // the shard's version when it happened
  bool operator==(const MembershipChange& o) const {
    return kind == o.kind && worker == o.worker && global_step == o.global_step;
  }
};

// A consistent view of the parameters, and the versions it was taken at (one per
// shard, opaque to drivers: hand it back to Push).
struct ParameterSnapshot {
  std::map<std::string, Tensor> values;
  // Snapshot only (Pull leaves it empty): the shards' optimizer slots at the cut,
  // "<var>/<suffix>" as kernels/ps/shard_optimizer.h names them (momentum
  // "<var>/Momentum", adagrad "<var>/Adagrad", adam "<var>/Adam_m", "<var>/Adam_v",
  // "<var>/Adam_beta1_power", "<var>/Adam_beta2_power"; none for sgd). Read-only.
  std::map<std::string, Tensor> slots;
  std::vector<int64_t> shard_versions;
  // Updates applied so far (the global step as the shards see it).
  int64_t global_step = 0;
  // Elastic sync only (else empty): as the first shard holding variables saw it.
  MembershipView membership;
};

struct PushResult {
  bool applied = true;     // false: dropped as stale (kSync)
  int64_t staleness = 0;   // versions between the snapshot and the update it joined
  int64_t global_step = 0;
  // kSync: the gradients the update this push joined averaged (elastic: the live
  // membership of its version); 0 when not applied.
  int aggregated = 0;
};

struct ParameterStats {
  int64_t updates_applied = 0;
  int64_t gradients_dropped_stale = 0;
  double mean_staleness = 0;
  std::vector<int> workers_lost;  // worker indices the shards saw die
  // How a lost worker was lost, where a shard could tell: "its connection closed
  // (...)" or "nothing came from it for 2.6 s, not even heartbeats (...)".
  std::map<int, std::string> lost_causes;
  std::vector<int> workers_left;  // worker indices that left (their client closed)
  // Elastic sync: the changes in order (from the first shard), and updates by the
  // number of gradients they averaged, [total_replicas + 1].
  std::vector<MembershipChange> membership_changes;
  std::vector<int64_t> updates_by_aggregated;
  // Versions a recovery skipped (AdvanceGlobalStep past a shard's version): updates
  // lost with a ps task; the largest over the shards.
  int64_t updates_lost = 0;
  // Shards that hold no initialized variables: a fresh start, or a ps task that
  // restarted (its shard came back empty).
  int shards_uninitialized = 0;
};

class ParameterClient {
 public:
  virtual ~ParameterClient() = default;

  // Joins as worker `worker` (0 = chief); the shards monitor the worker from now on.
  virtual Status Register(int worker) = 0;
  // Chief only: creates the variables on their shards with these values (shard
  // assignment is deterministic: every worker agrees). Other workers' pulls wait
  // for it (parked, bounded by their timeout).
  virtual Status Initialize(const std::map<std::string, Tensor>& initial_values) = 0;
  // The current values of every variable. DeadlineExceeded after `timeout_ms`;
  // Unavailable naming the ps task when one is unreachable.
  virtual StatusOr<ParameterSnapshot> Pull(int64_t timeout_ms) = 0;
  // Pushes gradients (one per variable, same shapes: a wrong shape is rejected,
  // naming the variable, and nothing is applied) computed on `base`.
  virtual StatusOr<PushResult> Push(const ParameterSnapshot& base,
                                    const std::map<std::string, Tensor>& gradients,
                                    int64_t timeout_ms) = 0;
  // Push, then the values a Pull right after it would return, in one round trip
  // where the implementation can (the shards answer the push with their values):
  // a data-parallel step is then one exchange instead of two. `next` is filled only
  // when the result is OK. The default pushes, then pulls.
  virtual StatusOr<PushResult> PushAndPull(const ParameterSnapshot& base,
                                           const std::map<std::string, Tensor>& gradients,
                                           int64_t timeout_ms, ParameterSnapshot* next) {
    AF_ASSIGN_OR_RETURN(PushResult pushed, Push(base, gradients, timeout_ms));
    AF_ASSIGN_OR_RETURN(*next, Pull(timeout_ms));
    return pushed;
  }
  // Aggregated over the shards.
  virtual StatusOr<ParameterStats> Stats(int64_t timeout_ms) = 0;

  // A coordinated cut for a checkpoint (chief). kSync: every variable at exactly
  // global step `version` (< 0: the newest version any shard has reached; a shard
  // behind is waited for, one already past the previous version answers
  // FailedPrecondition). kAsync/SSP: pushes are held on every shard while all are
  // read, then released; `version` must be < 0 and the cut's global_step is the
  // largest shard version. The result's global_step is the cut's version; its
  // `slots` are the optimizer slots at that version, so that a Restore of values and
  // slots together continues exactly (for every optimizer, not only sgd).
  virtual StatusOr<ParameterSnapshot> Snapshot(int64_t version, int64_t timeout_ms) {
    return Unimplemented("this parameter client cannot take coordinated snapshots");
  }
  // Replaces every variable on its shard (the same assignment as Initialize) and
  // sets every shard's version to `version`; a shard that was never initialized
  // (a restarted ps task) is initialized by it and releases its waiting pulls.
  // `values` holds the variables and, beside them, optimizer slots (a Snapshot's
  // values and slots merged in one map, as a checkpoint holds them): a name "V/S" is
  // a slot when V is also in `values` and S is a slot suffix of the configured
  // optimizer; it goes to V's shard. A variable given no slots starts with fresh
  // ones (exact for sgd only); slots of another optimizer are left out.
  // InvalidArgument naming the slot for one unlike its variable.
  // Unavailable naming the ps task and its address when a shard is unreachable.
  virtual Status Restore(const std::map<std::string, Tensor>& values, int64_t version,
                         int64_t timeout_ms) {
    return Unimplemented("this parameter client cannot restore the parameter servers");
  }
  // Switches every shard whose ps task went down to its standby on another ps task
  // (where the implementation keeps standbys), or, where it has none and replacing
  // lost shards is on, to an empty replacement shard on another live ps task, and
  // registers this worker with it. A standby lags its primary by the copies in
  // flight when it died: raise the global step (AdvanceGlobalStep) before going on;
  // the versions that skips are the updates lost (ParameterStats). A replacement is
  // empty: the chief restores the last coordinated checkpoint into every shard
  // (training/checkpoint/ps_checkpoint.h) while the other workers' pulls wait for it.
  // Nothing switched (both counts 0): none was down, or none could be replaced (the
  // caller then has its error).
  struct FailOverReport {
    int to_standby = 0;
    int replaced = 0;
  };
  virtual StatusOr<FailOverReport> FailOver(int64_t timeout_ms) { return FailOverReport{}; }
  // Keeps the global step monotone across a recovery: raises every shard's version
  // to at least `at_least` (the highest global step this worker saw) without
  // changing the variables, and makes every later Restore keep that floor (a shard
  // not initialized yet remembers it for the Restore that initializes it). kSync
  // gradients waiting for an older version are answered as dropped (stale).
  // Unavailable naming the ps task when a shard is unreachable.
  virtual Status AdvanceGlobalStep(int64_t at_least, int64_t timeout_ms) {
    return Unimplemented("this parameter client cannot advance the global step");
  }
};

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_PARAMETER_CLIENT_H_
