#include "actors/shard_fanout.h"

#include <algorithm>

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

caf::actor SpawnFanOut(caf::actor_system& system, std::vector<ShardActor> shards,
                       std::vector<std::string> names) {
  return system.spawn([shards, names](FanOutActor* self) -> caf::behavior {
    auto& st = self->state;
    st.shards = shards;
    st.names = names;
    st.down.assign(shards.size(), Status::OK());
    for (const ShardActor& s : shards) self->monitor(s);
    self->set_down_handler([self](caf::down_msg& down) {
      auto& st = self->state;
      for (size_t t = 0; t < st.shards.size(); ++t) {
        if (st.shards[t].address() != down.source) continue;
        st.down[t] = Unavailable(st.names[t] + " is down (" + caf::to_string(down.reason) +
                                 "): its parameters are gone with it");
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
