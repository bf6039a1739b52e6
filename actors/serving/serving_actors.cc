// Replica and batcher actors of the model server (actors/serving/serving_protocol.h).
#include <chrono>
#include <utility>

#include "actors/serving/serving_protocol.h"
#include "actors/protocol/wire.h"
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
  std::string task;
  int64_t timeout_ms = 0;
};

ServingReplica::behavior_type RemoteReplicaBehavior(
    ServingReplica::stateful_pointer<RemoteReplicaState> self, FrontActor front,
    uint64_t session_id, std::string task, int64_t timeout_ms) {
  RemoteReplicaState& st = self->state;
  st.front = std::move(front);
  st.session_id = session_id;
  st.task = std::move(task);
  st.timeout_ms = timeout_ms;
  return {
      [self](ServeCallPtr& call) {
        RemoteReplicaState& st = self->state;
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
        const std::string task = st.task;
        self->request(st.front, wait, remote_step_atom::value, std::move(step))
            .then(
                [call](RemoteStepResult& r) {
                  if (r.status.ok()) {
                    call->done(std::move(r.outputs));
                  } else {
                    call->done(r.status);
                  }
                },
                [self, call, task](caf::error& e) {
                  call->done(Unavailable("serving replica on " + task + ": " +
                                         self->system().render(e)));
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

ServingReplica SpawnRemoteServingReplica(caf::actor_system& system, FrontActor front,
                                         uint64_t session_id, std::string task,
                                         int64_t timeout_ms) {
  return system.spawn(RemoteReplicaBehavior, std::move(front), session_id, std::move(task),
                      timeout_ms);
}

ServingBatcher SpawnServingBatcher(caf::actor_system& system, int64_t max_batch_size,
                                   int64_t batch_timeout_micros, DispatchFn dispatch) {
  return system.spawn(BatcherBehavior, max_batch_size, batch_timeout_micros, std::move(dispatch));
}

}  // namespace actorflow
