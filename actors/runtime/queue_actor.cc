#include "actors/runtime/queue_actor.h"

#include <map>
#include <memory>
#include <unordered_map>
#include <utility>

#include "kernels/accumulator_state.h"
#include "kernels/queue_state.h"

namespace actorflow {
namespace {

// Hosts a queue or, by its spec's kind, an accumulator: exactly one of the two.
struct QueueActorState {
  std::unique_ptr<QueueState> queue;
  std::unique_ptr<AccumulatorState> accumulator;
  QueueState::RequestId next_id = 1;
  // Waiting requests by (requester, its id), for qcancel; and the reverse, to forget
  // a request once it is answered.
  std::map<std::pair<caf::actor_addr, uint64_t>, QueueState::RequestId> by_client;
  std::unordered_map<QueueState::RequestId, std::pair<caf::actor_addr, uint64_t>> clients;
  const char* name = "actorflow_queue";

  const QueueSpec& spec() const { return queue ? queue->spec() : accumulator->spec(); }
  // "queue 'c/q'" or "accumulator 'c/a'".
  std::string Name() const {
    return (queue ? "queue '" : "accumulator '") + spec().Key() + "'";
  }

  QueueReply Reply(Status status, std::vector<Tensor> components = {}) const {
    QueueReply r;
    r.status = std::move(status);
    r.components = std::move(components);
    if (queue) {
      r.size = queue->size();
      r.waiting_enqueues = queue->waiting_enqueues();
      r.waiting_dequeues = queue->waiting_dequeues();
      r.closed = queue->closed();
    } else {
      r.counts = accumulator->counts();
    }
    return r;
  }

  // Remembers a waiting request of `sender`, for qcancel, with its timeout. The
  // sender is read before make_response_promise, which takes it from the message.
  template <class Self>
  void Park(Self self, const caf::actor_addr& sender, uint64_t id, uint64_t client_id,
            int64_t timeout_ms, const char* op) {
    auto key = std::make_pair(sender, client_id);
    by_client[key] = id;
    clients[id] = key;
    if (timeout_ms > 0) {
      self->delayed_send(self, std::chrono::milliseconds(timeout_ms), qtimeout_atom::value, id,
                         timeout_ms, std::string(op));
    }
  }

  // Answers the waiting request `id` with `status`, if it still waits.
  void Cancel(uint64_t id, const Status& status) {
    if (queue) queue->Cancel(id, status);
    if (accumulator) accumulator->Cancel(id, status);
  }

