// What the between-graph trainers (word2vec, wide & deep) share: how they open each
// worker's session without knowing the runtime (a factory the caller gives them), how
// they report steps (TensorBoard logs, progress), and how they count a step's traffic
// between ps tasks and workers.
#ifndef ACTORFLOW_TRAINING_ESTIMATORS_WORKER_SESSIONS_H_
#define ACTORFLOW_TRAINING_ESTIMATORS_WORKER_SESSIONS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "graph/graph.h"
#include "graph/status.h"
#include "kernels/session.h"

namespace actorflow {

// Opens worker `worker`'s session over its graph (which outlives the session): a
// local session in one process, or a session on /job:worker/task:<worker>.
using WorkerSessionFactory =
    std::function<StatusOr<std::unique_ptr<Session>>(const Graph* graph, int worker)>;

// Told after every training step of every worker, from that worker's thread: the
// worker, its steps so far (1 after its first), the steps it will run, the step's loss.
using StepObserver =
    std::function<void(int worker, int64_t step, int64_t planned_steps, double loss)>;

// Adds the bytes `meta`'s step moved from ps tasks to other tasks to *pulled, and
// from other tasks to ps tasks to *pushed.
inline void AddPsTraffic(const RunMetadata& meta, double* pulled, double* pushed) {
  for (const CrossDeviceTransfer& t : meta.transfers) {
    const bool from_ps = t.src_device.find("/job:ps/") != std::string::npos;
    const bool to_ps = t.dst_device.find("/job:ps/") != std::string::npos;
    if (from_ps && !to_ps) *pulled += static_cast<double>(t.bytes);
    if (to_ps && !from_ps) *pushed += static_cast<double>(t.bytes);
  }
}

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_ESTIMATORS_WORKER_SESSIONS_H_
