// LocalClusterTest: a GoogleTest fixture for tests (a user's or the project's) that
// need a whole cluster in one process: real Servers on 127.0.0.1 ports, reached
// through "actorflow://" targets exactly as separate processes would be. It starts
// clusters of a given shape, hands out their targets and a parameter-client factory
// for their ps job, and stops every cluster it started when the test ends.
//
//   class MyTest : public LocalClusterTest {};
//   TEST_F(MyTest, TrainsOnTwoWorkers) {
//     LocalCluster* cluster = StartCluster({{"ps", 1}, {"worker", 2}});
//     ASSERT_NE(cluster, nullptr);
//     SessionOptions options;
//     options.target = Target("worker", 0);
//     ...
//   }
//
// CAF-free (LocalCluster hides the actor systems). Clusters are stopped in
// TearDown, newest first, after the test body: anything the body started that uses
// them (sessions, parameter clients, threads) must end before the body returns.
// Thread safety: the methods belong to the test's main thread.
#ifndef ACTORFLOW_ACTORS_CLUSTER_LOCAL_CLUSTER_FIXTURE_H_
#define ACTORFLOW_ACTORS_CLUSTER_LOCAL_CLUSTER_FIXTURE_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/cluster/local_cluster.h"
#include "actors/ps/parameter_client_impl.h"
#include "graph/status.h"
#include "kernels/parameter_client.h"

namespace actorflow {

class LocalClusterTest : public ::testing::Test {
 protected:
  // Makes one client of the ps job's shards per call (the argument is the worker's
  // index); the type converts to training's ParameterClientFactory.
  using PsClientFactory =
      std::function<StatusOr<std::unique_ptr<ParameterClient>>(int worker_index)>;

  // Starts a cluster of `shape` (job -> number of tasks, every task with
  // `cpus_per_task` CPUs) that lives until the test ends, and makes it the current
  // one. Null, with a test failure naming the shape and the Status, when it cannot
  // start: `ASSERT_NE(StartCluster(...), nullptr)`.
  LocalCluster* StartCluster(const std::map<std::string, int>& shape, int cpus_per_task = 1);

  // The cluster the last StartCluster started. Precondition: one was started.
  LocalCluster& cluster();

  // "actorflow://127.0.0.1:PORT" of a task of the current cluster; empty, with a
  // test failure, for a task the cluster does not have.
  std::string Target(const std::string& job, int index);

  // Connects a client to every task of `ps_job` of `cluster` (as
  // ConnectParameterServers does), each within `connect_timeout_ms`. The factory
  // copies the cluster's spec: it stays valid after the cluster stops (its clients
  // then report Unavailable).
  static PsClientFactory PsClients(const LocalCluster& cluster,
                                   const ParameterServerOptions& options,
                                   int64_t connect_timeout_ms = 10000,
                                   const std::string& ps_job = "ps");

  // Stops every cluster this test started, newest first.
  void TearDown() override;

 private:
  std::vector<std::unique_ptr<LocalCluster>> clusters_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_CLUSTER_LOCAL_CLUSTER_FIXTURE_H_
