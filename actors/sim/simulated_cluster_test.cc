#include "actors/sim/simulated_cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/ops.h"
#include "graph/scope.h"
#include "graph/status_testing.h"

namespace actorflow {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

const TaskId kChief{"worker", 0};

SimulatedCluster::Options OptionsFor(const std::string& shape, const std::string& plan = "",
                                     uint64_t seed = 1) {
  SimulatedCluster::Options options;
  auto parsed = ParseSimClusterSpec(shape);
  EXPECT_OK(parsed);
  options.shape = *parsed;
  if (!plan.empty()) {
    auto cluster = options.shape.ToClusterSpec();
    auto faults = ParseFaultPlan(plan, *cluster);
    EXPECT_OK(faults);
    options.faults = *faults;
  }
  options.seed = seed;
  return options;
}

// z = -(w * x): w on the ps, x and the product on worker 1, z on worker 0.
std::shared_ptr<Graph> ThreeTaskGraph() {
  Scope root = Scope::NewRootScope();
  auto w = Const(root.WithDevice("/job:ps/task:0").WithOpName("w"), 3.0f);
  auto x = Const(root.WithDevice("/job:worker/task:1").WithOpName("x"), 7.0f);
  auto y = Mul(root.WithDevice("/job:worker/task:1").WithOpName("y"), w, x);
  Neg(root.WithDevice("/job:worker/task:0").WithOpName("z"), y);
  EXPECT_TRUE(root.ok());
  return root.graph_ptr();
}

TEST(SimulatedClusterTest, RunsAStepAcrossTasksInVirtualTime) {
  SimulatedCluster::Options options = OptionsFor("sim:ps=1,worker=2");
  options.link.latency_us = 100;
  ASSERT_OK_AND_ASSIGN(auto cluster, SimulatedCluster::Start(options));
  auto graph = ThreeTaskGraph();
  ASSERT_OK_AND_ASSIGN(uint64_t session, cluster->OpenSession(kChief, *graph));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, cluster->Run(kChief, session, {}, {"z"}));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data<float>()[0], -21.0f);
  // Two tensors and the control messages crossed links of 100 us each.
  EXPECT_GE(cluster->VirtualSeconds(), 0.0005);
  EXPECT_GE(cluster->event_log().Count(SimEvent::Kind::kDelivered), 6u);
  EXPECT_OK(cluster->CloseSession(kChief, session));
}

// The same seed and program: the same event log, results and virtual time; another
// seed: another event log.
TEST(SimulatedClusterTest, ASeedReproducesTheRunAndAnotherSeedChangesIt) {
  const std::string plan = R"({"faults": [
      {"delay": {"kind": "tensor"}, "ms": 1, "jitter_ms": 5, "probability": 0.5},
      {"duplicate": {"kind": "tensor"}, "probability": 0.2}]})";
  struct Outcome {
    std::string hash;
    double seconds = 0;
    std::vector<float> values;
  };
  auto run = [&](uint64_t seed) {
    SimulatedCluster::Options options = OptionsFor("sim:ps=1,worker=2", plan, seed);
    options.link.jitter_us = 40;
    Outcome outcome;
    auto cluster = SimulatedCluster::Start(options);
    EXPECT_OK(cluster);
    auto graph = ThreeTaskGraph();
    auto session = (*cluster)->OpenSession(kChief, *graph);
    EXPECT_OK(session);
    for (int step = 0; step < 5; ++step) {
      auto out = (*cluster)->Run(kChief, *session, {}, {"z"});
      EXPECT_OK(out);
      if (out.ok()) outcome.values.push_back((*out)[0].data<float>()[0]);
    }
    outcome.hash = (*cluster)->EventLogHash();
    outcome.seconds = (*cluster)->VirtualSeconds();
    return outcome;
  };
  const Outcome first = run(7);
  const Outcome second = run(7);
  const Outcome other = run(8);
  EXPECT_EQ(first.hash, second.hash);
  EXPECT_EQ(first.seconds, second.seconds);
  EXPECT_EQ(first.values, std::vector<float>(5, -21.0f));
  EXPECT_EQ(first.values, second.values);
  EXPECT_NE(first.hash, other.hash);
  EXPECT_NE(first.seconds, other.seconds);
}

