#include "actors/parameter_client_impl.h"

#include <algorithm>
#include <future>
#include <caf/io/all.hpp>
#include <set>

#include "actors/cluster_transport.h"
#include "actors/connect.h"
#include "actors/messages.h"
#include "actors/shard_fanout.h"
#include "actors/shard_messages.h"
#include "actors/shard_optimizer.h"
#include "actors/spinning_scheduler.h"

namespace actorflow {
namespace {

using Clock = std::chrono::steady_clock;
using PullReply = ParameterShardState::PullReply;
using PushReply = ParameterShardState::PushReply;
using ShardStats = ParameterShardState::Stats;

// Register and Initialize are not given a timeout by the interface.
constexpr int64_t kMinSetupTimeoutMs = 10000;
// A blocked call waits this much past its timeout, so that the shard's own
// DeadlineExceeded (which says what the request waited for) usually arrives first.
constexpr int64_t kDeadlineGraceMs = 250;
// How long the destructor's leave may take.
constexpr int64_t kLeaveTimeoutMs = 2000;

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
  ParameterClientImpl(const ParameterServerOptions& options,
                      const ParameterClientOptions& client_options, int64_t setup_timeout_ms)
      : options_(options),
        client_options_(client_options),
        setup_timeout_ms_(std::max(setup_timeout_ms, kMinSetupTimeoutMs)) {
    ConfigureClusterTransport(cfg_);
    ConfigureScheduler(cfg_, SchedulerOptions{});
    cfg_.set("logger.console", caf::atom("none"));
    system_ = std::make_unique<caf::actor_system>(cfg_);
  }

  ~ParameterClientImpl() override {
    if (worker_ >= 0 && fanout_) {
      auto call = Fan<Status>(AllShards(), Deadline::After(kLeaveTimeoutMs), [this](size_t) {
        return std::make_tuple(shard_leave_atom::value, int32_t{worker_});
      });
      call->Wait(true, Clock::now() + std::chrono::milliseconds(kLeaveTimeoutMs), "leave");
    }
    if (worker_actor_) caf::anon_send_exit(worker_actor_, caf::exit_reason::user_shutdown);
    if (fanout_) caf::anon_send_exit(fanout_, caf::exit_reason::user_shutdown);
    worker_actor_ = nullptr;
    fanout_ = nullptr;
    ShutDownClusterSystem(system_);
  }

  // Connects to the ps tasks and gets their shards.
  Status Connect(const ClusterSpec& cluster, const std::string& ps_job, int64_t timeout_ms) {
    const Deadline deadline = Deadline::After(timeout_ms);
    const int tasks = cluster.num_tasks(ps_job);
    std::vector<ShardActor> shards;
    std::vector<FrontActor> fronts;
    for (int i = 0; i < tasks; ++i) {
      AF_ASSIGN_OR_RETURN(TaskAddress address, cluster.Address(TaskId{ps_job, i}));
      const std::string who = TaskId{ps_job, i}.ToString();
      names_.push_back(who + " at " + address.ToString());
      auto left = std::chrono::milliseconds(std::max<int64_t>(1, deadline.LeftMs()));
      AF_ASSIGN_OR_RETURN(FrontActor front,
                          ConnectToServer(*system_, address.host, address.port, left, who));
      AF_ASSIGN_OR_RETURN(ShardActor shard,
                          GetShard(front, client_options_.shard_name, names_.back(), deadline));
      shards.push_back(shard);
      fronts.push_back(front);
    }
    if (client_options_.ps_replicas >= 2) {
      AF_RETURN_IF_ERROR(ConnectStandbys(shards, fronts, deadline));
    }
    fronts_ = fronts;
    replaced_.assign(tasks, false);
    fanout_ = SpawnFanOut(*system_, std::move(shards), names_);
    return Status::OK();
  }

  // Gets (or creates) the shard `name` from a ps task's front.
  StatusOr<ShardActor> GetShard(const FrontActor& front, const std::string& name,
                                const std::string& task_name, const Deadline& deadline) {
    caf::scoped_actor self{*system_};
    Status status = Unavailable("no answer");
    ShardActor shard;
    self->request(front, std::chrono::milliseconds(std::max<int64_t>(1, deadline.LeftMs())),
                  get_shard_atom::value, name, ShardConfigFrom(options_))
        .receive(
            [&](Status& s, ShardActor& a) {
              status = std::move(s);
              shard = std::move(a);
            },
            [&](caf::error& e) {
              status = Unavailable(task_name + " did not hand out its parameter shard: " +
                                   caf::to_string(e));
            });
    AF_RETURN_IF_ERROR(status);
    return shard;
  }

