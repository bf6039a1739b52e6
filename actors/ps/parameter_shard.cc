#include "actors/ps/parameter_shard.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include "actors/ps/bulk_gradients.h"
#include "actors/protocol/messages.h"
#include "actors/protocol/shard_messages.h"
#include "actors/transport/connection_ends.h"

namespace actorflow {
namespace {

using RequestId = ParameterShardState::RequestId;
constexpr int64_t kNoDeadline = ParameterShardState::kNoDeadline;

struct WaitingPush {
  ShardPushArgs args;
  int64_t deadline = kNoDeadline;  // the push's own, for the state once complete
};

struct ValuesApart {
  std::string endpoint;  // the worker's bulk receiver
  std::string key;
  caf::actor requester;  // gets a value the channel could not carry
};

struct ShardActorState {
  std::unique_ptr<ParameterShardState> shard;
  // Requests waiting for an answer, by the id the shard state knows them by.
  std::map<RequestId, caf::response_promise> promises;
  std::map<RequestId, caf::actor_addr> requester_of;
  // Requesters with parked requests (monitored once each).
  std::map<caf::actor_addr, std::set<RequestId>> parked_by;
  // Registered workers' actors (monitored) <-> worker indices.
  std::map<caf::actor_addr, int> worker_of;
  std::map<int, caf::actor_addr> actor_of;
  // Times (ms on the actor clock) at which a sweep message is on its way.
  std::set<int64_t> sweeps;
  // Pushes whose reply carries the shard's values (push-and-pull).
  std::set<RequestId> values_wanted;
  RequestId next_id = 1;
  // A standby shard on another ps task gets a copy after every change of version.
  ShardActor standby;
  int64_t copied_version = -1;  // the version last copied (-1: none yet)
  // Pushes whose gradients come apart (ShardPushArgs::bulk_key), until they are all here.
  BulkGradientStash bulk;
  std::map<RequestId, WaitingPush> waiting_for_gradients;
  // Push-and-pull replies whose values go apart, and the sender that writes them.
  std::map<RequestId, ValuesApart> values_apart;
  std::shared_ptr<BulkSender> bulk_sender;
  const char* name = "parameter_shard";
};

using ShardSelf = ShardActor::stateful_pointer<ShardActorState>;

int64_t NowMs(ShardSelf self) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             self->clock().now().time_since_epoch())
      .count();
}

int64_t DeadlineFor(ShardSelf self, int64_t timeout_ms) {
  return timeout_ms > 0 ? NowMs(self) + timeout_ms : kNoDeadline;
}

// Sends the standby the shard's contents when its version moved since the last copy
// (before the replies go out, so that a standby never lags a version a worker saw
// by more than the messages in flight).
void CopyToStandby(ShardSelf self) {
  auto& st = self->state;
  if (!st.standby || !st.shard->initialized() || st.shard->version() == st.copied_version) return;
  std::vector<std::string> names, slot_names;
  std::vector<Tensor> values, slot_values;
  st.shard->ExportCurrent(&names, &values, &slot_names, &slot_values);
  st.copied_version = st.shard->version();
  // A request (the shard takes no Status messages); its answer only matters to logs.
  self->request(st.standby, std::chrono::seconds(30), shard_restore_atom::value, std::move(names),
                std::move(values), std::move(slot_names), std::move(slot_values),
                st.copied_version)
      .then([](Status&) {}, [](caf::error&) {});
}

// When the push asked for its reply's values apart: writes each on the bulk channel
// (the values are immutable buffers: an update copies before it writes) and leaves
// only their key in the reply. A value the channel cannot carry is sent to the
// requester over CAF as the same (shard_values_atom, key, value) message.
void SendValuesApart(ShardSelf self, ShardPushReply* reply) {
  auto& st = self->state;
  auto apart = st.values_apart.find(reply->id);
  if (apart == st.values_apart.end() || !st.bulk_sender) return;
  const ValuesApart& to = apart->second;
  for (size_t i = 0; i < reply->values.size(); ++i) {
    BulkFrame frame{"values", 0, BulkGradientKey(to.key, i), std::move(reply->values[i])};
    st.bulk_sender->Send(to.endpoint, std::move(frame),
                         [requester = to.requester](BulkFrame unsent) {
                           caf::anon_send(requester, shard_values_atom::value,
                                          std::move(unsent.key), std::move(unsent.tensor));
                         });
  }
  reply->values.clear();
  reply->values_key = to.key;
}

