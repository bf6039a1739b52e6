// The built-in invariants of simulated data-parallel training (sim_training.h).
#include <string>
#include <vector>

#include "actors/sim/sim_training.h"

namespace actorflow {
namespace {

std::string Worker(size_t w) { return "/job:worker/task:" + std::to_string(w); }
std::string Ps(size_t j) { return "/job:ps/task:" + std::to_string(j); }

std::vector<std::string> GradientsAppliedOnce(const SimTrainingReport& r) {
  std::vector<std::string> out;
  for (size_t w = 0; w < r.workers.size(); ++w) {
    const SimWorkerCounts& c = r.workers[w];
    const int64_t accounted = c.applied + c.dropped_stale + c.failed + c.unanswered;
    // Only a push in flight when its driver was killed goes unaccounted.
    if (accounted > c.pushes || accounted + c.killed < c.pushes) {
      out.push_back(Worker(w) + " pushed " + std::to_string(c.pushes) + " times but " +
                    std::to_string(accounted) + " pushes are accounted for");
    }
    for (size_t j = 0; j < r.shards.size(); ++j) {
      const SimShardCounts& s = r.shards[j];
      if (!s.reachable || w >= s.applied_by_worker.size() || j >= c.shard_applied.size()) continue;
      const int64_t applied = s.applied_by_worker[w];
      // At most one push per driver may be in flight when it is killed.
      const int64_t in_flight = c.killed;
      if (applied < c.shard_applied[j] ||
          applied > c.shard_applied[j] + c.shard_unknown[j] + in_flight) {
        out.push_back(Ps(j) + " applied " + std::to_string(applied) + " gradients of " + Worker(w) +
                      ", which was told " + std::to_string(c.shard_applied[j]) +
                      " were applied and has " + std::to_string(c.shard_unknown[j]) +
                      " pushes of unknown outcome there");
      }
    }
  }
  return out;
}

std::vector<std::string> NoActorLeftWaiting(const SimTrainingReport& r) {
  std::vector<std::string> out;
  if (r.hung) out.push_back("the run hung: " + r.hang);
  for (size_t j = 0; j < r.shards.size(); ++j) {
    const SimShardCounts& s = r.shards[j];
    if (s.parked_pulls > 0 || s.parked_pushes > 0) {
      out.push_back(Ps(j) + " still holds " + std::to_string(s.parked_pulls) + " pulls and " +
                    std::to_string(s.parked_pushes) + " pushes after every deadline passed");
    }
  }
  return out;
}

}  // namespace

std::vector<SimInvariant> BuiltinSimInvariants() {
  return {
      {"gradients_applied_once", GradientsAppliedOnce},
      {"global_step_monotone",
       [](const SimTrainingReport& r) { return r.version_regressions; }},
      {"requests_end_by_deadline", [](const SimTrainingReport& r) { return r.late_requests; }},
      {"checkpoint_consistent", [](const SimTrainingReport& r) { return r.checkpoint_problems; }},
      {"no_actor_left_waiting", NoActorLeftWaiting},
  };
}

}  // namespace actorflow