  void Forget(QueueState::RequestId id) {
    auto it = clients.find(id);
    if (it == clients.end()) return;
    by_client.erase(it->second);
    clients.erase(it);
  }
};

using QueueSelf = QueueActor::stateful_pointer<QueueActorState>;

const char* OpName(QueueOp::Kind kind) {
  switch (kind) {
    case QueueOp::Kind::kEnqueue: return "enqueue";
    case QueueOp::Kind::kDequeue: return "dequeue";
    default: return "request";
  }
}

bool IsAccumulatorOp(QueueOp::Kind kind) {
  return kind == QueueOp::Kind::kApplyGradient || kind == QueueOp::Kind::kTakeGradient ||
         kind == QueueOp::Kind::kSetGlobalStep || kind == QueueOp::Kind::kAccumulatorCounts;
}

caf::result<QueueReply> HandleAccumulatorOp(QueueSelf self, const caf::actor_addr& sender,
                                            QueueOp& op) {
  QueueActorState& st = self->state;
  AccumulatorState& acc = *st.accumulator;
  switch (op.kind) {
    case QueueOp::Kind::kApplyGradient:
      return st.Reply(acc.ApplyGradient(op.step, op.gradient));
    case QueueOp::Kind::kSetGlobalStep:
      acc.SetGlobalStep(op.step);
      return st.Reply(Status::OK());
    case QueueOp::Kind::kAccumulatorCounts:
      return st.Reply(Status::OK());
    default:
      break;  // kTakeGradient
  }
  auto rp = self->make_response_promise<QueueReply>();
  const uint64_t id = st.next_id++;
  auto answer = [self, rp, id](const Status& s, Tensor average, uint64_t take_id) mutable {
    self->state.Forget(id);
    QueueReply r = self->state.Reply(s);
    r.average = std::move(average);
    r.take_id = take_id;
    rp.deliver(std::move(r));
  };
  const bool waits = acc.TakeGradient(id, op.num_required, std::move(answer));
  if (waits) st.Park(self, sender, id, op.client_id, op.timeout_ms, "TakeGradient");
  return rp;
}

caf::result<QueueReply> HandleOp(QueueSelf self, QueueOp& op) {
  QueueActorState& st = self->state;
  // Who may withdraw the request (qcancel): read now, make_response_promise takes it.
  const caf::actor_addr sender = caf::actor_cast<caf::actor_addr>(self->current_sender());
  if (op.kind == QueueOp::Kind::kCheck) return st.Reply(st.spec().CheckSame(op.spec));
  if (IsAccumulatorOp(op.kind) != (st.accumulator != nullptr)) {
    return st.Reply(InvalidArgument(
        "'" + st.spec().Key() + "' is a " + st.spec().DebugString() + ", not " +
        (st.accumulator ? "a queue" : "a ConditionalAccumulator") +
        ": a queue and an accumulator cannot share a name; use another shared_name"));
  }
  if (st.accumulator) return HandleAccumulatorOp(self, sender, op);
  QueueState& q = *st.queue;
  switch (op.kind) {
    case QueueOp::Kind::kSize:
      return st.Reply(Status::OK());
    case QueueOp::Kind::kClose:
      q.Close(op.cancel_pending_enqueues);
      return st.Reply(Status::OK());
    default:
      break;  // kEnqueue, kDequeue
  }
  auto rp = self->make_response_promise<QueueReply>();
  const QueueState::RequestId id = st.next_id++;
  bool waits = false;
  if (op.kind == QueueOp::Kind::kEnqueue) {
    waits = q.Enqueue(id, std::move(op.components), op.many, [self, rp, id](const Status& s) mutable {
      self->state.Forget(id);
      rp.deliver(self->state.Reply(s));
    });
  } else {
    waits = q.Dequeue(id, op.n, [self, rp, id](const Status& s, std::vector<Tensor> c) mutable {
      self->state.Forget(id);
      rp.deliver(self->state.Reply(s, std::move(c)));
    });
  }
  if (waits) st.Park(self, sender, id, op.client_id, op.timeout_ms, OpName(op.kind));
  return rp;
}

QueueActor::behavior_type QueueBehavior(QueueSelf self, QueueSpec spec,
                                        caf::strong_actor_ptr owner) {
  if (spec.is_accumulator()) {
    self->state.accumulator = std::make_unique<AccumulatorState>(std::move(spec));
  } else {
    self->state.queue = std::make_unique<QueueState>(std::move(spec));
  }
  auto stop = [self](const caf::error& reason) {
    QueueActorState& st = self->state;
    const Status stopped = Cancelled(st.Name() + " was stopped (its task ended or its "
                                     "container was reset) while the request waited");
    if (st.queue) st.queue->CancelAll(stopped);
    if (st.accumulator) st.accumulator->CancelAll(stopped);
    self->quit(reason);
  };
  if (owner) {
    self->monitor(owner);
    self->set_down_handler([stop](caf::down_msg& down) { stop(down.reason); });
  }
  self->set_exit_handler([stop](caf::exit_msg& exit) { stop(exit.reason); });
  return {
      [self](qop_atom, QueueOp& op) -> caf::result<QueueReply> { return HandleOp(self, op); },
      [self](qcancel_atom, uint64_t client_id, const Status& status) {
        QueueActorState& st = self->state;
        auto key = std::make_pair(caf::actor_cast<caf::actor_addr>(self->current_sender()), client_id);
        auto it = st.by_client.find(key);
        if (it == st.by_client.end()) return;  // already answered
        st.Cancel(it->second, status);
      },
      [self](qrestore_atom, std::vector<Tensor>& components, bool many) {
        if (self->state.queue) self->state.queue->Restore(std::move(components), many);
      },
      [self](arestore_atom, uint64_t take_id) {
        if (self->state.accumulator) self->state.accumulator->RestoreTake(take_id);
      },
      [self](qtimeout_atom, uint64_t id, int64_t timeout_ms, const std::string& op) {
        QueueActorState& st = self->state;
        st.Cancel(id, DeadlineExceeded(op + " on " + st.Name() + " timed out after " +
                                       std::to_string(timeout_ms) + " ms; the " +
                                       (st.queue ? "queue" : "accumulator") +
                                       " is unchanged and still usable"));
      },
  };
}

}  // namespace

QueueActor SpawnQueueActor(caf::actor_system& system, QueueSpec spec,
                           caf::strong_actor_ptr owner) {
  return system.spawn(QueueBehavior, std::move(spec), std::move(owner));
}

void ClearQueues(TaskServices& services, const std::vector<std::string>& containers) {
  std::vector<QueueActor> stopped;
  {
    std::lock_guard<std::mutex> lock(services.mu);
    for (auto it = services.queues.begin(); it != services.queues.end();) {
      const std::string container = it->first.substr(0, it->first.find('/'));
      bool match = containers.empty();
      for (const std::string& c : containers) match = match || c == container;
      if (match) {
        stopped.push_back(it->second);
        it = services.queues.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const QueueActor& q : stopped) caf::anon_send_exit(q, caf::exit_reason::user_shutdown);
}

}  // namespace actorflow