// Delivers what a state call produced and forgets the answered requests.
void Deliver(ShardSelf self, ParameterShardState::Replies& out) {
  auto& st = self->state;
  auto finish = [&](RequestId id, auto& reply) {
    auto it = st.promises.find(id);
    if (it == st.promises.end()) return;
    it->second.deliver(std::move(reply));
    st.promises.erase(it);
    auto who = st.requester_of.find(id);
    if (who != st.requester_of.end()) {
      st.parked_by[who->second].erase(id);
      st.requester_of.erase(who);
    }
  };
  CopyToStandby(self);
  for (auto& r : out.pulls) finish(r.id, r);
  for (auto& r : out.pushes) {
    if (st.values_wanted.erase(r.id) > 0 && r.status.ok()) {
      st.shard->FillValues(&r);
      SendValuesApart(self, &r);
    }
    st.values_apart.erase(r.id);
    finish(r.id, r);
  }
  out = {};
}

// Hands a push whose gradients are all here to the state and delivers what that
// answers.
void PushToState(ShardSelf self, RequestId id, const ShardPushArgs& push, int64_t deadline) {
  ParameterShardState::Replies out;
  self->state.shard->Push(id, push, deadline, &out);
  Deliver(self, out);
}

// Keeps a sweep on its way for the earliest parked deadline.
// Makes sure a sweep comes by `next` (a deadline, in ms).
void ScheduleSweepBy(ShardSelf self, int64_t next) {
  auto& st = self->state;
  if (next == kNoDeadline || (!st.sweeps.empty() && *st.sweeps.begin() <= next)) return;
  st.sweeps.insert(next);
  const int64_t delay = std::max<int64_t>(0, next - NowMs(self));
  self->delayed_send(self, std::chrono::milliseconds(delay), shard_sweep_atom::value, next);
}

// A sweep by the earliest deadline of every parked request (a scan of them all).
void ScheduleSweep(ShardSelf self) {
  const auto& st = self->state;
  ScheduleSweepBy(self, std::min(st.shard->NextDeadline(), st.bulk.NextDeadline()));
}

// Pushes whose gradients did not all arrive by their wait are answered, not applied.
void ExpireGradientWaits(ShardSelf self, int64_t now, ParameterShardState::Replies* out) {
  auto& st = self->state;
  for (RequestId id : st.bulk.Expire(now)) {
    auto waiting = st.waiting_for_gradients.find(id);
    if (waiting == st.waiting_for_gradients.end()) continue;
    const ShardPushArgs& args = waiting->second.args;
    ShardPushReply reply;
    reply.id = id;
    reply.status = DeadlineExceeded(
        st.shard->name() + ": push of worker " + std::to_string(args.worker) + " (sequence " +
        std::to_string(args.sequence) + ") waited past its deadline for its " +
        std::to_string(args.names.size()) + " gradients sent apart ('" + args.bulk_key +
        "#i'); not applied");
    reply.version = st.shard->version();
    st.values_wanted.erase(id);
    st.values_apart.erase(id);
    out->pushes.push_back(std::move(reply));
    st.waiting_for_gradients.erase(waiting);
  }
}

// After a request was handed to the state: if it is still unanswered it is parked;
// remember who asked (`sender`, taken before make_response_promise, which moves it
// out of the message), so that its death cancels it, and bound it by its deadline
// (the only deadline that can be new: no scan of the other parked requests, which
// made a sync version of W workers cost W^2).
void TrackIfParked(ShardSelf self, RequestId id, const caf::actor& sender, int64_t deadline) {
  auto& st = self->state;
  if (!st.promises.count(id)) return;
  if (sender) {
    caf::actor_addr addr = sender.address();
    if (!st.parked_by.count(addr)) self->monitor(sender);
    st.parked_by[addr].insert(id);
    st.requester_of[id] = addr;
  }
  ScheduleSweepBy(self, deadline);
}

