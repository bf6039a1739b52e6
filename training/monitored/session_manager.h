// Making a freshly opened session's model ready, TensorFlow 1.x's tf.train.
// SessionManager as MonitoredTrainingSession uses it: the chief initializes or
// restores the global variables (never resetting live ones), every other task waits,
// bounded, until the chief has; each then initializes its local variables.
//
// Thread safety: each call runs steps on `session` from the calling thread; the
// scaffold must be finalized and is only read.
#ifndef ACTORFLOW_TRAINING_MONITORED_SESSION_MANAGER_H_
#define ACTORFLOW_TRAINING_MONITORED_SESSION_MANAGER_H_

#include <cstdint>
#include <string>

#include "graph/status.h"
#include "kernels/session.h"
#include "training/monitored/scaffold.h"

namespace actorflow {

struct PrepareOptions {
  // The chief's checkpoint directory ("" = none): restored from when the model is not
  // ready and it holds a checkpoint.
  std::string checkpoint_dir;
  // The deadline of each Run made here (RunOptions.timeout_in_ms; 0 = none).
  int64_t step_timeout_ms = 60000;
  // Non-chief: how long to wait for the chief (>= 0).
  int64_t wait_for_model_ms = 300000;
};

// The chief, in order:
// - the model is ALREADY ready (every ready variable initialized: a restarted chief
//   against live ps tasks): nothing is initialized or restored, one line on stderr
//   says so;
// - else, when checkpoint_dir holds a checkpoint (LatestCheckpoint), it is restored;
// - else, when no ready variable is initialized, init_op runs; when some are (a
//   chief that died while initializing, or a variable added to the model), only the
//   initializers of the others run (with the default init_op; a scaffold's own
//   init_op runs whole), so that no live variable is reset.
// Then the model must be ready (FailedPrecondition naming the variables init_op left
// uninitialized), the live variables must match the graph
// (Scaffold::CheckLiveVariablesMatchGraph) and local_init_op runs.
// Errors: the steps' (named), LatestCheckpoint's other than NotFound, Restore's.
Status PrepareChiefSession(Session* session, const Scaffold& scaffold,
                           const PrepareOptions& options);

// A non-chief: runs the ready check until the model is ready, polling with backoff
// (20 ms doubling to 1 s) for at most wait_for_model_ms; a step that fails with
// Unavailable, Aborted or DeadlineExceeded (a ps task still starting) counts as not
// ready. Past the wait: DeadlineExceeded naming the uninitialized variables and
// saying the chief has not initialized the model. Then the live variables must
// match the graph and local_init_op runs. Other errors: the steps', named.
Status WaitForSessionReady(Session* session, const Scaffold& scaffold,
                           const PrepareOptions& options);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_MONITORED_SESSION_MANAGER_H_
