// `actorflow swarm`: many seeded simulated trainings, each with a random cluster,
// update protocol and fault plan, judged by the run's invariants
// (actors/sim/sim_training.h). Every scenario is a pure function of its seed, so a
// failure replays with one command.
//
//   actorflow swarm --runs 1000 [--first-seed 1] [--json]
//   actorflow swarm --replay 417          # one scenario, its plan and its report
//
// A scenario draws: 1-3 ps tasks and 2-6 workers; sync (every worker), sync with
// backup workers, async, ssp:1-3 or allreduce (no ps task; message faults only,
// judged by the identical-weights invariant); 10-60 steps; in sync half the time coordinated
// checkpoints every 3-10 steps; a virtual timeout of 20-400 ms;
// stragglers (none, lognormal, pareto, a slow worker); and 0-4 faults among drop
// (by probability or every K-th), delay, duplicate, reorder, a partition of a
// worker from a ps task that heals, and a worker killed at a step (restarted later
// or not). It trains the bundled Iris model.
//
// Outcomes: "ok"; "failed" (the drivers gave up: e.g. sync without backups after a
// worker was lost: reported, not a violation); "slow" (still progressing at the
// 600 s virtual limit: e.g. sync without backups under heavy message loss); "hung"
// (nothing moved for longer than a stuck driver takes to give up, or the cluster
// went quiet with drivers unfinished) and "violated" are failures.
// The summary prints the count of each outcome, the violations per invariant, and a
// replay command per failure; with --json one line:
//   {"runs", "failed", "hung", "ok", "slow", "violated", "invariants": {name: count},
//    "failures": [{"seed", "outcome", "replay", "first_violation"}], "wall_seconds"}
// The command fails when any run hung or violated an invariant.
#ifndef ACTORFLOW_TOOLS_SWARM_COMMAND_H_
#define ACTORFLOW_TOOLS_SWARM_COMMAND_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "graph/status.h"
#include "tools/cli/cli_common.h"

namespace actorflow {
namespace cli {

struct SwarmScenario {
  uint64_t seed = 0;
  int ps = 1;
  int workers = 2;
  std::string mode = "sync";
  int replicas_to_aggregate = 0;  // sync: 0 = every worker
  int64_t steps = 20;
  int64_t checkpoint_every = 0;  // sync: the chief's coordinated checkpoints
  int64_t timeout_ms = 100;
  std::string stragglers = "none";
  double latency_us = 50;
  double jitter_us = 0;
  std::string faults_json = R"({"faults": []})";

  std::string Cluster() const;      // "sim:ps=P,worker=W"
  std::string Describe() const;     // one line
};

SwarmScenario MakeSwarmScenario(uint64_t seed);

struct SwarmRunResult {
  std::string outcome;  // "ok", "failed", "slow", "hung", "violated"
  std::string detail;   // the first violation, the hang, or the drivers' error
  std::map<std::string, int64_t> violations;  // per invariant
  std::string event_log_hash;
  std::string weights_hash;
  double virtual_seconds = 0;
  int64_t messages = 0;
};

// Runs one scenario on the bundled Iris data. Errors only for a scenario that could
// not start (a bug in the generator).
StatusOr<SwarmRunResult> RunSwarmScenario(const SwarmScenario& scenario);

struct SwarmCommandOptions {
  int64_t runs = 100;
  uint64_t first_seed = 1;
  int64_t replay = -1;  // >= 0: run that one seed, verbosely
  bool json = false;
};

Status Swarm(const SwarmCommandOptions& options, std::ostream& out);

Subcommand AddSwarmSubcommand(CLI::App* parent);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_SWARM_COMMAND_H_
