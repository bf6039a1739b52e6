// How a blocking client thread talks to a set of parameter shards: one request per
// shard, all in flight at once, answered into a Call the thread waits on. The
// requests are sent by a "fan-out" actor of the client's own actor system, which
// monitors every shard: a shard that goes down fails the calls waiting on it at once
// with Unavailable naming its ps task (a request to a dead remote actor would
// otherwise only time out), and every later call to it fails the same way.
//
// The fan-out actor itself stays dynamically typed: its one message is a local
// closure posted by its own client (FanOutTask) and it is never published, so a
// typed interface would check nothing; the requests it sends go through typed
// ShardActor handles and are checked at compile time.
//
// Thread safety: a Call is shared by the waiting thread and the fan-out actor and
// guarded by its mutex; the actor's state is its own.
// Included only by actors/*.cc (CAF).
#ifndef ACTORFLOW_ACTORS_PS_SHARD_FANOUT_H_
#define ACTORFLOW_ACTORS_PS_SHARD_FANOUT_H_

#include <caf/all.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "actors/ps/bulk_gradients.h"
#include "actors/protocol/shard_messages.h"
#include "graph/status.h"

namespace actorflow {

// What a waiting thread knows of its requests.
class CallBase {
 public:
  CallBase(std::vector<int> targets, std::vector<std::string> target_names)
      : targets_(std::move(targets)),
        names_(std::move(target_names)),
        answered_(targets_.size(), false),
        pending_(targets_.size()) {}
  virtual ~CallBase() = default;

  const std::vector<int>& targets() const { return targets_; }
  // Ends the call with `status` (the first failure wins).
  void Fail(Status status);
  // Waits until every target answered or the call failed, at most until `deadline`
  // (none when `has_deadline` is false): then DeadlineExceeded naming the targets
  // that did not answer, prefixed by `what`.
  Status Wait(bool has_deadline, std::chrono::steady_clock::time_point deadline,
              const std::string& what);

 protected:
  // Records that position `pos` answered; under mu_.
  void AnsweredLocked(size_t pos);

  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  Status status_;

 private:
  std::vector<int> targets_;        // shard indices
  std::vector<std::string> names_;  // parallel: their ps tasks
  std::vector<bool> answered_;
  size_t pending_;
};

template <class Reply>
class Call : public CallBase {
 public:
  Call(std::vector<int> targets, std::vector<std::string> target_names)
      : CallBase(std::move(targets), std::move(target_names)), replies_(this->targets().size()) {}

  void Set(size_t pos, Reply reply) {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return;
    replies_[pos] = std::move(reply);
    AnsweredLocked(pos);
  }
  // After Wait returned OK: the reply of each target, by position.
  std::vector<Reply>& replies() { return replies_; }

 private:
  std::vector<Reply> replies_;
};

// A push reply whose values come apart (PushReply::values_key), until they are here.
struct WaitingValues {
  std::weak_ptr<Call<ShardPushReply>> call;
  size_t pos = 0;
  ShardPushReply reply;
};

struct FanOutState {
  std::vector<ShardActor> shards;
  std::vector<std::string> names;              // "/job:ps/task:0 at host:port"
  std::vector<std::string> addresses;          // where each shard lives: "host:port"
  std::vector<Status> down;                    // OK while the shard is up
  std::vector<std::weak_ptr<CallBase>> calls;  // in flight
  // Values of push replies that come apart: those that arrived, the replies waiting.
  BulkGradientStash values_apart;
  std::map<uint64_t, WaitingValues> waiting_values;
  uint64_t next_values_id = 1;
  const char* name = "parameter_fanout";
};
using FanOutActor = caf::stateful_actor<FanOutState>;

// Work for the fan-out actor, posted by the client thread (local-only).
struct FanOutTask {
  std::function<void(FanOutActor*)> fn;
};

// Its messages: FanOutTask, and (shard_values_atom, key, value), one value of a push
// reply sent apart (from the client's bulk receiver or the shard itself).
caf::actor SpawnFanOut(caf::actor_system& system, std::vector<ShardActor> shards,
                       std::vector<std::string> names, std::vector<std::string> addresses);

// A push reply for `call`'s position `pos`: set at once, or, when its values come
// apart, once they all arrived (a reply waits at most kValuesWaitMs for them; its
// call has its own deadline anyway).
void SetPushReply(FanOutActor* self, const std::shared_ptr<Call<ShardPushReply>>& call, size_t pos,
                  ShardPushReply reply);
constexpr int64_t kValuesWaitMs = 60000;

// Inside a FanOutTask: registers `call` and sends `xs` to each of its targets with
// `timeout` (a failure of CAF's request fails the call naming the target); targets
// already down fail it at once.
template <class Reply, class MakeArgs>
void SendToTargets(FanOutActor* self, const std::shared_ptr<Call<Reply>>& call,
                   caf::duration timeout, MakeArgs make_args) {
  auto& st = self->state;
  for (int t : call->targets()) {
    if (!st.down[t].ok()) return call->Fail(st.down[t]);
  }
  st.calls.push_back(call);
  for (size_t pos = 0; pos < call->targets().size(); ++pos) {
    const int t = call->targets()[pos];
    std::string who = st.names[t];
    std::apply(
        [&](auto&&... xs) {
          self->request(st.shards[t], timeout, xs...)
              .then(
                  [call, pos, self](Reply& reply) {
                    if constexpr (std::is_same<Reply, ShardPushReply>::value) {
                      SetPushReply(self, call, pos, std::move(reply));
                    } else {
                      call->Set(pos, std::move(reply));
                    }
                  },
                  [call, who, self, t, target = st.shards[t]](caf::error& error) {
                    if (error == caf::sec::request_timeout) {
                      return call->Fail(DeadlineExceeded(who + " did not answer in time"));
                    }
                    Status failed = Unavailable(who + ": " + caf::to_string(error));
                    // A receiver that is gone is down now, whether or not its down
                    // message arrived yet (a fail-over must see it).
                    if ((error == caf::sec::request_receiver_down ||
                         error.category() == caf::atom("exit")) &&
                        self->state.shards[t] == target) {
                      self->state.down[t] = failed;
                    }
                    call->Fail(failed);
                  });
        },
        make_args(pos));
  }
}

}  // namespace actorflow

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorflow::FanOutTask)

#endif  // ACTORFLOW_ACTORS_PS_SHARD_FANOUT_H_
