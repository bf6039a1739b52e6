// How between-graph trainers (word2vec, wide & deep) open each worker's session,
// without knowing the runtime: a factory the caller gives them.
#ifndef ACTORFLOW_TRAINING_ESTIMATORS_WORKER_SESSIONS_H_
#define ACTORFLOW_TRAINING_ESTIMATORS_WORKER_SESSIONS_H_

#include <functional>
#include <memory>

#include "graph/graph.h"
#include "graph/status.h"
#include "kernels/session.h"

namespace actorflow {

// Opens worker `worker`'s session over its graph (which outlives the session): a
// local session in one process, or a session on /job:worker/task:<worker>.
using WorkerSessionFactory =
    std::function<StatusOr<std::unique_ptr<Session>>(const Graph* graph, int worker)>;

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_ESTIMATORS_WORKER_SESSIONS_H_
