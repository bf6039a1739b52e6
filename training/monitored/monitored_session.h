// MonitoredTrainingSession: TensorFlow 1.x's tf.train.MonitoredTrainingSession for a
// user's own graph. It opens a session, makes the model ready (the chief initializes
// or restores it and never resets live variables; other tasks wait for the chief),
// runs hooks around every step (checkpoints, summaries, step counting, stopping),
// bounds every step by a deadline, and stops and closes cleanly.
//
//   Scope root = Scope::NewRootScope();   ... build the model, CreateGlobalStep ...
//   MonitoredTrainingSessionOptions options;
//   options.is_chief = task == 0;
//   options.checkpoint_dir = "/models/run1";
//   options.hooks = {StopAtStepHook::AtLastStep(10000)};
//   AF_ASSIGN_OR_RETURN(auto mts, NewMonitoredTrainingSession(root.graph(), target, options));
//   while (!mts->ShouldStop()) AF_RETURN_IF_ERROR(mts->Run({}, {}, {"train"}, nullptr));
//   AF_RETURN_IF_ERROR(mts->Close());
// (NewMonitoredTrainingSession: actors/monitored/monitored_session_factory.h; here the
// session comes from any `open_session` function, e.g. NewDirectSession.)
//
// Create, in order: the hooks' Begin(graph) (chief_only_hooks on the chief, then the
// default hooks below, then hooks: the order of every later callback too); the
// scaffold's Finalize; open_session(); the model made ready (PrepareChiefSession or
// WaitForSessionReady, training/monitored/session_manager.h) and the local variables
// initialized; the hooks' AfterCreateSession(session, coordinator).
// Default hooks, on the chief, for a graph with a global step:
//   StepCounterHook     log_step_count_steps > 0
//   SummarySaverHook    checkpoint_dir set and save_summaries_steps > 0 (summary_scalars)
//   CheckpointSaverHook checkpoint_dir set and save_checkpoint_steps or _secs > 0
// (without a global step the first two are left out; the third is FailedPrecondition).
//
// Run: every hook's BeforeRun (args merged: a name asked twice is fetched once; a
// tensor fed twice is InvalidArgument naming the hook), one Session::Run with
// RunOptions.timeout_in_ms = step_timeout_ms, then every hook's AfterRun with its own
// fetches' values. A hook's error or exception is the Run's Status, naming the hook
// and the callback. OutOfRange from the step (an input pipeline ran out) makes
// ShouldStop() true; DeadlineExceeded says the step passed the monitored session's
// step deadline and keeps the runtime's message (which names what it waited on).
//
// The graph is final once Create returns (TF1's graph.finalize()): a Run after nodes
// were added to it is FailedPrecondition saying so, since the hooks' threads read the
// graph while they run.
//
// Close: the hooks' End (skipped when the last Run failed with an error other than
// OutOfRange, as TensorFlow skips it on an exception), the coordinator's stop, the
// session's Close (which aborts steps in flight), then the coordinator's Join within
// stop_grace_period_ms. The destructor closes.
//
// Thread safety: Run, Close and the destructor from one thread at a time (the
// hooks are called from it); ShouldStop from any thread. `graph` and everything the
// hooks hold must outlive the monitored session.
#ifndef ACTORFLOW_TRAINING_MONITORED_MONITORED_SESSION_H_
#define ACTORFLOW_TRAINING_MONITORED_MONITORED_SESSION_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "graph/scope.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/session.h"
#include "training/monitored/scaffold.h"
#include "training/monitored/session_run_hook.h"

