// Where the between-graph trainers (`--model word2vec`, `--model wide-deep`) run, from
// their --cluster flag:
//   ""                      one process, one worker, no ps task;
//   "local:ps=P,worker=W"   P + W servers started in this process (LocalCluster);
//   a cluster file          the "ps" and "worker" tasks of a cluster spec
//                           (placement/cluster_spec.h), each an `actorflow server`
//                           already running: this process opens one session on
//                           every worker task and drives them all.
// Either way worker w's graph runs through a session on /job:worker/task:w, and the
// tables live on /job:ps/task:0..P-1.
//
// Thread safety: the session factory may be called from any thread while the
// BetweenGraphCluster lives.
#ifndef ACTORFLOW_TOOLS_TRAIN_BETWEEN_GRAPH_CLUSTER_H_
#define ACTORFLOW_TOOLS_TRAIN_BETWEEN_GRAPH_CLUSTER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/status.h"
#include "training/estimators/worker_sessions.h"

namespace actorflow {

class LocalCluster;

namespace cli {

struct BetweenGraphCluster {
  int num_ps = 0;
  int num_workers = 1;
  WorkerSessionFactory sessions;
  // The servers of a "local:" cluster (null otherwise); they stop with this.
  std::shared_ptr<LocalCluster> local;
};

// The shape --cluster gives, without starting or connecting anything: for `model`
// (named in errors), InvalidArgument for a cluster without "ps" or "worker" tasks,
// or a "local:" value that does not parse; a cluster file's own errors (NotFound
// naming it).
StatusOr<BetweenGraphCluster> BetweenGraphShape(const std::string& cluster_flag,
                                                const std::string& model);

// The shape and the session factory: a "local:" cluster's servers start here;
// a cluster file's worker sessions connect to their servers, each connection
// bounded by `connect_timeout_ms` (Unavailable naming the task's address when its
// server does not answer).
StatusOr<BetweenGraphCluster> OpenBetweenGraphCluster(const std::string& cluster_flag,
                                                      const std::string& model,
                                                      int64_t connect_timeout_ms);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TRAIN_BETWEEN_GRAPH_CLUSTER_H_
