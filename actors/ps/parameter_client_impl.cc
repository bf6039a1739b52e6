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
  if (protocol_.worker() >= 0 && fanout_) {
    const int32_t worker = protocol_.worker();
    auto call = Fan<Status>(AllShards(), Deadline::After(kLeaveTimeoutMs), [worker](size_t) {
      return std::make_tuple(shard_leave_atom::value, worker);
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
  const PsStrategy strategy = client_options_.strategy;
  protocol_ = ShardWorkerProtocol(ShardWorkerOptions{
      tasks, options_.mode, SyncCatchUp::kPullShardsBehind,
      [strategy](const std::map<std::string, int64_t>& bytes, int num_shards) {
        return AssignVariablesByBytes(bytes, num_shards, strategy);
      }});
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
  if (protocol_.worker() >= 0 && protocol_.worker() != worker) {
    return FailedPrecondition("this client is already registered as worker " +
                              std::to_string(protocol_.worker()) + "; use one client per worker");
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
  protocol_.JoinedAs(worker);
  return Status::OK();
}

Status ParameterClientImpl::Initialize(const std::map<std::string, Tensor>& initial_values) {
  AF_ASSIGN_OR_RETURN(InitializationPlan plan, protocol_.PlanInitialization(initial_values));
  const Deadline deadline = Deadline::After(setup_timeout_ms_);
  auto call = Fan<Status>(AllShards(), deadline, [&](size_t t) {
    return std::make_tuple(shard_init_atom::value, plan.names[t], plan.values[t]);
  });
  AF_RETURN_IF_ERROR(WaitFor(call, deadline, "Initialize"));
  for (const Status& s : call->replies()) AF_RETURN_IF_ERROR(s);
  protocol_.Initialized(plan);
  return Status::OK();
}

StatusOr<ParameterSnapshot> ParameterClientImpl::Pull(int64_t timeout_ms) {
  const Deadline deadline = Deadline::After(timeout_ms);
  PullRound round = protocol_.StartPull();
  while (true) {
    auto call = Fan<PullReply>(round.shards, deadline, [&](size_t) {
      return std::make_tuple(shard_pull_atom::value, round.min_version, deadline.LeftMs());
    });
    AF_RETURN_IF_ERROR(WaitFor(call, deadline, "Pull"));
    for (size_t pos = 0; pos < round.shards.size(); ++pos) {
      AF_RETURN_IF_ERROR(protocol_.AddPullReply(round.shards[pos], call->replies()[pos]));
    }
    round = protocol_.NextPullRound();
    if (round.shards.empty()) break;
    // An elastic shard behind may be waiting for this worker's gradient on its
    // version, which it will not get: the gradient comes from the newest version
    // (the round's min_version). Sent by the fan-out actor before the pulls of the
    // round, so it arrives first.
    if (options_.elastic && protocol_.worker() >= 0) {
      const int32_t worker = protocol_.worker();
      caf::anon_send(fanout_, FanOutTask{[round, worker](FanOutActor* self) {
                       for (int t : round.shards) {
                         self->send(self->state.shards[t], shard_skip_atom::value, worker,
                                    round.min_version);
                       }
                     }});
    }
  }
  return protocol_.snapshot();
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
    if (protocol_.BytesHeldBy(t) >= client_options_.bulk_min_bytes) {
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
  AF_ASSIGN_OR_RETURN(PushPlan plan, protocol_.PlanPush(base, gradients, next != nullptr));
  for (size_t pos = 0; pos < plan.shards.size(); ++pos) {
    SendApart(plan.shards[pos], &plan.args[pos]);
  }
  const Deadline deadline = Deadline::After(timeout_ms);
  auto call = Fan<PushReply>(plan.shards, deadline, [&](size_t pos) {
    return std::make_tuple(shard_push_atom::value, plan.args[pos], deadline.LeftMs());
  });
  AF_RETURN_IF_ERROR(WaitFor(call, deadline, "Push"));
  AF_ASSIGN_OR_RETURN(PushResult result, ShardWorkerProtocol::PushResultOf(call->replies()));
  if (next != nullptr) *next = protocol_.SnapshotFromPushReplies(base, plan, call->replies());
  return result;
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