  // ps_replicas 2: shard i's standby is "<shard name>/standby_of_<i>" on ps task
  // i + 1 (mod the tasks); every primary is told its standby (idempotent).
  Status ConnectStandbys(const std::vector<ShardActor>& primaries,
                         const std::vector<FrontActor>& fronts, const Deadline& deadline) {
    const int tasks = static_cast<int>(primaries.size());
    if (tasks < 2) {
      return InvalidArgument("--ps-replicas " + std::to_string(client_options_.ps_replicas) +
                             " needs at least 2 ps tasks (a standby lives on another task), the "
                             "cluster has " + std::to_string(tasks));
    }
    for (int i = 0; i < tasks; ++i) {
      const int host = (i + 1) % tasks;
      const std::string name = client_options_.shard_name + "/standby_of_" + std::to_string(i);
      AF_ASSIGN_OR_RETURN(ShardActor standby, GetShard(fronts[host], name, names_[host], deadline));
      caf::scoped_actor self{*system_};
      Status status = Unavailable(names_[i] + " did not accept its standby");
      self->request(primaries[i],
                    std::chrono::milliseconds(std::max<int64_t>(1, deadline.LeftMs())),
                    shard_standby_atom::value, caf::actor_cast<caf::actor>(standby))
          .receive([&](Status& s) { status = std::move(s); }, [](caf::error&) {});
      AF_RETURN_IF_ERROR(status);
      standbys_.push_back(standby);
      standby_names_.push_back(names_[host] + " (standby of " + names_[i] + ")");
    }
    failed_over_.assign(tasks, false);
    return Status::OK();
  }

  StatusOr<FailOverReport> FailOver(int64_t timeout_ms) override {
    FailOverReport report;
    const Deadline deadline = Deadline::After(std::max<int64_t>(timeout_ms, 1000));
    // Which shards are down, as the fan-out actor knows it.
    // Shared with the fan-out actor, which may run the task after a timeout here.
    auto down_now = std::make_shared<std::vector<Status>>();
    AF_RETURN_IF_ERROR(AskFanOut(
        [down_now](FanOutActor* self) { *down_now = self->state.down; }, deadline));
    const std::vector<Status> down = *down_now;
    std::vector<int> switched;
    std::vector<ShardActor> replacements(NumShards());
    std::vector<std::string> replacement_names(NumShards());
    for (int t = 0; t < NumShards(); ++t) {
      if (down[t].ok()) continue;
      if (!standbys_.empty() && !failed_over_[t]) {
        failed_over_[t] = true;
        replacements[t] = standbys_[t];
        replacement_names[t] = standby_names_[t];
        ++report.to_standby;
      } else if (client_options_.replace_lost_shards && !replaced_[t]) {
        // The next ps task whose shard is still up hosts an empty replacement.
        int host = -1;
        for (int k = 1; k < NumShards() && host < 0; ++k) {
          if (down[(t + k) % NumShards()].ok()) host = (t + k) % NumShards();
        }
        if (host < 0) continue;
        const std::string name = client_options_.shard_name + "/replacement_of_" +
                                 std::to_string(t);
        AF_ASSIGN_OR_RETURN(replacements[t], GetShard(fronts_[host], name, names_[host], deadline));
        replacement_names[t] = names_[host] + " (replacing " + names_[t] + ")";
        replaced_[t] = true;
        ++report.replaced;
      } else {
        continue;
      }
      switched.push_back(t);
    }
    if (switched.empty()) return report;
    AF_RETURN_IF_ERROR(AskFanOut(
        [switched, replacements, replacement_names](FanOutActor* self) {
          auto& st = self->state;
          for (int t : switched) {
            st.shards[t] = replacements[t];
            st.names[t] = replacement_names[t];
            st.down[t] = Status::OK();
            self->monitor(replacements[t]);
          }
        },
        deadline));
    for (int t : switched) names_[t] = replacement_names[t];
    if (worker_ >= 0) {
      // The new shards know no members yet: join them.
      caf::actor who = worker_actor_;
      const int worker = worker_;
      auto call = Fan<Status>(switched, Deadline::After(setup_timeout_ms_), [&](size_t) {
        return std::make_tuple(shard_join_atom::value, int32_t{worker}, who);
      });
      AF_RETURN_IF_ERROR(WaitFor(call, Deadline::After(setup_timeout_ms_), "FailOver"));
      for (const Status& st : call->replies()) AF_RETURN_IF_ERROR(st);
    }
    return report;
  }

