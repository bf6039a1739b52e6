#include "actors/serving/served_version.h"

#include <algorithm>

namespace actorflow {

Status ReplicaPool::Send(std::shared_ptr<ReplicaPool> self, ServeCallPtr call, bool bounded,
                         caf::execution_unit* unit) {
  const size_t index = LeastLoaded();
  if (bounded && in_flight[index].load() >= max_in_flight_per_replica) {
    return ResourceExhausted("every replica has " + std::to_string(max_in_flight_per_replica) +
                             " requests in flight; try again later");
  }
  in_flight[index].fetch_add(1);
  auto done = std::move(call->done);
  call->done = [pool = std::move(self), index,
                done = std::move(done)](StatusOr<std::vector<Tensor>> result) {
    pool->in_flight[index].fetch_sub(1);
    done(std::move(result));
  };
  caf::actor_cast<caf::strong_actor_ptr>(replicas[index])
      ->enqueue(nullptr, caf::make_message_id(), caf::make_message(std::move(call)), unit);
  return Status::OK();
}

LoadedVersion::LoadedVersion(caf::actor_system& system, std::string model,
                             std::shared_ptr<const Servable> servable, const ServeOptions& options,
                             Replicas replicas)
    : model_(std::move(model)),
      servable_(std::move(servable)),
      remote_sessions_(std::move(replicas.remote_sessions)) {
  pool_ = std::make_shared<ReplicaPool>();
  const size_t count = replicas.actors.size();
  pool_->in_flight = std::make_unique<std::atomic<int64_t>[]>(count);
  pool_->max_in_flight_per_replica = options.max_in_flight_per_replica;
  pool_->replicas = std::move(replicas.actors);
  pool_->lost = std::move(replicas.lost);
  for (size_t i = 0; i < count; ++i) pool_->in_flight[i] = 0;
  if (options.enable_batching) {
    max_enqueued_batches_ = options.max_enqueued_batches;
    pool_->max_batch_size = options.max_batch_size;
    pool_->batch_size_counts = std::make_unique<std::atomic<int64_t>[]>(options.max_batch_size + 1);
    for (int64_t i = 0; i <= options.max_batch_size; ++i) pool_->batch_size_counts[i] = 0;
    DispatchFn dispatch = [pool = pool_](ServeCallPtr batch) {
      pool->outstanding_batches.fetch_add(1);
      pool->batch_size_counts[std::min(batch->rows, pool->max_batch_size)].fetch_add(1);
      auto done = std::move(batch->done);
      batch->done = [pool, done = std::move(done)](StatusOr<std::vector<Tensor>> result) {
        pool->outstanding_batches.fetch_sub(1);
        done(std::move(result));
      };
      // Batches are bounded when they are admitted (max_enqueued_batches), so a
      // formed batch always goes to a replica.
      (void)pool->Send(pool, std::move(batch), /*bounded=*/false);
    };
    batcher_ = SpawnServingBatcher(system, options.max_batch_size, options.batch_timeout_micros,
                                   std::move(dispatch));
  }
}

LoadedVersion::~LoadedVersion() {
  for (const ServingReplica& r : pool_->replicas)
    caf::anon_send_exit(r, caf::exit_reason::user_shutdown);
  if (batcher_) caf::anon_send_exit(*batcher_, caf::exit_reason::user_shutdown);
  for (const auto& [front, session_id] : remote_sessions_)
    caf::anon_send(front, close_atom::value, session_id);
}

Status LoadedVersion::Submit(ServeCallPtr call, caf::execution_unit* unit) {
  if (!batcher_) return pool_->Send(pool_, std::move(call), /*bounded=*/true, unit);
  if (pool_->outstanding_batches.load() >= max_enqueued_batches_) {
    return ResourceExhausted("the batch queue of " + model_ + " version " +
                             std::to_string(servable_->version) + " is full (" +
                             std::to_string(max_enqueued_batches_) +
                             " batches outstanding); try again later");
  }
  caf::anon_send(*batcher_, std::move(call));
  return Status::OK();
}

VersionMetrics LoadedVersion::Metrics() const {
  VersionMetrics m;
  m.model = model_;
  m.version = servable_->version;
  m.replicas = static_cast<int64_t>(pool_->replicas.size());
  for (size_t i = 0; i < pool_->replicas.size(); ++i) m.in_flight += pool_->in_flight[i].load();
  if (pool_->batch_size_counts) {
    for (int64_t i = 0; i <= pool_->max_batch_size; ++i)
      m.batch_size_counts.push_back(pool_->batch_size_counts[i].load());
  }
  return m;
}

int64_t ServedVersion::version() const { return loaded->servable().version; }
const Servable& ServedVersion::servable() const { return loaded->servable(); }

}  // namespace actorflow
