// A workload that builds and runs its own graphs: the between-graph models
// (word2vec, wide & deep), in-graph towers (the char LMs), or a user's model with its
// own optimizer (SyncReplicasOptimizer included). The library trainer
// (actors/trainer/graph_trainer.h) resolves a TrainerCluster into the shape and a
// session factory and hands them to the workload; the workload places its
// variables on PsDevices() and its workers' ops on WorkerDevices(), and opens
// worker w's session with `sessions(graph, w)`.
//
//   TrainGraphWorkload(TrainerCluster::Local(/*ps_tasks=*/2, /*workers=*/2), 30000,
//                      [&](const GraphCluster& cluster) -> Status {
//                        options.num_ps = cluster.num_ps;
//                        options.num_workers = cluster.num_workers;
//                        return TrainWord2Vec(options, corpus, cluster.sessions).status();
//                      });
//
// CAF-free.
#ifndef ACTORFLOW_TRAINING_DISTRIBUTED_GRAPH_WORKLOAD_H_
#define ACTORFLOW_TRAINING_DISTRIBUTED_GRAPH_WORKLOAD_H_

#include <functional>
#include <string>
#include <vector>

#include "graph/status.h"
#include "training/distributed/trainer_options.h"
#include "training/estimators/worker_sessions.h"

namespace actorflow {

// The cluster as a graph workload sees it.
//   TrainerCluster::Local(P, W), P >= 1: P ps and W worker servers started in this
//       process; this process drives every worker.
//   TrainerCluster::Local(0, W): no server; each worker's session is an in-process
//       session of its own (W = 1: plain single-process training).
//   TrainerCluster::OfSpec(spec, job, task): the spec's tasks, each an `actorflow
//       server` already running; task -1: this process drives every task of `job`
//       (one client for all workers), task >= 0: only that one (between-graph
//       replication with a process per worker, as TF1 runs it).
//   TrainerCluster::Simulated(simulation): the simulated cluster's tasks; this
//       process drives every worker (actors/trainer/graph_trainer.h).
struct GraphCluster {
  int num_ps = 0;       // tasks of job "ps" (0: no ps task)
  int num_workers = 1;  // tasks of the worker job (Local(0, W): W)
  std::string job = "worker";
  // Local(0, W): the sessions are in-process, not on servers.
  bool in_process = false;
  // The worker indices this process drives, ascending.
  std::vector<int> workers;
  // Opens worker w's session (w one of `workers`; another is FailedPrecondition).
  // Set by TrainGraphWorkload; empty in the shape GraphClusterShape gives.
  WorkerSessionFactory sessions;

  // "/job:ps/task:p" for every ps task (empty without ps tasks).
  std::vector<std::string> PsDevices() const;
  // "/job:<job>/task:w" for every worker task; empty for in-process sessions,
  // whose ops run on the session's own devices.
  std::vector<std::string> WorkerDevices() const;
};

// Trains on `cluster`; its error ends the run.
using GraphWorkload = std::function<Status(const GraphCluster& cluster)>;

// The shape of `cluster` for a graph workload, without starting or reaching
// anything: InvalidArgument naming the field for a local cluster with fewer than 0 ps
// tasks or 1 worker, a spec without tasks of `job` or with `task` outside them
// (-1: all).
StatusOr<GraphCluster> GraphClusterShape(const TrainerCluster& cluster);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DISTRIBUTED_GRAPH_WORKLOAD_H_