  // Runs `fn` inside the fan-out actor (which owns the shard handles) and waits for
  // it; `fn` must own what it touches (it may run after a timeout here).
  Status AskFanOut(std::function<void(FanOutActor*)> fn, const Deadline& deadline) {
    auto done = std::make_shared<std::promise<void>>();
    std::future<void> finished = done->get_future();
    caf::anon_send(fanout_, FanOutTask{[fn, done](FanOutActor* self) {
                     fn(self);
                     done->set_value();
                   }});
    if (finished.wait_until(deadline.WaitUntil()) != std::future_status::ready) {
      return DeadlineExceeded("the client's fan-out actor did not answer in time");
    }
    return Status::OK();
  }

  Status Register(int worker) override {
    if (worker < 0 || worker >= options_.total_replicas) {
      return InvalidArgument("worker " + std::to_string(worker) + " is not one of the " +
                             std::to_string(options_.total_replicas) + " workers (total_replicas)");
    }
    if (worker_ >= 0 && worker_ != worker) {
      return FailedPrecondition("this client is already registered as worker " +
                                std::to_string(worker_) + "; use one client per worker");
    }
    if (!worker_actor_) {
      worker_actor_ =
          system_->spawn([](caf::event_based_actor*) -> caf::behavior { return {[](int32_t) {}}; });
    }
    caf::actor who = worker_actor_;
    auto call = Fan<Status>(AllShards(), Deadline::After(setup_timeout_ms_), [&](size_t) {
      return std::make_tuple(shard_join_atom::value, int32_t{worker}, who);
    });
    AF_RETURN_IF_ERROR(WaitFor(call, Deadline::After(setup_timeout_ms_), "Register"));
    for (const Status& s : call->replies()) AF_RETURN_IF_ERROR(s);
    worker_ = worker;
    next_sequence_ = 1;
    return Status::OK();
  }

  Status Initialize(const std::map<std::string, Tensor>& initial_values) override {
    std::vector<VariableSize> sizes;
    for (const auto& [name, value] : initial_values) {
      if (!value.IsInitialized() ||
          (value.dtype() != DType::kFloat32 && value.dtype() != DType::kFloat64)) {
        return InvalidArgument("variable '" + name + "' has initial value " +
                               (value.IsInitialized() ? value.DebugString() : "<empty>") +
                               "; parameter servers hold float32 or float64 variables");
      }
      sizes.push_back(VariableSize{name, static_cast<int64_t>(value.TotalBytes())});
    }
    AF_ASSIGN_OR_RETURN(PsAssignment assignment,
                        AssignVariablesToPs(sizes, NumShards(), client_options_.strategy));
    std::vector<std::vector<Tensor>> values(NumShards());
    for (int t = 0; t < NumShards(); ++t) {
      for (const std::string& name : assignment.variables[t]) {
        values[t].push_back(initial_values.at(name));
      }
    }
    const Deadline deadline = Deadline::After(setup_timeout_ms_);
    auto call = Fan<Status>(AllShards(), deadline, [&](size_t t) {
      return std::make_tuple(shard_init_atom::value, assignment.variables[t], values[t]);
    });
    AF_RETURN_IF_ERROR(WaitFor(call, deadline, "Initialize"));
    for (const Status& s : call->replies()) AF_RETURN_IF_ERROR(s);
    for (const auto& [name, value] : initial_values) {
      Remember(name, assignment.task_of.at(name), value);
    }
    return Status::OK();
  }