TEST(SimulatedClusterTest, AKilledTaskFailsTheStepsThatNeedItUntilItIsRestarted) {
  ASSERT_OK_AND_ASSIGN(auto cluster, SimulatedCluster::Start(OptionsFor("sim:ps=1,worker=2")));
  auto graph = ThreeTaskGraph();
  ASSERT_OK_AND_ASSIGN(uint64_t session, cluster->OpenSession(kChief, *graph));
  ASSERT_OK(cluster->Run(kChief, session, {}, {"z"}));
  ASSERT_OK(cluster->KillTask({"worker", 1}));
  StatusOr<std::vector<Tensor>> failed = cluster->Run(kChief, session, {}, {"z"}, {}, 5000);
  ASSERT_FALSE(failed.ok());
  // Named either way: the link reports the task down, or its device is gone.
  EXPECT_THAT(failed.status().ToString(), ContainsRegex("/job:worker/(replica:0/)?task:1"));
  EXPECT_EQ(cluster->event_log().Count(SimEvent::Kind::kKilled), 1u);
  EXPECT_EQ(cluster->KillTask({"worker", 1}).code(), Code::kFailedPrecondition);
  EXPECT_EQ(cluster->OpenSession({"worker", 1}, *graph).status().code(), Code::kUnavailable);

  ASSERT_OK(cluster->RestartTask({"worker", 1}));
  ASSERT_OK_AND_ASSIGN(uint64_t fresh, cluster->OpenSession(kChief, *graph));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, cluster->Run(kChief, fresh, {}, {"z"}));
  EXPECT_EQ(out[0].data<float>()[0], -21.0f);
  EXPECT_EQ(cluster->RestartTask({"worker", 1}).code(), Code::kFailedPrecondition);
}

TEST(SimulatedClusterTest, RefusesBadOptionsBeforeStartingAnything) {
  SimulatedCluster::Options big = OptionsFor("sim:ps=10,worker=495,devices=2");
  big.model_bytes = 1 << 20;
  big.available_bytes = 1 << 30;
  auto refused = SimulatedCluster::Start(big);
  EXPECT_EQ(refused.status().code(), Code::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("1010 devices"));

  SimulatedCluster::Options bad_link = OptionsFor("sim:ps=1,worker=1");
  bad_link.link.bandwidth_gbps = 0;
  EXPECT_EQ(SimulatedCluster::Start(bad_link).status().code(), Code::kInvalidArgument);

  ASSERT_OK_AND_ASSIGN(auto cluster, SimulatedCluster::Start(OptionsFor("sim:ps=1,worker=1")));
  EXPECT_EQ(cluster->KillTask({"worker", 5}).code(), Code::kInvalidArgument);
}

// Training code runs on a Session: a variable on the ps, fed and updated from the
// chief, and a graph that grows between steps (the session opens again).
TEST(SimulatedClusterTest, ItsSessionsRunStatefulStepsAndFollowAGrowingGraph) {
  ASSERT_OK_AND_ASSIGN(auto cluster, SimulatedCluster::Start(OptionsFor("sim:ps=1,worker=1")));
  Scope root = Scope::NewRootScope();
  auto v = Variable(root.WithDevice("/job:ps/task:0").WithOpName("v"), Shape({}), DType::kFloat32);
  Assign(root.WithDevice("/job:ps/task:0").WithOpName("init"), v,
         Const(root.WithDevice("/job:ps/task:0"), 1.0f));
  auto delta = Placeholder(root.WithDevice("/job:worker/task:0").WithOpName("delta"), DType::kFloat32);
  AssignAdd(root.WithDevice("/job:ps/task:0").WithOpName("add"), v, delta);
  ASSERT_TRUE(root.ok());
  std::unique_ptr<Session> session = cluster->NewSession(kChief, root.graph());
  ASSERT_OK(session->Run({}, {}, {"init"}, nullptr));
  std::vector<Tensor> out;
  for (float d : {2.0f, 3.0f}) ASSERT_OK(session->Run({{"delta", Tensor::Scalar(d)}}, {"add"}, {}, &out));
  EXPECT_EQ(out[0].data<float>()[0], 6.0f);
  // A node added after the first steps: the session takes it (extends); the variable stays.
  Neg(root.WithDevice("/job:worker/task:0").WithOpName("negated"), v);
  ASSERT_TRUE(root.ok());
  ASSERT_OK(session->Run({}, {"negated"}, {}, &out));
  EXPECT_EQ(out[0].data<float>()[0], -6.0f);
  ASSERT_OK(session->Close());
  EXPECT_EQ(session->Run({}, {"negated"}, {}, &out).code(), Code::kFailedPrecondition);
}

