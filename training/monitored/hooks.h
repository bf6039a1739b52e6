// The hooks TensorFlow 1.x ships with MonitoredTrainingSession (basic_session_run_
// hooks): stop at a global step, save checkpoints and summaries, count steps per
// second, log tensors, and stop on a NaN loss. Each implements SessionRunHook
// (training/monitored/session_run_hook.h) and reads the global step, where it needs
// it, through its own fetch of the graph's global step (kGlobalStepCollection):
// Begin fails with FailedPrecondition naming the hook when the graph has none.
//
// Thread safety: as SessionRunHook (called from the monitored session's thread).
// The shared SummaryWriter is itself thread-safe.
#ifndef ACTORFLOW_TRAINING_MONITORED_HOOKS_H_
#define ACTORFLOW_TRAINING_MONITORED_HOOKS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/session.h"
#include "training/checkpoint/checkpoint.h"
#include "training/monitored/scaffold.h"
#include "training/monitored/session_run_hook.h"
#include "training/summary/summary_writer.h"

namespace actorflow {

// The tensor name of `graph`'s global step (GetGlobalStep); FailedPrecondition saying
// `who` needs one (CreateGlobalStep) when the graph has none.
StatusOr<std::string> GlobalStepTensor(const Graph& graph, const std::string& who);
// The value of a global step tensor (an int32 or int64 scalar).
StatusOr<int64_t> StepValue(const Tensor& step);
// Reads `global_step` (a tensor name) through `session` (one Run).
StatusOr<int64_t> ReadGlobalStep(Session* session, const std::string& global_step);

// Fires every `every_steps` global steps or every `every_secs` seconds (whichever is
// set, > 0), counted from the last Update; the first call always fires. TensorFlow's
// SecondOrStepTimer.
class SecondOrStepTimer {
 public:
  SecondOrStepTimer(int64_t every_steps, int64_t every_secs)
      : every_steps_(every_steps), every_secs_(every_secs) {}
  bool ShouldTrigger(int64_t step) const;
  // Records a firing at `step`; returns the seconds and steps since the previous one
  // (none for the first).
  struct Elapsed {
    double seconds = 0;
    int64_t steps = 0;
  };
  std::optional<Elapsed> Update(int64_t step);
  std::optional<int64_t> last_step() const { return last_step_; }

 private:
  int64_t every_steps_;
  int64_t every_secs_;
  std::optional<int64_t> last_step_;
  // CooperativeNowMicros (graph/cooperative.h): the steady clock, or a simulated
  // cluster's virtual one for a driver it runs, so that time-based hooks fire alike
  // on every run of a simulation.
  int64_t last_time_us_ = 0;
};

// Requests a stop once the global step reaches a last step: `last_step` itself, or
// the global step at session creation plus `num_steps`. After a run whose fetched
// step (read during the step, before or after its increment) says the last step may
// be reached, it reads the step again and stops when it is.
class StopAtStepHook : public SessionRunHook {
 public:
  static std::shared_ptr<StopAtStepHook> ForNumSteps(int64_t num_steps);
  static std::shared_ptr<StopAtStepHook> AtLastStep(int64_t last_step);

  std::string name() const override { return "StopAtStepHook"; }
  Status Begin(Graph* graph) override;  // also InvalidArgument for a negative count
  Status AfterCreateSession(Session* session, Coordinator* coord) override;
  Status BeforeRun(SessionRunContext* context, SessionRunArgs* args) override;
  Status AfterRun(SessionRunContext* context, const SessionRunValues& values) override;
  // Known after AfterCreateSession.
  int64_t last_step() const { return last_step_; }

 private:
  StopAtStepHook(int64_t num_steps, int64_t last_step)
      : num_steps_(num_steps), last_step_(last_step) {}
  int64_t num_steps_;  // -1: last_step_ given
  int64_t last_step_;
  std::string global_step_;
};

struct CheckpointSaverHookOptions {
  std::string checkpoint_dir;
  // Exactly one > 0: save every this many global steps, or seconds.
  int64_t save_steps = 0;
  int64_t save_secs = 0;
  // The Saver to save with; null: `scaffold`'s once it is finalized (what
  // MonitoredTrainingSession passes), else one over every global variable built in
  // Begin.
  std::shared_ptr<Saver> saver;
  std::shared_ptr<const Scaffold> scaffold;
};

// Saves "ckpt-<global step>" into checkpoint_dir: when the session is created, then
// whenever the timer fires after a run, and at End. A checkpoint of that step that
// exists already (AlreadyExists: saved by an earlier chief, or the step did not
// move) is not an error.
class CheckpointSaverHook : public SessionRunHook {
 public:
  explicit CheckpointSaverHook(CheckpointSaverHookOptions options);
  std::string name() const override { return "CheckpointSaverHook"; }
  Status Begin(Graph* graph) override;
  Status AfterCreateSession(Session* session, Coordinator* coord) override;
  Status BeforeRun(SessionRunContext* context, SessionRunArgs* args) override;
  Status AfterRun(SessionRunContext* context, const SessionRunValues& values) override;
  Status End(Session* session) override;
  // The global steps saved (or found saved) so far, in order.
  const std::vector<int64_t>& saved_steps() const { return saved_steps_; }

