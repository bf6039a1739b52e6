// Testing a training program on a simulated cluster: your model, a cluster of one ps
// and two workers, a fault plan, and assertions on what training did. It runs in
// milliseconds of wall time, with no sockets and no threads of its own, and the same
// seed replays the same run bit for bit.
//
//   bazel test //examples/simulated_cluster:flaky_network_test
//
// The model: y = w * x + b fitted by gradient descent, the variables on the ps, each
// worker's gradients computed on its own task (in-graph replication by hand).
#include <gtest/gtest.h>

#include "actorflow.h"
#include "actorflow_testing.h"

namespace actorflow {
namespace {

// Your model, placed on the cluster's tasks.
std::shared_ptr<Graph> LinearRegression() {
  Scope root = Scope::NewRootScope();
  Scope ps = root.WithDevice("/job:ps/task:0");
  Output w = *CreateVariable(ps, "w", Const(ps, 0.0f));
  Output b = *CreateVariable(ps, "b", Const(ps, 0.0f));
  Output step = *CreateGlobalStep(ps);
  // Each worker fits its own half of the data: y = 3x + 1.
  std::vector<Output> losses;
  for (int task = 0; task < 2; ++task) {
    Scope worker = root.WithDevice("/job:worker/task:" + std::to_string(task));
    const float x0 = task == 0 ? -1.0f : 0.5f;
    auto x = Const(worker, Tensor::FromVector<float>({x0, x0 + 0.5f, x0 + 1.0f}));
    auto y = Add(worker, Mul(worker, x, Const(worker, 3.0f)), Const(worker, 1.0f));
    auto error = Sub(worker, Add(worker, Mul(worker, x, w), b), y);
    losses.push_back(Mean(worker, Square(worker, error), 0));
  }
  Scope chief = root.WithDevice("/job:worker/task:0");
  auto loss = Mul(chief.WithOpName("loss"), Add(chief, losses[0], losses[1]), Const(chief, 0.5f));
  GradientDescentOptimizer sgd(0.1);
  EXPECT_OK(sgd.Minimize(chief.WithOpName("train"), loss, step).status());
  GlobalVariablesInitializer(root.WithOpName("init"));
  EXPECT_TRUE(root.ok());
  return root.graph_ptr();
}

struct TrainingRun {
  std::vector<float> losses;
  float w = 0;
  std::string event_log_hash;
  double virtual_seconds = 0;
};

// 50 steps on a cluster whose links drop nothing but delay and duplicate messages.
TrainingRun TrainOnAFlakyNetwork(uint64_t seed) {
  SimulatedCluster::Options options;
  options.shape = *ParseSimClusterSpec("sim:ps=1,worker=2");
  options.faults = *ParseFaultPlan(R"({"faults": [
      {"delay": {"from": "/job:worker/task:1"}, "ms": 5, "jitter_ms": 5},
      {"duplicate": {"kind": "tensor"}, "probability": 0.05}]})",
                                   *options.shape.ToClusterSpec());
  options.link.latency_us = 200;
  options.seed = seed;
  TrainingRun run;
  StatusOr<std::unique_ptr<SimulatedCluster>> started = SimulatedCluster::Start(options);
  EXPECT_OK(started);
  std::unique_ptr<SimulatedCluster> cluster = std::move(started).value();
  std::shared_ptr<Graph> graph = LinearRegression();
  std::unique_ptr<Session> session = cluster->NewSession({"worker", 0}, graph.get());
  RunOptions deadline;
  deadline.timeout_in_ms = 1000;  // virtual
  EXPECT_OK(session->Run(deadline, {}, {}, {"init"}, nullptr, nullptr));
  std::vector<Tensor> out;
  for (int i = 0; i < 50; ++i) {
    EXPECT_OK(session->Run(deadline, {}, {"loss"}, {"train"}, &out, nullptr));
    run.losses.push_back(out[0].data<float>()[0]);
  }
  EXPECT_OK(session->Run(deadline, {}, {"w"}, {}, &out, nullptr));
  run.w = out[0].data<float>()[0];
  run.event_log_hash = cluster->EventLogHash();
  run.virtual_seconds = cluster->VirtualSeconds();
  return run;
}

TEST(FlakyNetworkTest, TrainingConvergesDespiteDelaysAndDuplicates) {
  const TrainingRun run = TrainOnAFlakyNetwork(/*seed=*/42);
  EXPECT_LT(run.losses.back(), 0.01f * run.losses.front());
  EXPECT_NEAR(run.w, 3.0f, 0.1f);
  // Worker 1's messages take 5-10 ms more: they pace every synchronous step.
  EXPECT_GT(run.virtual_seconds, 50 * 0.005);
}

TEST(FlakyNetworkTest, TheSameSeedReplaysTheRunBitForBit) {
  const TrainingRun first = TrainOnAFlakyNetwork(42);
  const TrainingRun again = TrainOnAFlakyNetwork(42);
  EXPECT_EQ(first.event_log_hash, again.event_log_hash);
  EXPECT_EQ(first.losses, again.losses);
  EXPECT_EQ(first.virtual_seconds, again.virtual_seconds);
}

}  // namespace
}  // namespace actorflow
