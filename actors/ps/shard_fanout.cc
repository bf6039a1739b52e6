#include "actors/ps/shard_fanout.h"

#include <algorithm>

#include "actors/transport/connection_ends.h"

namespace actorflow {

void CallBase::Fail(Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (done_) return;
  status_ = std::move(status);
  done_ = true;
  cv_.notify_all();
}

void CallBase::AnsweredLocked(size_t pos) {
  if (answered_[pos]) return;
  answered_[pos] = true;
  if (--pending_ == 0) {
    done_ = true;
    cv_.notify_all();
  }
}

Status CallBase::Wait(bool has_deadline, std::chrono::steady_clock::time_point deadline,
                      const std::string& what) {
  std::unique_lock<std::mutex> lock(mu_);
  if (pending_ == 0) done_ = true;
  if (has_deadline) {
    cv_.wait_until(lock, deadline, [&] { return done_; });
  } else {
    cv_.wait(lock, [&] { return done_; });
  }
  if (!done_) {
    std::string silent;
    for (size_t i = 0; i < targets_.size(); ++i) {
      if (!answered_[i]) silent += (silent.empty() ? "" : ", ") + names_[i];
    }
    status_ = DeadlineExceeded(what + ": no answer from " + silent + " before the deadline");
    done_ = true;
  }
  return status_;
}

namespace {

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void SetPushReply(FanOutActor* self, const std::shared_ptr<Call<ShardPushReply>>& call, size_t pos,
                  ShardPushReply reply) {
  if (reply.values_key.empty()) return call->Set(pos, std::move(reply));
  auto& st = self->state;
  const int64_t now = SteadyMs();
  // Replies whose values never came (their calls ended by their own deadlines).
  for (uint64_t expired : st.values_apart.Expire(now)) st.waiting_values.erase(expired);
  const uint64_t id = st.next_values_id++;
  std::vector<Tensor> values;
  if (st.values_apart.TakeOrWait(id, reply.values_key, reply.names.size(), now + kValuesWaitMs,
                                 &values)) {
    reply.values = std::move(values);
    return call->Set(pos, std::move(reply));
  }
  st.waiting_values[id] = WaitingValues{call, pos, std::move(reply)};
}

caf::actor SpawnFanOut(caf::actor_system& system, std::vector<ShardActor> shards,
                       std::vector<std::string> names, std::vector<std::string> addresses) {
  return system.spawn([shards, names, addresses](FanOutActor* self) -> caf::behavior {
    auto& st = self->state;
    st.shards = shards;
    st.names = names;
    st.addresses = addresses;
    st.down.assign(shards.size(), Status::OK());
    for (const ShardActor& s : shards) self->monitor(s);
    self->set_down_handler([self](caf::down_msg& down) {
      auto& st = self->state;
      for (size_t t = 0; t < st.shards.size(); ++t) {
        if (st.shards[t].address() != down.source) continue;
        // The connection closed: the task died, or the failure detector closed it
        // after silence (the task hung, or a link was cut); the transport knows
        // which (connection_ends.h). Either way its parameters are out of this
        // worker's reach.
        const std::string how = down.reason == caf::exit_reason::remote_link_unreachable
                                    ? ConnectionLossCause(st.addresses[t])
                                    : "its shard actor ended";
        st.down[t] = Unavailable(st.names[t] + " is lost (" + caf::to_string(down.reason) +
                                 "): " + how + ", and its parameters with it");
        for (auto& weak : st.calls) {
          auto call = weak.lock();
          if (!call) continue;
          const auto& targets = call->targets();
          if (std::find(targets.begin(), targets.end(), static_cast<int>(t)) != targets.end()) {
            call->Fail(st.down[t]);
          }
        }
      }
    });
    return {
        [self](shard_values_atom, std::string& key, Tensor& value) {
          auto& st = self->state;
          uint64_t id = 0;
          std::vector<Tensor> values;
          if (!st.values_apart.Arrived(key, std::move(value), SteadyMs(), &id, &values)) return;
          auto waiting = st.waiting_values.find(id);
          if (waiting == st.waiting_values.end()) return;
          WaitingValues done = std::move(waiting->second);
          st.waiting_values.erase(waiting);
          done.reply.values = std::move(values);
          if (auto call = done.call.lock()) call->Set(done.pos, std::move(done.reply));
        },
        [self](FanOutTask& task) {
          auto& calls = self->state.calls;
          calls.erase(std::remove_if(calls.begin(), calls.end(),
                                     [](const std::weak_ptr<CallBase>& c) { return c.expired(); }),
                      calls.end());
          task.fn(self);
        },
    };
  });
}

}  // namespace actorflow