  StatusOr<ParameterSnapshot> Pull(int64_t timeout_ms) override {
    const Deadline deadline = Deadline::After(timeout_ms);
    ParameterSnapshot snapshot;
    snapshot.shard_versions.assign(NumShards(), 0);
    std::vector<bool> holds(NumShards(), false);
    std::vector<int> targets = AllShards();
    std::vector<int64_t> min_version(NumShards(), 0);
    int membership_from = NumShards();
    while (!targets.empty()) {
      auto call = Fan<PullReply>(targets, deadline, [&](size_t pos) {
        return std::make_tuple(shard_pull_atom::value, min_version[targets[pos]],
                               deadline.LeftMs());
      });
      AF_RETURN_IF_ERROR(WaitFor(call, deadline, "Pull"));
      for (size_t pos = 0; pos < targets.size(); ++pos) {
        PullReply& r = call->replies()[pos];
        AF_RETURN_IF_ERROR(r.status);
        const int t = targets[pos];
        snapshot.shard_versions[t] = r.version;
        holds[t] = !r.names.empty();
        // The first shard holding variables speaks for the membership.
        if (holds[t] && t < membership_from) {
          snapshot.membership = r.membership;
          membership_from = t;
        }
        for (size_t i = 0; i < r.names.size() && i < r.values.size(); ++i) {
          Remember(r.names[i], t, r.values[i]);
          snapshot.values[r.names[i]] = r.values[i];
        }
      }
      // Under kSync every shard must be at the same version: ask the ones behind
      // again for the newest version seen.
      int64_t newest = 0;
      for (int t = 0; t < NumShards(); ++t) {
        if (holds[t]) newest = std::max(newest, snapshot.shard_versions[t]);
      }
      snapshot.global_step = newest;
      targets.clear();
      if (options_.mode != UpdateMode::kSync) break;
      for (int t = 0; t < NumShards(); ++t) {
        if (holds[t] && snapshot.shard_versions[t] < newest) {
          targets.push_back(t);
          min_version[t] = newest;
        }
      }
    }
    return snapshot;
  }

  StatusOr<PushResult> Push(const ParameterSnapshot& base,
                            const std::map<std::string, Tensor>& gradients,
                            int64_t timeout_ms) override {
    return PushImpl(base, gradients, timeout_ms, nullptr);
  }

  StatusOr<PushResult> PushAndPull(const ParameterSnapshot& base,
                                   const std::map<std::string, Tensor>& gradients,
                                   int64_t timeout_ms, ParameterSnapshot* next) override {
    AF_ASSIGN_OR_RETURN(PushResult pushed, PushImpl(base, gradients, timeout_ms, next));
    if (next->shard_versions.empty()) {
      // The replies did not make one consistent snapshot: pull as usual.
      AF_ASSIGN_OR_RETURN(*next, Pull(timeout_ms));
    }
    return pushed;
  }

  StatusOr<ParameterStats> Stats(int64_t timeout_ms) override {
    const Deadline deadline = Deadline::After(timeout_ms);
    auto call = Fan<ShardStats>(AllShards(), deadline,
                                [](size_t) { return std::make_tuple(shard_stats_atom::value); });
    AF_RETURN_IF_ERROR(WaitFor(call, deadline, "Stats"));
    ParameterStats stats;
    int64_t staleness_sum = 0, staleness_count = 0;
    std::set<int> lost, left;
    for (const ShardStats& s : call->replies()) {
      stats.updates_applied = std::max(stats.updates_applied, s.version);
      stats.gradients_dropped_stale =
          std::max(stats.gradients_dropped_stale, s.gradients_dropped_stale);
      staleness_sum += s.staleness_sum;
      staleness_count += s.staleness_count;
      lost.insert(s.workers_lost.begin(), s.workers_lost.end());
      left.insert(s.workers_left.begin(), s.workers_left.end());
      // Every shard sees the same joins and losses: the first one's record stands.
      stats.updates_lost = std::max(stats.updates_lost, s.updates_lost);
      if (stats.updates_by_aggregated.empty()) {
        stats.updates_by_aggregated = s.updates_by_aggregated;
        stats.membership_changes = s.membership_changes;
      }
    }
    stats.mean_staleness =
        staleness_count > 0 ? static_cast<double>(staleness_sum) / staleness_count : 0.0;
    stats.workers_lost.assign(lost.begin(), lost.end());
    stats.workers_left.assign(left.begin(), left.end());
    return stats;
  }

  StatusOr<ParameterSnapshot> Snapshot(int64_t version, int64_t timeout_ms) override {
    const Deadline deadline = Deadline::After(timeout_ms);
    const bool sync = options_.mode == UpdateMode::kSync;
    if (!sync && version >= 0) {
      return InvalidArgument("a snapshot at a chosen version (" + std::to_string(version) +
                             ") needs sync mode: async cuts are taken where the shards are");
    }
    if (!sync) AF_RETURN_IF_ERROR(HoldAll(true, deadline));
    StatusOr<ParameterSnapshot> cut = SnapshotAt(version, deadline);
    if (!sync) {
      Status released = HoldAll(false, Deadline::After(setup_timeout_ms_));
      if (cut.ok() && !released.ok()) return released;
    }
    return cut;
  }

