// The worker driver of simulated data-parallel training (actors/sim/sim_training.h):
// one actor per worker task, speaking the parameter shards' protocol through the
// task's links. It never blocks: every wait is a pending request or a delayed
// message to itself on the (virtual) clock. What it sees goes into the run's shared
// SimRunState, which the orchestrator reads between scheduler steps (one thread runs
// the whole simulation, so the state needs no lock).
// Includes CAF: actors/ only.
#ifndef ACTORFLOW_ACTORS_SIM_SIM_WORKER_H_
#define ACTORFLOW_ACTORS_SIM_SIM_WORKER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "actors/transport/connect.h"
#include "actors/protocol/front_protocol.h"
#include "kernels/ps/shard_config.h"
#include "actors/sim/sim_training.h"

namespace actorflow {

struct SimRunState {
  SimTrainingOptions options;
  ShardConfig config;
  std::string shard_name = "parameters/model";
  int num_shards = 0;
  uint64_t seed = 1;
  // The worst round trip a link can add to a request (latency, jitter, transfer of
  // the largest message, injected delays and reorders), for the deadline invariant.
  double request_slack_us = 0;
  std::function<double()> now_seconds;  // virtual

  std::vector<SimWorkerCounts> workers;
  std::vector<std::string> version_regressions;
  std::vector<std::string> late_requests;
  std::vector<SimEvalPoint> curve;
  int64_t next_eval_step = 0;
  double seconds_to_target = -1;
  bool stop = false;  // the target accuracy was reached with stop_at_target
  int64_t max_global_step = 0;
  // Bumped by every push answered applied or stale: what the orchestrator watches to
  // tell a stalled run from a slow one.
  int64_t progress = 0;
  Status eval_error;
  std::vector<SimTraceSpan> spans;  // with options.trace
  std::vector<SimCheckpoint> checkpoints;
};

struct SimWorkerSetup {
  int worker = 0;
  // The worker task's directory: it hands out the ps tasks' fronts as the task
  // reaches them (through link proxies), the current ones after a restart.
  ConnectorActor directory;
  std::vector<std::string> ps_hosts;
  std::vector<uint16_t> ps_ports;
  std::vector<std::string> ps_names;  // "/job:ps/task:0"
  std::shared_ptr<SimRunState> run;
};

caf::actor SpawnSimWorker(caf::actor_system& system, SimWorkerSetup setup);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SIM_SIM_WORKER_H_
