#include "actors/trainer/graph_trainer.h"

#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "actors/cluster/local_cluster.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "graph/status_testing.h"

namespace actorflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A user's own between-graph model: a counter on the first ps task (on the session's
// own device without ps tasks), which each worker's graph adds to on its own task.
struct CounterModel {
  Graph graph;

  explicit CounterModel(const GraphCluster& cluster, int worker) {
    Scope root = Scope::ForGraph(&graph);
    const std::vector<std::string> ps = cluster.PsDevices();
    const std::vector<std::string> workers = cluster.WorkerDevices();
    Scope vars = ps.empty() ? root : root.WithDevice(ps[0]);
    Scope ops = workers.empty() ? root : root.WithDevice(workers[worker]);
    auto counter = Variable(vars.WithOpName("counter"), Shape{}, DType::kFloat32);
    Assign(vars.WithOpName("init"), counter, Const(vars.WithOpName("zero"), Tensor::Scalar<float>(0)));
    AssignAdd(vars.WithOpName("add"), counter,
              Identity(ops.WithOpName("one"), Const(ops.WithOpName("c1"), Tensor::Scalar<float>(1))));
  }
};

// Worker w (chief 0 initializes) adds `adds[w]` times; the counter as the last reads it.
StatusOr<float> CountOnEveryWorker(const GraphCluster& cluster, const std::vector<int>& adds) {
  float seen = -1;
  for (int w : cluster.workers) {
    CounterModel model(cluster, w);
    AF_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, cluster.sessions(&model.graph, w));
    if (w == 0) AF_RETURN_IF_ERROR(session->Run({}, {}, {"init"}, nullptr));
    for (int i = 0; i < adds.at(w); ++i) AF_RETURN_IF_ERROR(session->Run({}, {}, {"add"}, nullptr));
    std::vector<Tensor> out;
    AF_RETURN_IF_ERROR(session->Run({}, {"counter"}, {}, &out));
    AF_ASSIGN_OR_RETURN(seen, out.at(0).scalar<float>());
    AF_RETURN_IF_ERROR(session->Close());
  }
  return seen;
}

TEST(GraphTrainerTest, EveryWorkersGraphUpdatesTheSameVariableOnTheLocalClustersPsTask) {
  GraphTrainerOptions options;
  options.cluster = TrainerCluster::Local(1, 2);
  float counted = -1;
  ASSERT_OK(TrainGraphWorkload(options, [&](const GraphCluster& cluster) -> Status {
    EXPECT_THAT(cluster.workers, ElementsAre(0, 1));
    AF_ASSIGN_OR_RETURN(counted, CountOnEveryWorker(cluster, {3, 4}));
    return Status::OK();
  }).status());
  EXPECT_EQ(counted, 7);  // worker 1 read both workers' additions from the ps task
}

TEST(GraphTrainerTest, WithoutPsTasksTheWorkerRunsInAnInProcessSession) {
  GraphTrainerOptions options;  // Local(0, 1)
  float counted = -1;
  ASSERT_OK(TrainGraphWorkload(options, [&](const GraphCluster& cluster) -> Status {
    EXPECT_TRUE(cluster.in_process);
    AF_ASSIGN_OR_RETURN(counted, CountOnEveryWorker(cluster, {5}));
    return Status::OK();
  }).status());
  EXPECT_EQ(counted, 5);
}

TEST(GraphTrainerTest, ASpecsTaskDrivesItsOwnWorkerOnly) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LocalCluster> servers,
                       LocalCluster::Start({{"ps", 1}, {"worker", 2}}));
  GraphTrainerOptions options;
  options.cluster = TrainerCluster::OfSpec(servers->spec(), "worker", 0);
  float counted = -1;
  Status other;
  ASSERT_OK(TrainGraphWorkload(options, [&](const GraphCluster& cluster) -> Status {
    CounterModel model(cluster, 1);
    other = cluster.sessions(&model.graph, 1).status();
    AF_ASSIGN_OR_RETURN(counted, CountOnEveryWorker(cluster, {2, 0}));
    return Status::OK();
  }).status());
  EXPECT_EQ(counted, 2);
  EXPECT_EQ(other.code(), Code::kFailedPrecondition);
  EXPECT_THAT(other.message(), HasSubstr("worker 1 is not driven by this process"));
}

TEST(GraphTrainerTest, AWorkerTaskWithoutAServerIsNamedWithinTheConnectTimeout) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LocalCluster> servers,
                       LocalCluster::Start({{"ps", 1}, {"worker", 1}}));
  // The addresses of servers that stopped: nothing listens there any more.
  const ClusterSpec spec = servers->spec();
  const std::string worker = spec.Address(TaskId{"worker", 0})->ToString();
  servers.reset();
  GraphTrainerOptions options;
  options.cluster = TrainerCluster::OfSpec(spec, "worker", -1);
  options.connect_timeout_ms = 2000;
  const Status status = TrainGraphWorkload(options, [&](const GraphCluster& cluster) -> Status {
                          return CountOnEveryWorker(cluster, {1}).status();
                        }).status();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(worker)) << status;
}

// The same model on a simulated cluster: the workload is the driver of worker 0's
// task, its sessions on the simulated tasks; the run replays.
TEST(GraphTrainerTest, OnASimulatedClusterTheSameWorkloadGivesTheSameRun) {
  GraphTrainerOptions options;
  TrainerSimulation simulation;
  simulation.shape = *ParseSimClusterSpec("sim:ps=1,worker=2");
  options.cluster = TrainerCluster::Simulated(simulation);
  options.seed = 3;
  std::vector<GraphTrainerReport> reports;
  for (int run = 0; run < 2; ++run) {
    float counted = -1;
    ASSERT_OK_AND_ASSIGN(GraphTrainerReport report,
                         TrainGraphWorkload(options, [&](const GraphCluster& cluster) -> Status {
                           AF_ASSIGN_OR_RETURN(counted, CountOnEveryWorker(cluster, {3, 4}));
                           return Status::OK();
                         }));
    EXPECT_EQ(counted, 7);
    EXPECT_TRUE(report.simulated);
    EXPECT_GT(report.virtual_seconds, 0);
    EXPECT_GE(report.steps, 1 + 3 + 1 + 4 + 1);  // init, adds and reads
    for (const SimInvariantResult& r : report.invariants) EXPECT_TRUE(r.violations.empty()) << r.name;
    reports.push_back(report);
  }
  EXPECT_FALSE(reports[0].event_log_hash.empty());
  EXPECT_EQ(reports[0].event_log_hash, reports[1].event_log_hash);
}

TEST(GraphTrainerTest, ABadClusterOrTimeoutEndsTheRunBeforeTheWorkload) {
  bool ran = false;
  const auto workload = [&](const GraphCluster&) {
    ran = true;
    return Status::OK();
  };
  GraphTrainerOptions bad_cluster;
  bad_cluster.cluster = TrainerCluster::Local(1, 0);
  EXPECT_THAT(TrainGraphWorkload(bad_cluster, workload).status().message(),
              HasSubstr("TrainerCluster.local_workers"));
  GraphTrainerOptions bad_timeout;
  bad_timeout.connect_timeout_ms = 0;
  EXPECT_THAT(TrainGraphWorkload(bad_timeout, workload).status().message(),
              HasSubstr("GraphTrainerOptions.connect_timeout_ms"));
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace actorflow