  Status Restore(const std::map<std::string, Tensor>& values, int64_t version,
                 int64_t timeout_ms) override {
    // Variables and slots ("V/S" with V a variable), by the naming convention.
    const std::vector<std::string> own = ShardOptimizer::SlotSuffixes(options_.optimizer);
    const std::vector<std::string> any = ShardOptimizer::AllSlotSuffixes();
    std::map<std::string, Tensor> variables;
    std::map<std::string, std::string> slot_of;  // slot name -> variable
    for (const auto& [name, value] : values) {
      std::string var;
      if (ShardOptimizer::SplitSlotName(name, any, &var) && values.count(var)) {
        // Another optimizer's slot is left out: its variable starts fresh slots.
        if (ShardOptimizer::SplitSlotName(name, own, &var)) slot_of[name] = var;
        continue;
      }
      variables[name] = value;
    }
    AF_ASSIGN_OR_RETURN(PsAssignment assignment, Assign(variables));
    std::vector<std::vector<Tensor>> per_shard(NumShards());
    for (int t = 0; t < NumShards(); ++t) {
      for (const std::string& name : assignment.variables[t]) {
        per_shard[t].push_back(variables.at(name));
      }
    }
    std::vector<std::vector<std::string>> slot_names(NumShards());
    std::vector<std::vector<Tensor>> slot_values(NumShards());
    for (const auto& [slot, var] : slot_of) {
      const int t = assignment.task_of.at(var);
      slot_names[t].push_back(slot);
      slot_values[t].push_back(values.at(slot));
    }
    const Deadline deadline = Deadline::After(timeout_ms);
    auto call = Fan<Status>(AllShards(), deadline, [&](size_t t) {
      return std::make_tuple(shard_restore_atom::value, assignment.variables[t], per_shard[t],
                             slot_names[t], slot_values[t], version);
    });
    AF_RETURN_IF_ERROR(WaitFor(call, deadline, "Restore"));
    for (const Status& s : call->replies()) AF_RETURN_IF_ERROR(s);
    for (const auto& [name, value] : variables) {
      Remember(name, assignment.task_of.at(name), value);
    }
    return Status::OK();
  }

  Status AdvanceGlobalStep(int64_t at_least, int64_t timeout_ms) override {
    const Deadline deadline = Deadline::After(timeout_ms);
    auto call = Fan<Status>(AllShards(), deadline, [&](size_t) {
      return std::make_tuple(shard_floor_atom::value, at_least);
    });
    AF_RETURN_IF_ERROR(WaitFor(call, deadline, "AdvanceGlobalStep"));
    for (const Status& s : call->replies()) AF_RETURN_IF_ERROR(s);
    return Status::OK();
  }