 private:
  Status Save(Session* session, int64_t step);
  CheckpointSaverHookOptions options_;
  SecondOrStepTimer timer_;
  std::string global_step_;
  std::vector<int64_t> saved_steps_;
};

struct SummarySaverHookOptions {
  // Where the event file goes when `writer` is null (a new one is made in Begin).
  std::string output_dir;
  std::shared_ptr<SummaryWriter> writer;
  int64_t save_steps = 100;  // > 0
  // tag -> the name of a one-element numeric tensor, written as a scalar summary.
  std::map<std::string, std::string> scalars;
};

// Writes `scalars` at the global step every save_steps steps (from the first run),
// fetching them only in the runs that write; flushes at End. TensorFlow's
// SummarySaverHook for scalar summaries.
class SummarySaverHook : public SessionRunHook {
 public:
  explicit SummarySaverHook(SummarySaverHookOptions options);
  std::string name() const override { return "SummarySaverHook"; }
  Status Begin(Graph* graph) override;
  Status BeforeRun(SessionRunContext* context, SessionRunArgs* args) override;
  Status AfterRun(SessionRunContext* context, const SessionRunValues& values) override;
  Status End(Session* session) override;

 private:
  SummarySaverHookOptions options_;
  SecondOrStepTimer timer_;
  std::string global_step_;
  std::optional<int64_t> next_step_;
  bool requested_ = false;  // this run fetches the scalars
};

struct StepCounterHookOptions {
  int64_t every_n_steps = 100;  // > 0
  // Also written as the scalar "global_step/sec" when set.
  std::shared_ptr<SummaryWriter> writer;
  std::ostream* out = nullptr;  // null: std::cerr
};

// Every every_n_steps global steps prints "global_step/sec: X" (steps per second
// since the last print), as TensorFlow's StepCounterHook logs it.
class StepCounterHook : public SessionRunHook {
 public:
  explicit StepCounterHook(StepCounterHookOptions options);
  std::string name() const override { return "StepCounterHook"; }
  Status Begin(Graph* graph) override;
  Status BeforeRun(SessionRunContext* context, SessionRunArgs* args) override;
  Status AfterRun(SessionRunContext* context, const SessionRunValues& values) override;

 private:
  StepCounterHookOptions options_;
  SecondOrStepTimer timer_;
  std::string global_step_;
};

// Prints "name = value, name = value" (Tensor::SummarizeValue) for `tensors` on the
// first run and then every every_n_iter runs; they are fetched only in those runs.
class LoggingTensorHook : public SessionRunHook {
 public:
  LoggingTensorHook(std::vector<std::string> tensors, int64_t every_n_iter = 100,
                    std::ostream* out = nullptr);
  std::string name() const override { return "LoggingTensorHook"; }
  Status Begin(Graph* graph) override;  // InvalidArgument for every_n_iter <= 0
  Status BeforeRun(SessionRunContext* context, SessionRunArgs* args) override;
  Status AfterRun(SessionRunContext* context, const SessionRunValues& values) override;

 private:
  std::vector<std::string> tensors_;
  int64_t every_n_iter_;
  std::ostream* out_;
  int64_t iteration_ = 0;
  bool logging_ = false;  // this run fetches the tensors
};

// Checks the loss tensor after every run: a NaN (any element of a floating tensor)
// fails the run with InvalidArgument "NaN loss during training" naming the tensor
// (fail_on_nan_loss), or prints that and requests a stop.
class NanTensorHook : public SessionRunHook {
 public:
  explicit NanTensorHook(std::string loss_tensor, bool fail_on_nan_loss = true)
      : loss_tensor_(std::move(loss_tensor)), fail_on_nan_loss_(fail_on_nan_loss) {}
  std::string name() const override { return "NanTensorHook"; }
  Status BeforeRun(SessionRunContext* context, SessionRunArgs* args) override;
  Status AfterRun(SessionRunContext* context, const SessionRunValues& values) override;

 private:
  std::string loss_tensor_;
  bool fail_on_nan_loss_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_MONITORED_HOOKS_H_
