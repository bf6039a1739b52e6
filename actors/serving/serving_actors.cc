// Replica and batcher actors of the model server (actors/serving/serving_protocol.h).
#include <atomic>
#include <chrono>
#include <map>
#include <utility>

#include "actors/serving/serving_protocol.h"
#include "actors/protocol/wire.h"
#include "actors/transport/connection_ends.h"
#include "kernels/direct_session.h"
#include "training/optimizers/partitioned_variable.h"

namespace actorflow {
namespace {

struct ReplicaState {
  std::shared_ptr<const Servable> servable;  // keeps the graph alive for the session
  std::unique_ptr<Session> session;
  Status open_error;
};

// A replica runs its version's graph in its own thread of control: kernels execute
// inline (the replica is the device for its session), so the actor computes but
// never waits on anything.
ServingReplica::behavior_type ReplicaBehavior(ServingReplica::stateful_pointer<ReplicaState> self,
                                              std::shared_ptr<const Servable> servable) {
  ReplicaState& st = self->state;
  st.servable = std::move(servable);
  auto session = NewDirectSession(st.servable->graph.get());
  if (session.ok()) {
    st.session = std::move(session).value();
  } else {
    st.open_error = session.status();
  }
  return {
      [self](ServeCallPtr& call) {
        ReplicaState& st = self->state;
        if (!st.session) {
          call->done(st.open_error);
          return;
        }
        std::vector<Tensor> outputs;
        Status s = st.session->Run(call->feeds, call->fetches, {}, &outputs);
        if (!s.ok()) {
          call->done(s);
        } else {
          call->done(std::move(outputs));
        }
      },
  };
}

struct RemoteReplicaState {
  FrontActor front;
  uint64_t session_id = 0;
  std::string task;  // "/job:worker/task:0 at host:port"
  std::string address;
  int64_t timeout_ms = 0;
  std::shared_ptr<std::atomic<bool>> lost;
  Status lost_status;  // once the task is lost
  // Calls sent and not answered, by number: each is answered once, by its reply,
  // its error, or the task's loss, whichever comes first.
  std::map<uint64_t, ServeCallPtr> in_flight;
  uint64_t next_call = 1;
};

// Answers call `id` (if it is still in flight) with `result`.
void Answer(RemoteReplicaState& st, uint64_t id, StatusOr<std::vector<Tensor>> result) {
  auto it = st.in_flight.find(id);
  if (it == st.in_flight.end()) return;
  ServeCallPtr call = std::move(it->second);
  st.in_flight.erase(it);
  call->done(std::move(result));
}

ServingReplica::behavior_type RemoteReplicaBehavior(
    ServingReplica::stateful_pointer<RemoteReplicaState> self, RemoteReplicaTarget target,
    int64_t timeout_ms) {
  RemoteReplicaState& st = self->state;
  st.front = std::move(target.front);
  st.session_id = target.session_id;
  st.task = target.task + " at " + target.address;
  st.address = std::move(target.address);
  st.timeout_ms = timeout_ms;
  st.lost = std::move(target.lost);
  // The task's front goes down when its connection closes: the task died, or the
  // failure detector closed it after a silence (actors/transport/server_limits.h).
  // Every call in flight there fails then, not at its deadline, and the version's
  // pool sends no more calls here (ReplicaPool::LeastLoaded).
  self->monitor(st.front);
  self->set_down_handler([self](caf::down_msg& down) {
    RemoteReplicaState& st = self->state;
    if (down.source != st.front.address()) return;
    const std::string how = down.reason == caf::exit_reason::remote_link_unreachable
                                ? ConnectionLossCause(st.address)
                                : "its front actor ended (" + self->system().render(down.reason) +
                                      ")";
    st.lost_status = Unavailable("serving replica on " + st.task + " is lost: " + how);
    if (st.lost) st.lost->store(true);
    while (!st.in_flight.empty()) Answer(st, st.in_flight.begin()->first, st.lost_status);
  });
  return {
      [self](ServeCallPtr& call) {
        RemoteReplicaState& st = self->state;
        if (!st.lost_status.ok()) {
          call->done(st.lost_status);
          return;
        }
        RemoteStep step;
        step.session_id = st.session_id;
        for (auto& [name, value] : call->feeds) {
          step.feed_names.push_back(name);
          step.feed_values.push_back(value);
        }
        step.fetches = call->fetches;
        step.timeout_in_ms = st.timeout_ms;
        step.want_metadata = false;
        // The task enforces the step's deadline; the margin covers the network.
        const caf::duration wait = st.timeout_ms > 0
                                       ? caf::duration{std::chrono::milliseconds(st.timeout_ms + 5000)}
                                       : caf::duration{caf::infinite};
        const uint64_t id = st.next_call++;
        st.in_flight.emplace(id, std::move(call));
        self->request(st.front, wait, remote_step_atom::value, std::move(step))
            .then(
                [self, id](RemoteStepResult& r) {
                  if (r.status.ok()) {
                    Answer(self->state, id, std::move(r.outputs));
                  } else {
                    Answer(self->state, id, r.status);
                  }
                },
                [self, id](caf::error& e) {
                  RemoteReplicaState& st = self->state;
                  Answer(st, id,
                         st.lost_status.ok()
                             ? Unavailable("serving replica on " + st.task + ": " +
                                           self->system().render(e))
                             : st.lost_status);
                });
      },
  };
}

struct BatcherState {
  std::vector<ServeCallPtr> pending;
  int64_t pending_rows = 0;
  uint64_t generation = 0;  // of the pending batch; a stale flush timer is ignored
};

// Whether `call` can join a batch whose first call is `first`: the same feeds (by
// name and trailing dimensions) and fetches.
bool Batchable(const ServeCall& first, const ServeCall& call) {
  if (first.fetches != call.fetches || first.feeds.size() != call.feeds.size()) return false;
  for (size_t i = 0; i < first.feeds.size(); ++i) {
    const auto& [name_a, a] = first.feeds[i];
    const auto& [name_b, b] = call.feeds[i];
    if (name_a != name_b || a.dtype() != b.dtype() || a.shape().rank() != b.shape().rank() ||
        a.shape().rank() == 0) {
      return false;
    }
    for (int d = 1; d < a.shape().rank(); ++d)
      if (a.shape().dim(d) != b.shape().dim(d)) return false;
  }
  return true;
}

// One call for the whole batch: each feed concatenated along the batch dimension;
// its outputs are split back by each call's rows.
ServeCallPtr MergeBatch(std::vector<ServeCallPtr> calls) {
  if (calls.size() == 1) return calls.front();
  auto merged = std::make_shared<ServeCall>();
  merged->fetches = calls.front()->fetches;
  std::vector<int64_t> rows;
  for (const ServeCallPtr& c : calls) {
    rows.push_back(c->rows);
    merged->rows += c->rows;
  }
  for (size_t i = 0; i < calls.front()->feeds.size(); ++i) {
    std::vector<Tensor> parts;
    for (const ServeCallPtr& c : calls) parts.push_back(c->feeds[i].second);
    StatusOr<Tensor> whole = ConcatAlongDim0(parts);
    if (!whole.ok()) {
      for (const ServeCallPtr& c : calls) c->done(whole.status());
      return nullptr;
    }
    merged->feeds.emplace_back(calls.front()->feeds[i].first, std::move(whole).value());
  }
  merged->done = [calls = std::move(calls), rows, total_rows = merged->rows](StatusOr<std::vector<Tensor>> result) {
    if (!result.ok()) {
      for (const ServeCallPtr& c : calls) c->done(result.status());
      return;
    }
    std::vector<std::vector<Tensor>> per_call(calls.size());
    for (const Tensor& output : *result) {
      // An output without the batch dimension (a scalar) goes to every call whole.
      if (output.shape().rank() == 0 || output.shape().dim(0) != total_rows) {
        for (auto& outputs : per_call) outputs.push_back(output);
        continue;
      }
      StatusOr<std::vector<Tensor>> slices = output.SplitSizes(rows);
      if (!slices.ok()) {
        for (const ServeCallPtr& c : calls) c->done(slices.status());
        return;
      }
      for (size_t i = 0; i < calls.size(); ++i) per_call[i].push_back((*slices)[i]);
    }
    for (size_t i = 0; i < calls.size(); ++i) calls[i]->done(std::move(per_call[i]));
  };
  return merged;
}

ServingBatcher::behavior_type BatcherBehavior(ServingBatcher::stateful_pointer<BatcherState> self,
                                              int64_t max_batch_size, int64_t timeout_micros,
                                              DispatchFn dispatch) {
  auto flush = [self, dispatch]() {
    BatcherState& st = self->state;
    if (st.pending.empty()) return;
    std::vector<ServeCallPtr> calls;
    calls.swap(st.pending);
    st.pending_rows = 0;
    ++st.generation;
    ServeCallPtr merged = MergeBatch(std::move(calls));
    if (merged) dispatch(std::move(merged));
  };
  return {
      [self, flush, max_batch_size, timeout_micros](ServeCallPtr& call) {
        BatcherState& st = self->state;
        if (!st.pending.empty() && (!Batchable(*st.pending.front(), *call) ||
                                    st.pending_rows + call->rows > max_batch_size)) {
          flush();
        }
        const bool first = st.pending.empty();
        st.pending_rows += call->rows;
        st.pending.push_back(std::move(call));
        if (st.pending_rows >= max_batch_size || timeout_micros <= 0) {
          flush();
        } else if (first) {
          self->delayed_send(self, std::chrono::microseconds(timeout_micros),
                             serve_flush_atom::value, st.generation);
        }
      },
      [self, flush](serve_flush_atom, uint64_t generation) {
        if (generation == self->state.generation) flush();
      },
  };
}

}  // namespace

ServingReplica SpawnServingReplica(caf::actor_system& system,
                                   std::shared_ptr<const Servable> servable) {
  return system.spawn(ReplicaBehavior, std::move(servable));
}

ServingReplica SpawnRemoteServingReplica(caf::actor_system& system, RemoteReplicaTarget target,
                                         int64_t timeout_ms) {
  return system.spawn(RemoteReplicaBehavior, std::move(target), timeout_ms);
}

ServingBatcher SpawnServingBatcher(caf::actor_system& system, int64_t max_batch_size,
                                   int64_t batch_timeout_micros, DispatchFn dispatch) {
  return system.spawn(BatcherBehavior, max_batch_size, batch_timeout_micros, std::move(dispatch));
}

}  // namespace actorflow