ShardActor::behavior_type ShardBehavior(ShardSelf self, std::string name, ShardConfig config,
                                        std::shared_ptr<BulkSender> bulk) {
  auto created = ParameterShardState::Create(std::move(name), std::move(config));
  // SpawnParameterShard validated the config; nothing else can fail here.
  self->state.shard = std::move(created).value();
  self->state.bulk_sender = std::move(bulk);

  self->set_down_handler([self](caf::down_msg& down) {
    auto& st = self->state;
    ParameterShardState::Replies out;
    auto worker = st.worker_of.find(down.source);
    if (worker != st.worker_of.end()) {
      const int w = worker->second;
      st.worker_of.erase(worker);
      auto current = st.actor_of.find(w);
      if (current != st.actor_of.end() && current->second == down.source) {
        st.actor_of.erase(current);
        // Its connection closed (the worker died) or the failure detector closed it
        // (the worker hung, or its link was cut). The transport knows which; it
        // knows the worker's connection by its ephemeral port only, so the recent
        // ends of all connections tell (connection_ends.h).
        const std::string how =
            down.reason == caf::exit_reason::remote_link_unreachable
                ? ConnectionLossCause("")
                : "its client actor ended (" + caf::to_string(down.reason) + ")";
        st.shard->WorkerLost(w, &out, how);
        // The ps task's own account, beside what the workers are told.
        std::fprintf(stderr, "actorflow: %s lost worker %d: %s\n",
                     self->state.shard->name().c_str(), w, how.c_str());
      }
    }
    auto parked = st.parked_by.find(down.source);
    if (parked != st.parked_by.end()) {
      for (RequestId id : parked->second) {
        st.shard->Cancel(id);
        st.bulk.Cancel(id);
        st.waiting_for_gradients.erase(id);
        st.values_apart.erase(id);
        st.values_wanted.erase(id);
        st.promises.erase(id);
        st.requester_of.erase(id);
      }
      st.parked_by.erase(parked);
    }
    Deliver(self, out);
  });

  return {
      [self](shard_check_atom, const ShardConfig& wanted) -> Status {
        const ParameterShardState& shard = *self->state.shard;
        if (wanted == shard.config()) return Status::OK();
        if (wanted.elastic && !shard.config().elastic) {
          return FailedPrecondition(shard.name() + " serves a training that is not elastic ('" +
                                    shard.config().ToString() +
                                    "'): a worker cannot join it with --elastic; start the "
                                    "training with --elastic to let workers come and go");
        }
        return FailedPrecondition(shard.name() + " was created for '" + shard.config().ToString() +
                                  "' and cannot serve '" + wanted.ToString() +
                                  "' (reset the cluster, or use the same options)");
      },
      [self](shard_init_atom, const std::vector<std::string>& names,
             const std::vector<Tensor>& values) -> Status {
        ParameterShardState::Replies out;
        Status status = self->state.shard->Initialize(names, values, &out);
        Deliver(self, out);
        return status;
      },
      [self](shard_pull_atom, int64_t min_version,
             int64_t timeout_ms) -> caf::result<ShardPullReply> {
        auto& st = self->state;
        const RequestId id = st.next_id++;
        auto sender = caf::actor_cast<caf::actor>(self->current_sender());
        auto promise = self->make_response_promise();
        st.promises[id] = promise;
        ParameterShardState::Replies out;
        const int64_t deadline = DeadlineFor(self, timeout_ms);
        st.shard->Pull(id, min_version, deadline, &out);
        Deliver(self, out);
        TrackIfParked(self, id, sender, deadline);
        return promise;
      },
      [self](shard_push_atom, ShardPushArgs& push,
             int64_t timeout_ms) -> caf::result<ShardPushReply> {
        auto& st = self->state;
        const RequestId id = st.next_id++;
        auto sender = caf::actor_cast<caf::actor>(self->current_sender());
        auto promise = self->make_response_promise();
        st.promises[id] = promise;
        if (push.return_values) st.values_wanted.insert(id);
        if (push.return_values && !push.values_endpoint.empty() && !push.values_key.empty() &&
            st.bulk_sender && sender) {
          st.values_apart[id] = ValuesApart{push.values_endpoint, push.values_key, sender};
        }
        const int64_t deadline = DeadlineFor(self, timeout_ms);
        if (!push.bulk_key.empty()) {
          const int64_t wait_until = deadline != kNoDeadline
                                         ? deadline
                                         : NowMs(self) + BulkGradientStash::kWaitWithoutDeadlineMs;
          if (!st.bulk.TakeOrWait(id, push.bulk_key, push.names.size(), wait_until,
                                  &push.gradients)) {
            st.waiting_for_gradients[id] = WaitingPush{std::move(push), deadline};
            TrackIfParked(self, id, sender, wait_until);
            return promise;
          }
        }
        PushToState(self, id, push, deadline);
        TrackIfParked(self, id, sender, deadline);
        return promise;
      },
      [self](shard_skip_atom, int32_t worker, int64_t version) {
        ParameterShardState::Replies out;
        self->state.shard->WillPushFrom(worker, version, &out);
        Deliver(self, out);
      },
      [self](shard_bulk_atom, const std::string& key, Tensor& gradient) {
        auto& st = self->state;
        RequestId id = 0;
        std::vector<Tensor> gradients;
        const int64_t now = NowMs(self);
        if (!st.bulk.Arrived(key, std::move(gradient), now, &id, &gradients)) {
          // Its push may never come: a sweep by the time it is an orphan.
          ScheduleSweepBy(self, now + BulkGradientStash::kOrphanMs);
          return;
        }
        auto waiting = st.waiting_for_gradients.find(id);
        if (waiting == st.waiting_for_gradients.end()) return;
        WaitingPush push = std::move(waiting->second);
        st.waiting_for_gradients.erase(waiting);
        push.args.gradients = std::move(gradients);
        PushToState(self, id, push.args, push.deadline);
        ScheduleSweepBy(self, push.deadline);  // its requester is tracked already
      },
      [self](shard_join_atom, int32_t worker, const caf::actor& who) -> Status {
        auto& st = self->state;
        ParameterShardState::Replies out;
        auto claimed = st.actor_of.find(worker);
        if (who && claimed != st.actor_of.end() && claimed->second != who.address() &&
            st.shard->IsLiveMember(worker)) {
          // Elastic membership admits one process per task: the first one keeps it.
          return AlreadyExists(st.shard->name() + ": worker " + std::to_string(worker) +
                               " is already a live member of this elastic training; a second "
                               "process claiming task " + std::to_string(worker) +
                               " is refused");
        }
        Status status = st.shard->Join(worker, &out);
        if (status.ok() && who) {
          auto previous = st.actor_of.find(worker);
          if (previous != st.actor_of.end()) st.worker_of.erase(previous->second);
          st.actor_of[worker] = who.address();
          st.worker_of[who.address()] = worker;
          self->monitor(who);
        }
        Deliver(self, out);
        return status;
      },
      [self](shard_leave_atom, int32_t worker) -> Status {
        auto& st = self->state;
        ParameterShardState::Replies out;
        auto previous = st.actor_of.find(worker);
        if (previous != st.actor_of.end()) {
          st.worker_of.erase(previous->second);
          st.actor_of.erase(previous);
        }
        st.shard->Leave(worker, &out);
        Deliver(self, out);
        return Status::OK();
      },
      [self](shard_snap_atom, int64_t version, int64_t timeout_ms) -> caf::result<ShardPullReply> {
        auto& st = self->state;
        const RequestId id = st.next_id++;
        auto sender = caf::actor_cast<caf::actor>(self->current_sender());
        auto promise = self->make_response_promise();
        st.promises[id] = promise;
        ParameterShardState::Replies out;
        const int64_t deadline = DeadlineFor(self, timeout_ms);
        st.shard->SnapshotAt(id, version, deadline, &out);
        Deliver(self, out);
        TrackIfParked(self, id, sender, deadline);
        return promise;
      },
      [self](shard_restore_atom, const std::vector<std::string>& names,
             const std::vector<Tensor>& values, const std::vector<std::string>& slot_names,
             const std::vector<Tensor>& slot_values, int64_t version) -> Status {
        ParameterShardState::Replies out;
        Status status =
            self->state.shard->Restore(names, values, slot_names, slot_values, version, &out);
        Deliver(self, out);
        return status;
      },
      [self](shard_floor_atom, int64_t floor) -> Status {
        ParameterShardState::Replies out;
        self->state.shard->RaiseVersion(floor, &out);
        Deliver(self, out);
        return Status::OK();
      },
      [self](shard_hold_atom, bool hold) -> Status {
        ParameterShardState::Replies out;
        self->state.shard->Hold(hold, &out);
        Deliver(self, out);
        ScheduleSweep(self);
        return Status::OK();
      },
      [self](shard_standby_atom, const caf::actor& standby) -> Status {
        auto& st = self->state;
        if (!standby || standby == caf::actor_cast<caf::actor>(self)) {
          return InvalidArgument(st.shard->name() + ": a standby must be another shard");
        }
        auto typed = caf::actor_cast<ShardActor>(standby);
        if (st.standby == typed) return Status::OK();  // every client names it again
        st.standby = typed;
        st.copied_version = -1;
        CopyToStandby(self);
        return Status::OK();
      },
      [self](shard_stats_atom) -> ShardStats { return self->state.shard->GetStats(); },
      [self](shard_sweep_atom, int64_t at) {
        auto& st = self->state;
        st.sweeps.erase(at);
        ParameterShardState::Replies out;
        const int64_t now = NowMs(self);
        st.shard->Expire(now, &out);
        ExpireGradientWaits(self, now, &out);
        Deliver(self, out);
        ScheduleSweep(self);
      },
  };
}

}  // namespace

