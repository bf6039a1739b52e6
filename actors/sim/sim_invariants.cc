// The built-in invariants of simulated data-parallel training (sim_training.h).
#include <algorithm>
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
    // Only a push in flight when its driver was killed, or when the run stopped
    // before the driver finished (a hang), goes unaccounted.
    const int64_t in_flight = c.killed + (c.finished ? 0 : 1);
    if (accounted > c.pushes || accounted + in_flight < c.pushes) {
      out.push_back(Worker(w) + " pushed " + std::to_string(c.pushes) + " times but " +
                    std::to_string(accounted) + " pushes are accounted for");
    }
    for (size_t j = 0; j < r.shards.size(); ++j) {
      const SimShardCounts& s = r.shards[j];
      if (!s.reachable || w >= s.applied_by_worker.size() || j >= c.shard_applied.size()) continue;
      const int64_t applied = s.applied_by_worker[w];
      const int64_t in_flight = c.killed + (c.finished ? 0 : 1);
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

std::vector<std::string> CheckpointConsistent(const SimTrainingReport& r) {
  std::vector<std::string> out = r.checkpoint_problems;
  for (const SimCheckpoint& c : r.checkpoints) {
    if (!c.failure.empty() || c.answered < c.shards) continue;  // not taken
    const std::string at = "checkpoint at version " + std::to_string(c.version) + ": ";
    for (const std::string& p : c.problems) out.push_back(at + p);
    std::vector<std::string> names = c.variables;
    std::sort(names.begin(), names.end());
    if (std::adjacent_find(names.begin(), names.end()) != names.end()) {
      out.push_back(at + "a variable is held by two shards");
    }
    std::vector<std::string> expected;
    for (const auto& [name, value] : r.parameters) expected.push_back(name);
    if (!r.parameters.empty() && names != expected) {
      out.push_back(at + "holds " + std::to_string(names.size()) + " variables, the model has " +
                    std::to_string(expected.size()));
    }
  }
  return out;
}

std::vector<std::string> NoActorLeftWaiting(const SimTrainingReport& r) {
  std::vector<std::string> out;
  if (r.hung) {
    // Its drivers were still at work when it was stopped: what they left parked
    // says nothing more.
    out.push_back("the run hung: " + r.hang);
    return out;
  }
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
      {"checkpoint_consistent", CheckpointConsistent},
      {"no_actor_left_waiting", NoActorLeftWaiting},
  };
}

}  // namespace actorflow