 private:
  // Push and, when `next` is given, push-and-pull: `next` becomes the snapshot the
  // replies carry, or stays empty (no shard_versions) when they do not make a
  // consistent one (sync shards answering at different versions).
  StatusOr<PushResult> PushImpl(const ParameterSnapshot& base,
                                const std::map<std::string, Tensor>& gradients,
                                int64_t timeout_ms, ParameterSnapshot* next) {
    if (worker_ < 0) return FailedPrecondition("Push before Register: join as a worker first");
    if (static_cast<int>(base.shard_versions.size()) != NumShards()) {
      return InvalidArgument("the snapshot has " + std::to_string(base.shard_versions.size()) +
                             " shard versions but there are " + std::to_string(NumShards()) +
                             " ps tasks: push on a snapshot from this client's Pull");
    }
    std::vector<ShardPushArgs> pushes(NumShards());
    for (const auto& [name, g] : gradients) {
      auto where = location_.find(name);
      if (where == location_.end()) {
        return InvalidArgument("gradient for unknown variable '" + name +
                               "' (not in the last Pull); nothing was pushed");
      }
      const Like& like = like_.at(name);
      if (!g.IsInitialized() || g.dtype() != like.dtype || g.shape() != like.shape) {
        return InvalidArgument("gradient for variable '" + name + "' is " +
                               (g.IsInitialized() ? g.DebugString() : "<empty>") +
                               " but the variable is " + DTypeName(like.dtype) +
                               like.shape.ToString() + "; nothing was pushed");
      }
      pushes[where->second].names.push_back(name);
      pushes[where->second].gradients.push_back(g);
    }
    for (const auto& [name, shard] : location_) {
      if (!gradients.count(name)) {
        return InvalidArgument("no gradient for variable '" + name +
                               "': every variable needs one (push zeros for a variable the "
                               "loss does not depend on); nothing was pushed");
      }
    }
    std::vector<int> targets;
    const uint64_t sequence = next_sequence_++;
    for (int t = 0; t < NumShards(); ++t) {
      if (pushes[t].names.empty()) continue;
      targets.push_back(t);
      pushes[t].worker = worker_;
      pushes[t].sequence = sequence;
      pushes[t].base_version = base.shard_versions[t];
      pushes[t].return_values = next != nullptr;
    }
    const Deadline deadline = Deadline::After(timeout_ms);
    auto call = Fan<PushReply>(targets, deadline, [&](size_t pos) {
      return std::make_tuple(shard_push_atom::value, pushes[targets[pos]], deadline.LeftMs());
    });
    AF_RETURN_IF_ERROR(WaitFor(call, deadline, "Push"));
    PushResult result;
    for (PushReply& r : call->replies()) {
      // An SSP push parked past its deadline was applied when it arrived (only its
      // answer waited): it counts as applied, not as a failure.
      if (!r.status.ok() && !r.applied) return r.status;
      result.applied = result.applied && r.applied;
      result.staleness = std::max(result.staleness, r.staleness);
      result.global_step = std::max(result.global_step, r.version);
      // Shards complete a version each on their own: report the smallest count.
      if (r.applied) {
        result.aggregated = result.aggregated == 0 ? r.aggregated
                                                   : std::min(result.aggregated, r.aggregated);
      }
    }
    if (next != nullptr) *next = SnapshotFromPushReplies(base, targets, call->replies());
    return result;
  }

  // The values push replies carried, as a Pull would have returned them; empty when
  // a reply carries none or, under kSync, the shards answered at different versions.
  ParameterSnapshot SnapshotFromPushReplies(const ParameterSnapshot& base,
                                            const std::vector<int>& targets,
                                            std::vector<PushReply>& replies) {
    ParameterSnapshot snapshot;
    snapshot.shard_versions = base.shard_versions;  // shards without variables keep theirs
    for (size_t pos = 0; pos < targets.size(); ++pos) {
      const PushReply& r = replies[pos];
      if (r.names.empty() || r.names.size() != r.values.size()) return ParameterSnapshot();
      if (options_.mode == UpdateMode::kSync && pos > 0 &&
          r.values_version != replies[0].values_version) {
        return ParameterSnapshot();
      }
      const int t = targets[pos];
      snapshot.shard_versions[t] = r.values_version;
      snapshot.global_step = std::max(snapshot.global_step, r.values_version);
      if (pos == 0) snapshot.membership = r.membership;
      for (size_t i = 0; i < r.names.size(); ++i) {
        Remember(r.names[i], t, r.values[i]);
        snapshot.values[r.names[i]] = r.values[i];
      }
    }
    return snapshot;
  }

  StatusOr<PsAssignment> Assign(const std::map<std::string, Tensor>& values) const {
    std::vector<VariableSize> sizes;
    for (const auto& [name, value] : values) {
      if (!value.IsInitialized() ||
          (value.dtype() != DType::kFloat32 && value.dtype() != DType::kFloat64)) {
        return InvalidArgument("variable '" + name + "' has value " +
                               (value.IsInitialized() ? value.DebugString() : "<empty>") +
                               "; parameter servers hold float32 or float64 variables");
      }
      sizes.push_back(VariableSize{name, static_cast<int64_t>(value.TotalBytes())});
    }
    return AssignVariablesToPs(sizes, NumShards(), client_options_.strategy);
  }

  Status HoldAll(bool hold, const Deadline& deadline) {
    auto call = Fan<Status>(AllShards(), deadline,
                            [&](size_t) { return std::make_tuple(shard_hold_atom::value, hold); });
    AF_RETURN_IF_ERROR(WaitFor(call, deadline, hold ? "Snapshot (hold)" : "Snapshot (release)"));
    for (const Status& s : call->replies()) AF_RETURN_IF_ERROR(s);
    return Status::OK();
  }

