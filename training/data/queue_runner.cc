#include "training/data/queue_runner.h"

#include <condition_variable>
#include <memory>
#include <mutex>

#include "graph/cooperative.h"

namespace actorflow {
namespace {

// What a runner's threads share: how many still run, and whether a stop came.
struct RunnerState {
  std::mutex mu;
  std::condition_variable cv;
  int active = 0;
  bool stop_seen = false;
};

}  // namespace

Status QueueRunner::Start(Session* session, Coordinator* coord) const {
  if (def_.enqueue_ops.empty()) {
    return InvalidArgument("queue runner '" + def_.name + "' has no enqueue op");
  }
  if (session == nullptr || coord == nullptr) {
    return InvalidArgument("queue runner '" + def_.name + "' needs a session and a coordinator");
  }
  auto state = std::make_shared<RunnerState>();
  state->active = static_cast<int>(def_.enqueue_ops.size());
  const QueueRunnerDef def = def_;
  for (size_t i = 0; i < def.enqueue_ops.size(); ++i) {
    const std::string op = def.enqueue_ops[i];
    const std::string who = "queue runner " + def.name + " (op " + op + ")";
    coord->StartThread(who, [session, coord, state, def, op, who] {
      bool clean_end = false;
      for (int64_t runs = 0; !coord->ShouldStop(); ++runs) {
        if (def.max_runs >= 0 && runs >= def.max_runs) {
          clean_end = true;
          break;
        }
        Status s = session->Run({}, {}, {op}, nullptr);
        if (s.ok()) continue;
        if (s.code() == Code::kOutOfRange) {
          clean_end = true;
        } else if (!coord->ShouldStop()) {
          // An enqueue cancelled because of the stop is not an error of its own.
          coord->RequestStop(s, who);
        }
        break;
      }
      bool last = false;
      {
        std::lock_guard<std::mutex> lock(state->mu);
        last = --state->active == 0;
      }
      state->cv.notify_all();
      if (last && clean_end && !def.close_op.empty()) {
        Status closed = session->Run({}, {}, {def.close_op}, nullptr);
        if (!closed.ok() && !coord->ShouldStop()) coord->RequestStop(closed, who);
      }
    });
  }
  if (!def.cancel_op.empty()) {
    // The closer: on a stop, releases the threads that wait on a full queue.
    coord->AddStopCallback([state] {
      {
        std::lock_guard<std::mutex> lock(state->mu);
        state->stop_seen = true;
      }
      state->cv.notify_all();
    });
    const std::string who = "queue runner " + def.name + " (closer)";
    coord->StartThread(who, [session, state, def] {
      std::unique_lock<std::mutex> lock(state->mu);
      WaitCooperatively(lock, state->cv, [&] { return state->stop_seen || state->active == 0; });
      if (!state->stop_seen) return;  // every thread ended by itself
      lock.unlock();
      session->Run({}, {}, {def.cancel_op}, nullptr);
    });
  }
  return Status::OK();
}

Status StartQueueRunners(Session* session, Coordinator* coord,
                         const std::vector<QueueRunner>& runners) {
  for (const QueueRunner& r : runners) {
    Status s = r.Start(session, coord);
    if (!s.ok()) {
      coord->RequestStop(s, "StartQueueRunners");
      return s;
    }
  }
  return Status::OK();
}

}  // namespace actorflow
