// FakeParameterServer: the ParameterClient contract (kernels/parameter_client.h)
// kept in one process with a mutex and a condition variable, so that the
// data-parallel driver can be tested without an actor system: one shard, plain SGD
// (var -= learning_rate * gradient), the three update modes:
//   async  each push is applied on arrival;
//   sync   pushes computed on the current version wait until replicas_to_aggregate
//          of them arrived, are averaged and applied once; a push computed on an
//          older version is dropped at once, saying how stale it was;
//   ssp    like async, but a worker more than staleness_bound pushes ahead of the
//          slowest live registered worker waits.
// A client that is destroyed counts as a lost worker (as a worker whose process
// died does for the real shards) and stops holding back SSP.
//
// Waits are bounded by each call's timeout (DeadlineExceeded). Only "sgd" is
// supported: Initialize fails with Unimplemented for another optimizer.
//
// Thread safety: the server and its clients may be used from any threads (one
// thread per client, as the interface says).
#ifndef ACTORFLOW_TRAINING_DISTRIBUTED_FAKE_PARAMETER_SERVER_H_
#define ACTORFLOW_TRAINING_DISTRIBUTED_FAKE_PARAMETER_SERVER_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "kernels/parameter_client.h"

namespace actorflow {

class FakeParameterServer : public std::enable_shared_from_this<FakeParameterServer> {
 public:
  static std::shared_ptr<FakeParameterServer> Create(const ParameterServerOptions& options);

  // A new client (a worker's connection). It keeps the server alive.
  std::unique_ptr<ParameterClient> NewClient();

  // Pushes that arrived (applied or not), for tests.
  int64_t pushes_received() const;

 private:
  class Client;
  friend class Client;
  explicit FakeParameterServer(const ParameterServerOptions& options) : options_(options) {}

  Status Register(int worker);
  Status Initialize(const std::map<std::string, Tensor>& values);
  StatusOr<ParameterSnapshot> Pull(int64_t timeout_ms);
  StatusOr<PushResult> Push(int worker, const ParameterSnapshot& base,
                            const std::map<std::string, Tensor>& gradients, int64_t timeout_ms);
  StatusOr<ParameterStats> Stats();
  void Disconnect(int worker);
  // Requires mu_. var -= lr * scale * gradient for every variable.
  void ApplyLocked(const std::map<std::string, Tensor>& gradients, double scale);
  // Requires mu_. The fewest pushes among live registered workers.
  int64_t SlowestLiveLocked() const;

  const ParameterServerOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool initialized_ = false;
  std::map<std::string, Tensor> values_;
  int64_t version_ = 0;  // updates applied
  // kSync: the gradients summed for version_ so far and their count.
  std::map<std::string, Tensor> accumulated_;
  int accumulated_count_ = 0;
  std::map<int, int64_t> pushes_by_worker_;  // registered workers
  std::set<int> lost_;
  int64_t pushes_received_ = 0;
  int64_t dropped_ = 0;
  int64_t staleness_sum_ = 0;
  int64_t staleness_count_ = 0;
};

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DISTRIBUTED_FAKE_PARAMETER_SERVER_H_
