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
// - TrainerCluster::Simulated(simulation): a simulated cluster in this process
//   (actors/sim/simulated_cluster.h); the workload runs as the driver of worker 0's
//   task (SimulatedCluster::RunDrivers), its worker threads started through
//   AdoptThread / RunThreadsCooperatively (graph/cooperative.h), so the run is a
//   function of the options and the seed. Its fault plan's message faults act on
//   every link; the report holds the event log's hash and the drivers' invariants.
//
// CAF-free header. Errors: GraphClusterShape's, LocalCluster::Start's,
// SimulatedCluster::Start's, the workload's.
#ifndef ACTORFLOW_ACTORS_TRAINER_GRAPH_TRAINER_H_
#define ACTORFLOW_ACTORS_TRAINER_GRAPH_TRAINER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "actors/sim/sim_training.h"
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
  uint64_t seed = 1;  // a simulated cluster's (its links' jitter and faults)
};

// What ran, beyond the workload's own results.
struct GraphTrainerReport {
  GraphCluster cluster;  // the shape the workload was given (no session factory)
  // Simulated clusters only: the event log's hash (the same options and seed give
  // the same), the virtual time, the drivers' steps and invariants
  // (SimulatedCluster::DriversReport).
  bool simulated = false;
  std::string event_log_hash;
  double virtual_seconds = 0;
  int64_t steps = 0;
  std::vector<SimInvariantResult> invariants;
};

StatusOr<GraphTrainerReport> TrainGraphWorkload(const GraphTrainerOptions& options,
                                                const GraphWorkload& workload);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRAINER_GRAPH_TRAINER_H_
