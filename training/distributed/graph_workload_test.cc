#include "training/distributed/graph_workload.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/status_testing.h"

namespace actorflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

ClusterSpec TwoPsThreeWorkers() {
  auto spec = ClusterSpec::FromJson(
      R"({"ps": ["127.0.0.1:7001", "127.0.0.1:7002"],
          "worker": ["127.0.0.1:7101", "127.0.0.1:7102", "127.0.0.1:7103"]})");
  EXPECT_OK(spec.status());
  return *spec;
}

TEST(GraphWorkloadTest, ALocalClusterWithPsTasksPlacesTheVariablesAndTheWorkersOnItsTasks) {
  ASSERT_OK_AND_ASSIGN(GraphCluster shape, GraphClusterShape(TrainerCluster::Local(2, 3)));
  EXPECT_FALSE(shape.in_process);
  EXPECT_THAT(shape.workers, ElementsAre(0, 1, 2));
  EXPECT_THAT(shape.PsDevices(), ElementsAre("/job:ps/task:0", "/job:ps/task:1"));
  EXPECT_THAT(shape.WorkerDevices(),
              ElementsAre("/job:worker/task:0", "/job:worker/task:1", "/job:worker/task:2"));
}

TEST(GraphWorkloadTest, NoPsTaskMeansInProcessSessionsOnTheirOwnDevices) {
  ASSERT_OK_AND_ASSIGN(GraphCluster shape, GraphClusterShape(TrainerCluster::Local(0, 1)));
  EXPECT_TRUE(shape.in_process);
  EXPECT_THAT(shape.workers, ElementsAre(0));
  EXPECT_TRUE(shape.PsDevices().empty());
  EXPECT_TRUE(shape.WorkerDevices().empty());
}

TEST(GraphWorkloadTest, ASpecDrivesEveryWorkerOrOnlyItsOwnTask) {
  ASSERT_OK_AND_ASSIGN(GraphCluster all,
                       GraphClusterShape(TrainerCluster::OfSpec(TwoPsThreeWorkers(), "worker", -1)));
  EXPECT_EQ(all.num_ps, 2);
  EXPECT_EQ(all.num_workers, 3);
  EXPECT_THAT(all.workers, ElementsAre(0, 1, 2));
  ASSERT_OK_AND_ASSIGN(GraphCluster one,
                       GraphClusterShape(TrainerCluster::OfSpec(TwoPsThreeWorkers(), "worker", 1)));
  EXPECT_THAT(one.workers, ElementsAre(1));
  EXPECT_THAT(one.WorkerDevices(), ElementsAre("/job:worker/task:0", "/job:worker/task:1",
                                               "/job:worker/task:2"));
}

TEST(GraphWorkloadTest, ABadClusterIsInvalidArgumentNamingTheField) {
  const std::vector<std::pair<TrainerCluster, std::string>> cases = {
      {TrainerCluster::Local(-1, 2), "TrainerCluster.local_ps_tasks -1"},
      {TrainerCluster::Local(1, 0), "TrainerCluster.local_workers 0"},
      {TrainerCluster::OfSpec(TwoPsThreeWorkers(), "chief", -1, "c.json"),
       "TrainerCluster.job 'chief': c.json has no such job"},
      {TrainerCluster::OfSpec(TwoPsThreeWorkers(), "worker", 3), "TrainerCluster.task 3"},
      {TrainerCluster::OfSpec(TwoPsThreeWorkers(), "worker", -2), "TrainerCluster.task -2"},
  };
  for (const auto& [cluster, message] : cases) {
    const Status status = GraphClusterShape(cluster).status();
    EXPECT_EQ(status.code(), Code::kInvalidArgument) << message;
    EXPECT_THAT(status.message(), HasSubstr(message));
  }
}

}  // namespace
}  // namespace actorflow
