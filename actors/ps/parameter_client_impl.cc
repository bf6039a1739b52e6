// ParameterClientImpl (actors/ps/parameter_client_internal.h): construction, Connect,
// and the training path (Register, Initialize, Pull, Push, Stats); and
// ConnectParameterServers (actors/ps/parameter_client_impl.h).
#include "actors/ps/parameter_client_impl.h"

#include <unistd.h>

#include <algorithm>
#include <caf/io/all.hpp>

#include "actors/ps/bulk_gradients.h"
#include "actors/transport/cluster_transport.h"
#include "actors/transport/connect.h"
#include "actors/protocol/messages.h"
#include "actors/ps/parameter_client_internal.h"
#include "kernels/ps/shard_config.h"
#include "kernels/ps/shard_results.h"
#include "actors/ps/shard_fanout.h"
#include "actors/protocol/shard_messages.h"
#include "actors/scheduler/spinning_scheduler.h"

namespace actorflow {
namespace parameter_client_internal {
namespace {

// Register and Initialize are not given a timeout by the interface.
constexpr int64_t kMinSetupTimeoutMs = 10000;
// How long the destructor's leave may take.
constexpr int64_t kLeaveTimeoutMs = 2000;

}  // namespace

ParameterClientImpl::ParameterClientImpl(const ParameterServerOptions& options,
                                         const ParameterClientOptions& client_options,
                                         int64_t setup_timeout_ms)
    : options_(options),
      client_options_(client_options),
      setup_timeout_ms_(std::max(setup_timeout_ms, kMinSetupTimeoutMs)) {
  ConfigureClusterTransport(cfg_);
  ConfigureScheduler(cfg_, SchedulerOptions{});
  cfg_.set("logger.console", caf::atom("none"));
  system_ = std::make_unique<caf::actor_system>(cfg_);
}

ParameterClientImpl::~ParameterClientImpl() {
  // Both post to the fan-out actor: they go before the actor system.
  if (bulk_sender_) bulk_sender_->Shutdown();
  values_receiver_.reset();
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

Status ParameterClientImpl::Connect(const ClusterSpec& cluster, const std::string& ps_job,
                                    int64_t timeout_ms) {
  const Deadline deadline = Deadline::After(timeout_ms);
  const int tasks = cluster.num_tasks(ps_job);
  std::vector<ShardActor> shards;
  std::vector<FrontActor> fronts;
  std::vector<std::string> hosts;
  for (int i = 0; i < tasks; ++i) {
    AF_ASSIGN_OR_RETURN(TaskAddress address, cluster.Address(TaskId{ps_job, i}));
    hosts.push_back(address.host);
    const std::string who = TaskId{ps_job, i}.ToString();
    names_.push_back(who + " at " + address.ToString());
    addresses_.push_back(address.ToString());
    auto left = std::chrono::milliseconds(std::max<int64_t>(1, deadline.LeftMs()));
    AF_ASSIGN_OR_RETURN(FrontActor front,
                        ConnectToServer(*system_, address.host, address.port, left, who));
    AF_ASSIGN_OR_RETURN(ShardActor shard,
                        GetShard(front, client_options_.shard_name, names_.back(), deadline));
    shards.push_back(shard);
    fronts.push_back(front);
    bulk_endpoints_.push_back(client_options_.bulk_min_bytes > 0 ? AskBulkEndpoint(front, deadline)
                                                                  : std::string());
  }
  if (client_options_.ps_replicas >= 2) {
    AF_RETURN_IF_ERROR(ConnectStandbys(shards, fronts, deadline));
  }
  fronts_ = fronts;
  replaced_.assign(tasks, false);
  fanout_ = SpawnFanOut(*system_, std::move(shards), names_, addresses_);
  OpenValuesReceiver(hosts);
  return Status::OK();
}

void ParameterClientImpl::OpenValuesReceiver(const std::vector<std::string>& ps_hosts) {
  bulk_client_id_ = std::to_string(::getpid()) + "." +
                    std::to_string(reinterpret_cast<uintptr_t>(this)) + "." +
                    std::to_string(Clock::now().time_since_epoch().count());
  if (std::all_of(bulk_endpoints_.begin(), bulk_endpoints_.end(),
                  [](const std::string& e) { return e.empty(); })) {
    return;
  }
  std::string host = client_options_.bulk_reply_host;
  if (host.empty()) {
    const bool all_loopback =
        std::all_of(ps_hosts.begin(), ps_hosts.end(), [](const std::string& h) {
          return h == "localhost" || h.rfind("127.", 0) == 0;
        });
    if (!all_loopback) return;
    host = "127.0.0.1";
  }
  caf::actor fanout = fanout_;
  auto receiver =
      BulkReceiver::Listen(host, BulkReceiverOptions(), [fanout](BulkFrame frame) -> Status {
        caf::anon_send(fanout, shard_values_atom::value, std::move(frame.key),
                       std::move(frame.tensor));
        return Status::OK();
      });
  if (receiver.ok()) values_receiver_ = std::move(receiver).value();
}

Status ParameterClientImpl::Register(int worker) {
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

Status ParameterClientImpl::Initialize(const std::map<std::string, Tensor>& initial_values) {
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

StatusOr<ParameterSnapshot> ParameterClientImpl::Pull(int64_t timeout_ms) {
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
    // An elastic shard behind may be waiting for this worker's gradient on its
    // version, which it will not get: the gradient comes from `newest`. Sent by the
    // fan-out actor before the pulls below, so it arrives first.
    if (options_.elastic && worker_ >= 0 && !targets.empty()) {
      const int32_t worker = worker_;
      caf::anon_send(fanout_, FanOutTask{[targets, worker, newest](FanOutActor* self) {
                       for (int t : targets) {
                         self->send(self->state.shards[t], shard_skip_atom::value, worker, newest);
                       }
                     }});
    }
  }
  return snapshot;
}

StatusOr<PushResult> ParameterClientImpl::Push(const ParameterSnapshot& base,
                                               const std::map<std::string, Tensor>& gradients,
                                               int64_t timeout_ms) {
  return PushImpl(base, gradients, timeout_ms, nullptr);
}

StatusOr<PushResult> ParameterClientImpl::PushAndPull(
    const ParameterSnapshot& base, const std::map<std::string, Tensor>& gradients,
    int64_t timeout_ms, ParameterSnapshot* next) {
  AF_ASSIGN_OR_RETURN(PushResult pushed, PushImpl(base, gradients, timeout_ms, next));
  if (next->shard_versions.empty()) {
    // The replies did not make one consistent snapshot: pull as usual.
    AF_ASSIGN_OR_RETURN(*next, Pull(timeout_ms));
  }
  return pushed;
}

StatusOr<ParameterStats> ParameterClientImpl::Stats(int64_t timeout_ms) {
  const Deadline deadline = Deadline::After(timeout_ms);
  auto call = Fan<ShardStats>(AllShards(), deadline,
                              [](size_t) { return std::make_tuple(shard_stats_atom::value); });
  AF_RETURN_IF_ERROR(WaitFor(call, deadline, "Stats"));
  return StatsOfShards(call->replies());
}

std::string ParameterClientImpl::AskBulkEndpoint(const FrontActor& front,
                                                 const Deadline& deadline) {
  caf::scoped_actor self{*system_};
  std::string endpoint;
  self->request(front, std::chrono::milliseconds(std::max<int64_t>(1, deadline.LeftMs())),
                devices_atom::value)
      .receive(
          [&](std::vector<DevicePeer>& devices) {
            if (!devices.empty()) endpoint = devices.front().bulk_endpoint;
          },
          [](caf::error&) {});
  return endpoint;
}

bool ParameterClientImpl::BulkServes(int t) const {
  // A standby or a replacement shard is another task's or has another name.
  const size_t at = static_cast<size_t>(t);
  const bool moved = (at < failed_over_.size() && failed_over_[at]) ||
                     (at < replaced_.size() && replaced_[at]);
  return client_options_.bulk_min_bytes > 0 && at < bulk_endpoints_.size() &&
         !bulk_endpoints_[at].empty() && !moved;
}

void ParameterClientImpl::SendApart(int t, ShardPushArgs* push) {
  if (!BulkServes(t)) return;
  const std::string push_key = bulk_client_id_ + "/" + std::to_string(push->worker) + "/" +
                               std::to_string(push->sequence);
  if (push->return_values && values_receiver_) {
    int64_t value_bytes = 0;
    for (const auto& [name, shard] : location_) {
      const Like& like = like_.at(name);
      if (shard == t) value_bytes += like.shape.num_elements() * DTypeSize(like.dtype);
    }
    if (value_bytes >= client_options_.bulk_min_bytes) {
      push->values_endpoint = values_receiver_->endpoint();
      push->values_key = push_key + "/values";
    }
  }
  int64_t bytes = 0;
  for (const Tensor& g : push->gradients) bytes += static_cast<int64_t>(g.TotalBytes());
  if (bytes < client_options_.bulk_min_bytes) return;
  if (!bulk_sender_) bulk_sender_ = std::make_unique<BulkSender>();
  push->bulk_key = push_key;
  const std::string device = BulkShardAddress(client_options_.shard_name);
  caf::actor fanout = fanout_;
  for (size_t i = 0; i < push->gradients.size(); ++i) {
    BulkFrame frame{device, 0, BulkGradientKey(push->bulk_key, i), push->gradients[i]};
    bulk_sender_->Send(bulk_endpoints_[t], std::move(frame), [fanout, t](BulkFrame unsent) {
      // The same message the ps task's receiver would have sent, from here.
      caf::anon_send(fanout, FanOutTask{[t, key = std::move(unsent.key),
                                         tensor = std::move(unsent.tensor)](FanOutActor* self) {
                       caf::anon_send(self->state.shards[t], shard_bulk_atom::value, key, tensor);
                     }});
    });
  }
  push->gradients.clear();
}

StatusOr<PushResult> ParameterClientImpl::PushImpl(const ParameterSnapshot& base,
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
  for (int t : targets) SendApart(t, &pushes[t]);
  const Deadline deadline = Deadline::After(timeout_ms);
  auto call = Fan<PushReply>(targets, deadline, [&](size_t pos) {
    return std::make_tuple(shard_push_atom::value, pushes[targets[pos]], deadline.LeftMs());
  });
  AF_RETURN_IF_ERROR(WaitFor(call, deadline, "Push"));
  PushResult result;
  for (const PushReply& r : call->replies()) AF_RETURN_IF_ERROR(AddShardPushReply(r, &result));
  if (next != nullptr) *next = SnapshotFromPushReplies(base, targets, call->replies());
  return result;
}

ParameterSnapshot ParameterClientImpl::SnapshotFromPushReplies(const ParameterSnapshot& base,
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

}  // namespace parameter_client_internal

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
  auto client = std::make_unique<parameter_client_internal::ParameterClientImpl>(
      options, client_options, timeout_ms);
  AF_RETURN_IF_ERROR(client->Connect(cluster, ps_job, timeout_ms));
  return std::unique_ptr<ParameterClient>(std::move(client));
}

}  // namespace actorflow