  // Every shard's values at `version` (< 0: each shard's (async) or the newest
  // (sync) current version, read from the shards' stats).
  StatusOr<ParameterSnapshot> SnapshotAt(int64_t version, const Deadline& deadline) {
    std::vector<int64_t> at(NumShards(), version);
    if (version < 0) {
      auto call = Fan<ShardStats>(AllShards(), deadline,
                                  [](size_t) { return std::make_tuple(shard_stats_atom::value); });
      AF_RETURN_IF_ERROR(WaitFor(call, deadline, "Snapshot (versions)"));
      int64_t newest = 0;
      for (size_t t = 0; t < call->replies().size(); ++t) {
        const ShardStats& s = call->replies()[t];
        if (!s.initialized) {
          return FailedPrecondition(names_[t] + " holds no initialized variables: nothing to " +
                                    "snapshot (restore or initialize it first)");
        }
        at[t] = s.version;
        if (s.variables > 0) newest = std::max(newest, s.version);
      }
      if (options_.mode == UpdateMode::kSync) at.assign(NumShards(), newest);
    }
    auto call = Fan<PullReply>(AllShards(), deadline, [&](size_t t) {
      return std::make_tuple(shard_snap_atom::value, at[t], deadline.LeftMs());
    });
    AF_RETURN_IF_ERROR(WaitFor(call, deadline, "Snapshot"));
    ParameterSnapshot snapshot;
    for (size_t t = 0; t < call->replies().size(); ++t) {
      PullReply& r = call->replies()[t];
      AF_RETURN_IF_ERROR(r.status);
      snapshot.shard_versions.push_back(r.version);
      if (!r.names.empty()) snapshot.global_step = std::max(snapshot.global_step, r.version);
      for (size_t i = 0; i < r.names.size() && i < r.values.size(); ++i) {
        snapshot.values[r.names[i]] = r.values[i];
      }
      for (size_t i = 0; i < r.slot_names.size() && i < r.slot_values.size(); ++i) {
        snapshot.slots[r.slot_names[i]] = r.slot_values[i];
      }
    }
    return snapshot;
  }

  int NumShards() const { return static_cast<int>(names_.size()); }
  std::vector<int> AllShards() const {
    std::vector<int> all(NumShards());
    for (int i = 0; i < NumShards(); ++i) all[i] = i;
    return all;
  }

  void Remember(const std::string& name, int shard, const Tensor& value) {
    location_[name] = shard;
    like_[name] = Like{value.dtype(), value.shape()};
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
  // ps_replicas 2: each shard's standby, its name, and whether it took over already.
  std::vector<ShardActor> standbys_;
  std::vector<std::string> standby_names_;
  std::vector<bool> failed_over_;
  // Every ps task's front (for replacements), and which shards were replaced.
  std::vector<FrontActor> fronts_;
  std::vector<bool> replaced_;
  int worker_ = -1;
  uint64_t next_sequence_ = 1;
  // Where each variable lives and what it looks like (from Initialize or Pull).
  struct Like {
    DType dtype;
    Shape shape;
  };
  std::map<std::string, int> location_;
  std::map<std::string, Like> like_;
};

}  // namespace

StatusOr<std::unique_ptr<ParameterClient>> ConnectParameterServers(
    const ClusterSpec& cluster, const std::string& ps_job, const ParameterServerOptions& options,
    int64_t timeout_ms, const ParameterClientOptions& client_options) {
  AF_RETURN_IF_ERROR(ValidateShardConfig(ShardConfigFrom(options)));
  if (cluster.num_tasks(ps_job) == 0) {
    std::string jobs;
    for (const std::string& j : cluster.jobs()) jobs += (jobs.empty() ? "" : ", ") + j;
    return InvalidArgument("the cluster has no job '" + ps_job + "' for the parameter servers" +
                           " (jobs: " + (jobs.empty() ? "none" : jobs) + ")");
  }
  auto client = std::make_unique<ParameterClientImpl>(options, client_options, timeout_ms);
  AF_RETURN_IF_ERROR(client->Connect(cluster, ps_job, timeout_ms));
  return std::unique_ptr<ParameterClient>(std::move(client));
}

}  // namespace actorflow