// Extending a session with a graph that is not its own with nodes added is refused,
// naming the first node that differs; the session goes on with its own graph.
TEST(SimulatedClusterTest, AnExtensionThatIsNotTheSessionsGraphGrownIsRefused) {
  ASSERT_OK_AND_ASSIGN(auto cluster, SimulatedCluster::Start(OptionsFor("sim:ps=1,worker=2")));
  auto graph = ThreeTaskGraph();
  ASSERT_OK_AND_ASSIGN(uint64_t session, cluster->OpenSession(kChief, *graph));
  Scope other = Scope::NewRootScope();
  Const(other.WithOpName("w"), 3.0f);
  for (const char* name : {"something_else", "a", "b", "c"}) Const(other.WithOpName(name), 1.0f);
  Status refused = cluster->ExtendSession(kChief, session, *other.graph());
  EXPECT_EQ(refused.code(), Code::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("'something_else'"));
  EXPECT_EQ(cluster->ExtendSession(kChief, session + 100, *graph).code(),
            Code::kFailedPrecondition);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, cluster->Run(kChief, session, {}, {"z"}));
  EXPECT_EQ(out[0].data<float>()[0], -21.0f);
}

// The ps cut off from the chief between virtual seconds 1 and 2: steps in that
// window fail at their deadline, the partition heals, and training goes on with every
// update that succeeded applied exactly once.
TEST(SimulatedClusterTest, APartitionFailsStepsUntilItHealsAndLosesNoAppliedUpdate) {
  ASSERT_OK_AND_ASSIGN(
      auto cluster,
      SimulatedCluster::Start(OptionsFor("sim:ps=1,worker=1", R"({"faults": [
          {"partition": [["/job:ps/task:0"], ["/job:worker/task:0"]], "from_s": 1.0, "until_s": 2.0}]})")));
  Scope root = Scope::NewRootScope();
  auto v = Variable(root.WithDevice("/job:ps/task:0").WithOpName("v"), Shape({}), DType::kFloat32);
  Assign(root.WithDevice("/job:ps/task:0").WithOpName("init"), v,
         Const(root.WithDevice("/job:ps/task:0"), 0.0f));
  auto one = Const(root.WithDevice("/job:worker/task:0").WithOpName("one"), 1.0f);
  AssignAdd(root.WithDevice("/job:ps/task:0").WithOpName("add"), v, one);
  ASSERT_TRUE(root.ok());
  std::unique_ptr<Session> session = cluster->NewSession(kChief, root.graph());
  RunOptions deadline;
  deadline.timeout_in_ms = 300;
  std::vector<Tensor> out;
  ASSERT_OK(session->Run(deadline, {}, {}, {"init"}, nullptr, nullptr));
  int applied = 0;
  for (int i = 0; i < 3; ++i, ++applied) ASSERT_OK(session->Run(deadline, {}, {}, {"add"}, nullptr, nullptr));

  cluster->AdvanceSeconds(1.0 - cluster->VirtualSeconds() + 0.01);
  int failed = 0;
  while (cluster->VirtualSeconds() < 1.9) {
    Status cut = session->Run(deadline, {}, {}, {"add"}, nullptr, nullptr);
    EXPECT_EQ(cut.code(), Code::kDeadlineExceeded);
    EXPECT_THAT(cut.message(), HasSubstr("/job:ps/replica:0/task:0"));
    ++failed;
  }
  EXPECT_GE(failed, 2);
  EXPECT_GT(cluster->event_log().Count(SimEvent::Kind::kDropped), 0u);

  cluster->AdvanceSeconds(2.0 - cluster->VirtualSeconds() + 0.01);
  for (int i = 0; i < 2; ++i, ++applied) ASSERT_OK(session->Run(deadline, {}, {}, {"add"}, nullptr, nullptr));
  ASSERT_OK(session->Run(deadline, {}, {"v"}, {}, &out, nullptr));
  EXPECT_EQ(out[0].data<float>()[0], static_cast<float>(applied));
}

TEST(SimulatedClusterTest, AdvancingTimeRunsTimersDueAndMovesTheClock) {
  ASSERT_OK_AND_ASSIGN(auto cluster, SimulatedCluster::Start(OptionsFor("sim:ps=1,worker=1")));
  const double before = cluster->VirtualSeconds();
  cluster->AdvanceSeconds(2.5);
  EXPECT_DOUBLE_EQ(cluster->VirtualSeconds() - before, 2.5);
}

}  // namespace
}  // namespace actorflow
