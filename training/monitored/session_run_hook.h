// SessionRunHook: TensorFlow 1.x's tf.train.SessionRunHook, the extension point of a
// MonitoredTrainingSession (training/monitored/monitored_session.h). A hook adds
// fetches, targets and feeds to every Run, sees its own fetches' values after it,
// may stop training, and gets callbacks when the session is created and closed.
//
// The order of calls for one monitored session:
//   Begin(graph)                        before the session exists: may add nodes
//   AfterCreateSession(session, coord)  the model is ready (initialized or restored)
//   per Run: BeforeRun(context, args) -> the one Session::Run -> AfterRun(context, values)
//   End(session)                        when it closes normally
// Every hook's BeforeRun runs before the step, in the hooks' order; their args are
// merged into the step (a fetch or target named twice runs once); each hook's
// AfterRun gets the values of its own fetches, in the order it asked for them.
// A hook's error, or an exception thrown from a callback, becomes the monitored
// session's Status naming the hook (name()) and the callback.
//
// Thread safety: a monitored session calls its hooks from the thread that calls its
// Run (and Create/Close), one call at a time. A hook's own threads (started on the
// coordinator) synchronize with it themselves.
#ifndef ACTORFLOW_TRAINING_MONITORED_SESSION_RUN_HOOK_H_
#define ACTORFLOW_TRAINING_MONITORED_SESSION_RUN_HOOK_H_

#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/session.h"

namespace actorflow {

class Coordinator;  // training/data/coordinator.h

// What a hook adds to the coming run: fetched tensors (names), targets (node names), feeds.
struct SessionRunArgs {
  std::vector<std::string> fetches;
  std::vector<std::string> targets;
  FeedList feeds;  // kernels/session.h
};

// The hook's fetches' values, in order.
struct SessionRunValues {
  std::vector<Tensor> results;
};

// The run being made: the session (for a hook that runs something itself, e.g. reads
// the global step again), what the caller asked for, and the hooks' stop request.
// Lives for one Run.
class SessionRunContext {
 public:
  SessionRunContext(Session* session, const std::vector<std::string>& original_fetches,
                    const std::vector<std::string>& original_targets);
  Session* session() const;
  const std::vector<std::string>& original_fetches() const;
  const std::vector<std::string>& original_targets() const;
  void RequestStop();  // the monitored session stops after this run
  bool stop_requested() const;

 private:
  Session* session_;
  std::vector<std::string> original_fetches_;
  std::vector<std::string> original_targets_;
  bool stop_requested_ = false;
};

class SessionRunHook {
 public:
  virtual ~SessionRunHook() = default;
  virtual std::string name() const = 0;  // names the hook in errors
  // Before the session is created: may add nodes to the graph.
  virtual Status Begin(Graph* graph) { return Status::OK(); }
  // After the session is created and the model is ready (initialized/restored); `coord`
  // is the monitored session's coordinator: threads started on it are stopped and joined
  // when the monitored session closes, after the session's Close (which aborts their runs).
  virtual Status AfterCreateSession(Session* session, Coordinator* coord) { return Status::OK(); }
  virtual Status BeforeRun(SessionRunContext* context, SessionRunArgs* args) {
    return Status::OK();
  }
  virtual Status AfterRun(SessionRunContext* context, const SessionRunValues& values) {
    return Status::OK();
  }
  // When the monitored session closes normally, before the session is closed.
  virtual Status End(Session* session) { return Status::OK(); }
};

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_MONITORED_SESSION_RUN_HOOK_H_
