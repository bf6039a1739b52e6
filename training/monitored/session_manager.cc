#include "training/monitored/session_manager.h"

#include <algorithm>
#include <iostream>
#include <vector>

#include "graph/cooperative.h"
#include "training/checkpoint/checkpoint.h"

namespace actorflow {
namespace {

RunOptions StepOptions(int64_t timeout_ms) {
  RunOptions options;
  options.timeout_in_ms = timeout_ms;
  return options;
}

Status RunTargets(Session* session, const std::vector<std::string>& targets, int64_t timeout_ms,
                  const std::string& what) {
  Status s = session->Run(StepOptions(timeout_ms), {}, {}, targets, nullptr, nullptr);
  return s.ok() ? s : s.WithContext(what);
}

// The common end: the model is ready and matches the graph; local variables set.
Status FinishPreparation(Session* session, const Scaffold& scaffold, int64_t timeout_ms) {
  AF_RETURN_IF_ERROR(scaffold.CheckLiveVariablesMatchGraph(session, StepOptions(timeout_ms)));
  return RunTargets(session, {scaffold.local_init_op()}, timeout_ms,
                    "running the local init op '" + scaffold.local_init_op() + "'");
}

// Initializes what the ready check found missing (all of it, or a part).
Status Initialize(Session* session, const Scaffold& scaffold,
                  const std::vector<std::string>& missing, int64_t timeout_ms) {
  const size_t all = scaffold.ready_variables().size();
  if (missing.size() == all || !scaffold.default_init_op()) {
    return RunTargets(session, {scaffold.init_op()}, timeout_ms,
                      "running the init op '" + scaffold.init_op() + "'");
  }
  AF_ASSIGN_OR_RETURN(std::vector<std::string> initializers, scaffold.InitializersOf(missing));
  std::cerr << "MonitoredTrainingSession (chief): " << all - missing.size() << " of " << all
            << " global variables are live; initializing only the others (" << QuotedNames(missing)
            << ")\n";
  return RunTargets(session, initializers, timeout_ms,
                    "initializing the uninitialized variables " + QuotedNames(missing));
}

}  // namespace

Status PrepareChiefSession(Session* session, const Scaffold& scaffold,
                           const PrepareOptions& options) {
  const RunOptions run = StepOptions(options.step_timeout_ms);
  auto missing = scaffold.UninitializedVariables(session, run);
  if (!missing.ok()) return missing.status().WithContext("checking whether the model is ready");
  if (missing->empty() && !scaffold.ready_variables().empty()) {
    std::cerr << "MonitoredTrainingSession (chief): every global variable is already "
                 "initialized (live on its device, e.g. a restarted chief against running ps "
                 "tasks): not initializing or restoring them\n";
    return FinishPreparation(session, scaffold, options.step_timeout_ms);
  }
  bool restored = false;
  if (!options.checkpoint_dir.empty() && scaffold.saver() != nullptr) {
    auto latest = LatestCheckpoint(options.checkpoint_dir);
    if (latest.ok()) {
      Status s = scaffold.saver()->Restore(session, *latest);
      if (!s.ok()) return s.WithContext("restoring checkpoint '" + *latest + "'");
      std::cerr << "MonitoredTrainingSession (chief): restored checkpoint " << *latest << "\n";
      restored = true;
    } else if (latest.status().code() != Code::kNotFound) {
      return latest.status().WithContext("looking for a checkpoint in '" + options.checkpoint_dir +
                                         "'");
    }
  }
  if (!restored) {
    AF_RETURN_IF_ERROR(Initialize(session, scaffold, *missing, options.step_timeout_ms));
  }
  auto still = scaffold.UninitializedVariables(session, run);
  if (!still.ok()) return still.status().WithContext("checking whether the model is ready");
  if (!still->empty()) {
    return FailedPrecondition("the model is not ready after " +
                              (restored ? std::string("restoring the checkpoint")
                                        : "running the init op '" + scaffold.init_op() + "'") +
                              ": uninitialized variables " + QuotedNames(*still));
  }
  return FinishPreparation(session, scaffold, options.step_timeout_ms);
}

Status WaitForSessionReady(Session* session, const Scaffold& scaffold,
                           const PrepareOptions& options) {
  // The cooperative clock: the steady clock, or a simulated cluster's virtual one
  // when this runs as one of its drivers (graph/cooperative.h).
  const int64_t start = CooperativeNowMicros();
  const int64_t deadline = start + options.wait_for_model_ms * 1000;
  const auto ms_left = [&deadline](int64_t now) { return (deadline - now + 999) / 1000; };
  int64_t backoff_ms = 20;
  int64_t next_report = start;
  std::vector<std::string> missing;
  Status last_error;
  while (true) {
    // Each probe is bounded by what is left of the wait as well.
    int64_t timeout = std::max<int64_t>(ms_left(CooperativeNowMicros()), 1);
    if (options.step_timeout_ms > 0) timeout = std::min(timeout, options.step_timeout_ms);
    auto probe = scaffold.UninitializedVariables(session, StepOptions(timeout));
    if (probe.ok() && probe->empty()) break;
    if (probe.ok()) {
      missing = *probe;
    } else {
      const Code code = probe.status().code();
      if (code != Code::kUnavailable && code != Code::kAborted && code != Code::kDeadlineExceeded) {
        return probe.status().WithContext("checking whether the model is ready");
      }
      last_error = probe.status();
    }
    const int64_t now = CooperativeNowMicros();
    if (now >= deadline) {
      std::string why =
          missing.empty() ? "the ready check did not succeed (last: " + last_error.ToString() + ")"
                          : "uninitialized variables " + QuotedNames(missing);
      return DeadlineExceeded(
          "MonitoredTrainingSession (non-chief): the model is not ready after waiting " +
          std::to_string(options.wait_for_model_ms) +
          " ms (MonitoredTrainingSessionOptions.wait_for_model_ms): " + why +
          ". The chief has not initialized the model: is the chief running?");
    }
    // A line when the wait starts and one every 10 s, so that a chief that is slow
    // or missing shows at once, not only when the wait runs out.
    if (now >= next_report) {
      std::cerr << "MonitoredTrainingSession (non-chief): waiting for the chief to make the "
                   "model ready ("
                << (now - start) / 1000 << " of " << options.wait_for_model_ms << " ms; "
                << (missing.empty() ? "the ready check: " + last_error.ToString()
                                    : "uninitialized: " + QuotedNames(missing))
                << ")\n";
      next_report = now + 10 * 1000 * 1000;
    }
    SleepCooperatively(std::min(backoff_ms, ms_left(now)));
    backoff_ms = std::min<int64_t>(backoff_ms * 2, 1000);
  }
  return FinishPreparation(session, scaffold, options.step_timeout_ms);
}

}  // namespace actorflow
