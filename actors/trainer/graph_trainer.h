// TrainGraphWorkload: the library trainer for workloads that build their own graphs
// (training/distributed/graph_workload.h): word2vec, wide & deep, the char LMs, or
// a user's model. It starts or reaches the cluster, gives the workload the shape and
// a session factory, and stops what it started when the workload returns. What
// `actorflow train --model word2vec|wide-deep|char-lstm|char-transformer --cluster`
// runs; a program calls it the same way.
//
// - TrainerCluster::Local(P, W), P >= 1: P ps and W worker servers on 127.0.0.1
//   (a LocalCluster of this process); worker w's session is on /job:worker/task:w.
// - TrainerCluster::Local(0, W): in-process sessions (options.session_options).
// - TrainerCluster::OfSpec(spec, job, task): the spec's servers must be running;
//   worker w's session connects to task w of `job`, waiting at most
//   connect_timeout_ms (Unavailable naming the address when it does not answer).
//
// CAF-free header. Errors: GraphClusterShape's, LocalCluster::Start's, the
// workload's.
#ifndef ACTORFLOW_ACTORS_TRAINER_GRAPH_TRAINER_H_
#define ACTORFLOW_ACTORS_TRAINER_GRAPH_TRAINER_H_

#include <cstdint>

#include "graph/status.h"
#include "kernels/session.h"
#include "training/distributed/graph_workload.h"
#include "training/distributed/trainer_options.h"

namespace actorflow {

struct GraphTrainerOptions {
  TrainerCluster cluster = TrainerCluster::Local(0, 1);
  // Bounds connecting each session to its server (ms, > 0).
  int64_t connect_timeout_ms = 30000;
  // The in-process sessions of Local(0, W) (devices, threads, soft placement).
  SessionOptions session_options;
};

Status TrainGraphWorkload(const GraphTrainerOptions& options, const GraphWorkload& workload);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRAINER_GRAPH_TRAINER_H_
