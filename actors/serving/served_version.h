// The pieces of one loaded version of a served model: its replicas, what each has in
// flight, and its batcher. Private to the model server (actors/serving/model_server.cc);
// includes CAF.
#ifndef ACTORFLOW_ACTORS_SERVING_SERVED_VERSION_H_
#define ACTORFLOW_ACTORS_SERVING_SERVED_VERSION_H_

#include <atomic>
#include <caf/all.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "actors/protocol/front_protocol.h"
#include "actors/serving/model_server.h"
#include "actors/serving/serving_protocol.h"
#include "graph/status.h"

namespace actorflow {

// Where a version's calls go: its replicas and what each has outstanding. Shared by
// the version, its batcher's dispatch and every call in flight, so that a call that
// finishes after its caller gave up (deadline) still has counters to update.
struct ReplicaPool {
  std::vector<ServingReplica> replicas;
  std::unique_ptr<std::atomic<int64_t>[]> in_flight;
  std::vector<std::shared_ptr<std::atomic<bool>>> lost;  // see Replicas::lost
  int64_t max_in_flight_per_replica = 0;
  std::atomic<int64_t> outstanding_batches{0};
  std::unique_ptr<std::atomic<int64_t>[]> batch_size_counts;  // index: rows, clamped
  int64_t max_batch_size = 0;

  // The replica with the fewest calls in flight (the first on ties), of those whose
  // task is not lost; any replica when all are (it answers why at once).
  size_t LeastLoaded() const {
    size_t best = replicas.size();
    for (size_t i = 0; i < replicas.size(); ++i) {
      if (IsLost(i)) continue;
      if (best == replicas.size() || in_flight[i].load(std::memory_order_relaxed) <
                                         in_flight[best].load(std::memory_order_relaxed))
        best = i;
    }
    return best == replicas.size() ? 0 : best;
  }
  bool IsLost(size_t i) const {
    return i < lost.size() && lost[i] && lost[i]->load(std::memory_order_relaxed);
  }

  // Sends `call` to the least-loaded replica; ResourceExhausted (without sending) when
  // every replica is at its bound and `bounded`. An idle replica is scheduled through
  // `unit` when given (a caller's CallerJobs), else through the scheduler.
  Status Send(std::shared_ptr<ReplicaPool> self, ServeCallPtr call, bool bounded,
              caf::execution_unit* unit = nullptr);
};

// A version's replicas, and the sessions they hold on other tasks (closed at unload).
struct Replicas {
  std::vector<ServingReplica> actors;
  // Of remote replicas, as many as `actors`: set once the replica's task is lost.
  // Empty for local replicas.
  std::vector<std::shared_ptr<std::atomic<bool>>> lost;
  std::vector<std::pair<FrontActor, uint64_t>> remote_sessions;
};

// One loaded version: its replica pool and, with batching on, its batcher actor.
// Unloading it (the last shared_ptr going away) stops its actors and closes its
// remote sessions.
class LoadedVersion {
 public:
  LoadedVersion(caf::actor_system& system, std::string model,
                std::shared_ptr<const Servable> servable, const ServeOptions& options,
                Replicas replicas);

  ~LoadedVersion();

  const std::string& model() const { return model_; }
  const Servable& servable() const { return *servable_; }

  // `unit`: as ReplicaPool::Send's (a batched call goes to the batcher regardless).
  Status Submit(ServeCallPtr call, caf::execution_unit* unit = nullptr);

  VersionMetrics Metrics() const;

 private:
  std::string model_;
  std::shared_ptr<const Servable> servable_;
  std::shared_ptr<ReplicaPool> pool_;
  std::optional<ServingBatcher> batcher_;
  int64_t max_enqueued_batches_ = 0;
  std::vector<std::pair<FrontActor, uint64_t>> remote_sessions_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SERVING_SERVED_VERSION_H_
