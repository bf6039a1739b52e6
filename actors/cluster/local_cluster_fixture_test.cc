// LocalClusterTest itself: a started cluster's tasks are reachable by their
// targets, an unknown task is a test failure (not a crash), the ps client factory
// reaches the shards, and a cluster that cannot start is reported.
#include "actors/cluster/local_cluster_fixture.h"

#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>

#include <string>

#include "graph/status_testing.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class LocalClusterFixtureTest : public LocalClusterTest {};

TEST_F(LocalClusterFixtureTest, GivesEveryTaskItsOwnTarget) {
  LocalCluster* cluster = StartCluster({{"ps", 1}, {"worker", 2}});
  ASSERT_NE(cluster, nullptr);
  EXPECT_EQ(&this->cluster(), cluster);
  const std::string worker0 = Target("worker", 0);
  const std::string worker1 = Target("worker", 1);
  EXPECT_THAT(worker0, StartsWith("actorflow://127.0.0.1:"));
  EXPECT_NE(worker0, worker1);
  ASSERT_OK_AND_ASSIGN(std::string ps0, cluster->Target("ps", 0));
  EXPECT_EQ(Target("ps", 0), ps0);
}

TEST_F(LocalClusterFixtureTest, AnUnknownTaskIsATestFailureNamingIt) {
  ASSERT_NE(StartCluster({{"ps", 1}}), nullptr);
  std::string target = "unset";
  EXPECT_NONFATAL_FAILURE(target = Target("worker", 3), "worker");
  EXPECT_EQ(target, "");
}

TEST_F(LocalClusterFixtureTest, PsClientsReachTheShardsOfTheCluster) {
  LocalCluster* cluster = StartCluster({{"ps", 2}});
  ASSERT_NE(cluster, nullptr);
  ParameterServerOptions options;
  options.total_replicas = 1;
  options.replicas_to_aggregate = 1;
  PsClientFactory clients = PsClients(*cluster, options, 5000);
  ASSERT_OK(clients(0));
  // A ps job the cluster lacks: the factory reports it instead of hanging.
  auto missing = PsClients(*cluster, options, 5000, "parameter_servers")(0);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("parameter_servers"));
}

TEST_F(LocalClusterFixtureTest, AClusterThatCannotStartIsReported) {
  LocalCluster* cluster = nullptr;
  EXPECT_NONFATAL_FAILURE(cluster = StartCluster({{"ps", 0}}),
                          "did not start");
  EXPECT_EQ(cluster, nullptr);
}

}  // namespace
}  // namespace actorflow
