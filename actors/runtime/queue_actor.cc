#include "actors/runtime/queue_actor.h"

#include <map>
#include <memory>
#include <unordered_map>
#include <utility>

#include "kernels/queue_state.h"

namespace actorflow {
namespace {

struct QueueActorState {
  std::unique_ptr<QueueState> queue;
  QueueState::RequestId next_id = 1;
  // Waiting requests by (requester, its id), for qcancel; and the reverse, to forget
  // a request once it is answered.
  std::map<std::pair<caf::actor_addr, uint64_t>, QueueState::RequestId> by_client;
  std::unordered_map<QueueState::RequestId, std::pair<caf::actor_addr, uint64_t>> clients;
  const char* name = "actorflow_queue";

  QueueReply Reply(Status status, std::vector<Tensor> components = {}) const {
    QueueReply r;
    r.status = std::move(status);
    r.components = std::move(components);
    r.size = queue->size();
    r.waiting_enqueues = queue->waiting_enqueues();
    r.waiting_dequeues = queue->waiting_dequeues();
    r.closed = queue->closed();
    return r;
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

caf::result<QueueReply> HandleOp(QueueSelf self, QueueOp& op) {
  QueueActorState& st = self->state;
  QueueState& q = *st.queue;
  switch (op.kind) {
    case QueueOp::Kind::kCheck:
      return st.Reply(q.spec().CheckSame(op.spec));
    case QueueOp::Kind::kSize:
      return st.Reply(Status::OK());
    case QueueOp::Kind::kClose:
      q.Close(op.cancel_pending_enqueues);
      return st.Reply(Status::OK());
    case QueueOp::Kind::kEnqueue:
    case QueueOp::Kind::kDequeue:
      break;
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
  if (waits) {
    auto key = std::make_pair(caf::actor_cast<caf::actor_addr>(self->current_sender()), op.client_id);
    st.by_client[key] = id;
    st.clients[id] = key;
    if (op.timeout_ms > 0) {
      self->delayed_send(self, std::chrono::milliseconds(op.timeout_ms), qtimeout_atom::value, id,
                         op.timeout_ms, std::string(OpName(op.kind)));
    }
  }
  return rp;
}

QueueActor::behavior_type QueueBehavior(QueueSelf self, QueueSpec spec,
                                        caf::strong_actor_ptr owner) {
  self->state.queue = std::make_unique<QueueState>(std::move(spec));
  auto stop = [self](const caf::error& reason) {
    QueueState& q = *self->state.queue;
    q.CancelAll(Cancelled("queue '" + q.spec().Key() + "' was stopped (its task ended or "
                          "its container was reset) while the request waited"));
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
        st.queue->Cancel(it->second, status);
      },
      [self](qrestore_atom, std::vector<Tensor>& components, bool many) {
        self->state.queue->Restore(std::move(components), many);
      },
      [self](qtimeout_atom, uint64_t id, int64_t timeout_ms, const std::string& op) {
        QueueState& q = *self->state.queue;
        q.Cancel(id, DeadlineExceeded(op + " on queue '" + q.spec().Key() + "' timed out after " +
                                      std::to_string(timeout_ms) +
                                      " ms; the queue is unchanged and still usable"));
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