StatusOr<ShardActor> SpawnParameterShard(caf::actor_system& system, const std::string& name,
                                         const ShardConfig& config,
                                         std::shared_ptr<BulkSender> bulk) {
  Status valid = ValidateShardConfig(config);
  if (!valid.ok()) return valid.WithContext(name);
  return system.spawn(ShardBehavior, name, config, std::move(bulk));
}

caf::result<Status, ShardActor> GetOrCreateShard(caf::local_actor* self,
                                                 TaskServices& services, const std::string& name,
                                                 const ShardConfig& config) {
  const std::string who = services.task_name + " shard '" + name + "'";
  Status valid = ValidateShardConfig(config);
  if (!valid.ok()) return {valid.WithContext(who), ShardActor{}};
  ShardActor shard;
  {
    std::lock_guard<std::mutex> lock(services.mu);
    auto it = services.shards.find(name);
    if (it == services.shards.end()) {
      auto spawned = SpawnParameterShard(self->system(), who, config, services.bulk_sender);
      if (!spawned.ok()) return {spawned.status(), ShardActor{}};
      services.shards[name] = *spawned;
      return {Status::OK(), *spawned};
    }
    shard = it->second;
  }
  // It exists: it alone knows its config. A short-lived helper asks it, so that any
  // kind of actor (the typed front, a test's stand-in) can call this; it happens
  // once per client and shard, off every step's path.
  auto promise = self->make_response_promise<Status, ShardActor>();
  self->system().spawn([promise, shard, who, config](caf::event_based_actor* asker) mutable {
    asker->request(shard, std::chrono::seconds(30), shard_check_atom::value, config)
      .then(
          [promise, shard](Status& status) mutable {
            promise.deliver(status, status.ok() ? shard : ShardActor{});
          },
          [promise, who](caf::error& error) mutable {
            promise.deliver(Unavailable(who + " did not answer: " + caf::to_string(error)),
                            ShardActor{});
          });
  });
  return promise;
}

void ClearShards(TaskServices& services, const std::vector<std::string>& containers) {
  std::lock_guard<std::mutex> lock(services.mu);
  for (auto it = services.shards.begin(); it != services.shards.end();) {
    const std::string container = it->first.substr(0, it->first.find('/'));
    const bool drop = containers.empty() || std::find(containers.begin(), containers.end(),
                                                      container) != containers.end();
    if (drop) {
      caf::anon_send_exit(it->second, caf::exit_reason::user_shutdown);
      it = services.shards.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace actorflow