namespace actorflow {

struct MonitoredTrainingSessionOptions {
  bool is_chief = true;
  // Where the chief restores from and saves checkpoints and summaries ("" = none).
  std::string checkpoint_dir;
  // Checkpoints every this many global steps (0 = off); when 0, every this many
  // seconds (0 = off). Both 0: no CheckpointSaverHook.
  int64_t save_checkpoint_steps = 0;
  int64_t save_checkpoint_secs = 600;
  // Summaries into checkpoint_dir every this many steps (0 = off): the scalars below,
  // and "global_step/sec" from the step counter.
  int64_t save_summaries_steps = 100;
  // Scalar summaries: tag -> the name of a one-element numeric tensor.
  std::map<std::string, std::string> summary_scalars;
  // Prints "global_step/sec: X" to stderr every this many steps (0 = off).
  int64_t log_step_count_steps = 100;
  // The deadline of every step (RunOptions.timeout_in_ms); 0 = none.
  int64_t step_timeout_ms = 60000;
  // A non-chief's bound on waiting for the chief to make the model ready.
  int64_t wait_for_model_ms = 5 * 60 * 1000;
  // How long Close waits for the coordinator's threads after stopping them.
  int64_t stop_grace_period_ms = 5000;
  std::vector<std::shared_ptr<SessionRunHook>> hooks;
  std::vector<std::shared_ptr<SessionRunHook>> chief_only_hooks;
  Scaffold scaffold;
};

class Coordinator;

class MonitoredTrainingSession {
 public:
  using OpenSession = std::function<StatusOr<std::unique_ptr<Session>>()>;

  // See the top of this file. Errors: InvalidArgument for a null graph or
  // open_session, a null hook or a negative option (naming it); then the first
  // error of a hook (naming it), the scaffold, open_session or the model's
  // preparation (DeadlineExceeded for a non-chief whose chief never made the model
  // ready; FailedPrecondition when the live variables do not match this graph). On
  // error everything opened is closed.
  static StatusOr<std::unique_ptr<MonitoredTrainingSession>> Create(
      Graph* graph, OpenSession open_session, MonitoredTrainingSessionOptions options);

  ~MonitoredTrainingSession();
  MonitoredTrainingSession(const MonitoredTrainingSession&) = delete;
  MonitoredTrainingSession& operator=(const MonitoredTrainingSession&) = delete;

  // One step with the hooks (see the top of this file). `outputs` (may be null
  // without fetches) gets one tensor per fetch. FailedPrecondition after Close.
  Status Run(const FeedList& feeds, const std::vector<std::string>& fetches,
             const std::vector<std::string>& targets, std::vector<Tensor>* outputs);
  // By Outputs: a fetch of an op without outputs (a train op) runs as a target and
  // its slot in `outputs` is an empty Tensor; InvalidArgument for an empty Output.
  Status Run(const std::vector<std::pair<Output, Tensor>>& feeds,
             const std::vector<Output>& fetches, std::vector<Tensor>* outputs);

  // A hook requested a stop, a step ended with OutOfRange, or the coordinator stopped.
  bool ShouldStop() const;
  // See the top of this file; returns the first error of End, the session's Close or
  // the coordinator's Join. Later calls return the same.
  Status Close();

  // The session underneath (valid until Close) and the coordinator of the hooks'
  // threads.
  Session* raw_session() const { return session_.get(); }
  Coordinator* coordinator() const { return coord_.get(); }
  const Scaffold& scaffold() const { return *scaffold_; }
  // The graph's global step, read through the session (one Run); NotFound without one.
  StatusOr<int64_t> global_step();

 private:
  MonitoredTrainingSession(Graph* graph, MonitoredTrainingSessionOptions options);
  Status Initialize(const OpenSession& open_session);
  Status RunHooked(const FeedList& feeds, const std::vector<std::string>& fetches,
                   const std::vector<std::string>& targets, std::vector<Tensor>* outputs);
  // DeadlineExceeded of a step, saying which deadline it passed.
  Status StepDeadlineError(const Status& s, double elapsed_ms) const;

  Graph* graph_;
  MonitoredTrainingSessionOptions options_;
  std::shared_ptr<Scaffold> scaffold_;
  std::vector<std::shared_ptr<SessionRunHook>> hooks_;  // in call order
  std::unique_ptr<Coordinator> coord_;
  std::unique_ptr<Session> session_;
  std::atomic<bool> stop_requested_{false};
  bool last_run_failed_ = false;
  bool closed_ = false;
  int finalized_nodes_ = 0;  // the graph's size once the session was ready
  Status close_status_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_MONITORED_MONITORED_SESSION_H_
