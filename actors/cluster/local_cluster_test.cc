// Clusters in one process (LocalCluster: real servers over loopback): the slides'
// ps/worker example across two clients, resources that outlive sessions, lost and
// restarted workers, unreachable tasks, and bad input.

#include "actors/cluster/local_cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "actors/cluster/remote_session.h"
#include "actors/cluster/session_factory.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "kernels/test_ops.h"

namespace actorflow {
namespace {


std::unique_ptr<LocalCluster> StartCluster() {
  auto cluster = LocalCluster::Start({{"ps", 1}, {"worker", 2}});
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  return cluster.ok() ? std::move(cluster).value() : nullptr;
}

std::unique_ptr<Session> Open(const Graph* graph, const std::string& target) {
  SessionOptions options;
  options.target = target;
  auto session = NewSession(graph, options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(session).value() : nullptr;
}

// The slides' example: the weights live on the ps task, each worker computes.
void BuildSlidesModel(const Scope& root) {
  Scope ps = root.WithDevice("/job:ps/task:0");
  auto w = Variable(ps.WithOpName("w"), Shape{2}, DType::kFloat32);
  Assign(ps.WithOpName("w_init"), w, Const(ps.WithOpName("w0"), Tensor::FromVector<float>({1, 2})));
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{2});
  Scope w0 = root.WithDevice("/job:worker/task:0");
  Scope w1 = root.WithDevice("/job:worker/task:1");
  auto y0 = Mul(w0.WithOpName("y0"), w, x);
  auto y1 = Add(w1.WithOpName("y1"), w, x);
  AssignAdd(ps.WithOpName("w_update"), w, Add(w1.WithOpName("delta"), y0, y1));
}

TEST(LocalClusterTest, SlidesExampleRunsAndASecondClientSeesTheFirstOnesUpdates) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  Scope root = Scope::NewRootScope();
  BuildSlidesModel(root);
  ASSERT_TRUE(root.ok()) << root.status();
  const FeedList feed = {{"x", Tensor::FromVector<float>({10, 20})}};
  {
    auto first = Open(root.graph(), *cluster->Target("worker", 0));
    ASSERT_NE(first, nullptr);
    ASSERT_TRUE(first->Run({}, {}, {"w_init"}, nullptr).ok());
    std::vector<Tensor> out;
    RunMetadata meta;
    Status s = first->Run(RunOptions(), feed, {"y0", "y1"}, {"w_update"}, &out, &meta);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_TRUE(TensorsEqual(out[0], Tensor::FromVector<float>({10, 40})));
    EXPECT_TRUE(TensorsEqual(out[1], Tensor::FromVector<float>({11, 22})));
  }
  // Another client, on another task's master: the variable kept its update.
  auto second = Open(root.graph(), *cluster->Target("worker", 1));
  ASSERT_NE(second, nullptr);
  std::vector<Tensor> out;
  ASSERT_TRUE(second->Run({}, {"w"}, {}, &out).ok());
  // w + (w*x + w + x) = [1,2] + ([10,40] + [11,22])
  EXPECT_TRUE(TensorsEqual(out[0], Tensor::FromVector<float>({22, 64})));

  ASSERT_TRUE(ResetCluster(*cluster->Target("worker", 0), {}).ok());
  Status after_reset = second->Run({}, {"w"}, {}, nullptr);
  EXPECT_EQ(after_reset.code(), Code::kFailedPrecondition) << after_reset;
}

// Sessions and resets that share one client runtime (SessionOptions::client_runtime):
// a session still runs after another one on the runtime is gone, and ResetTask
// clears the task it names and no other.
TEST(LocalClusterTest, SessionsSharingAClientRuntimeOutliveEachOtherAndResetOneTaskOnly) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  Scope root = Scope::NewRootScope();
  BuildSlidesModel(root);
  ASSERT_TRUE(root.ok()) << root.status();
  const std::shared_ptr<ClientRuntime> runtime = NewClientRuntime();
  auto open = [&](const std::string& job, int task) {
    SessionOptions options;
    options.target = *cluster->Target(job, task);
    options.client_runtime = runtime;
    auto session = NewSession(root.graph(), options);
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? std::move(session).value() : nullptr;
  };
  {
    auto first = open("worker", 0);
    ASSERT_NE(first, nullptr);
    ASSERT_TRUE(first->Run({}, {}, {"w_init"}, nullptr).ok());
    const FeedList feed = {{"x", Tensor::FromVector<float>({10, 20})}};
    ASSERT_TRUE(first->Run(feed, {}, {"w_update"}, nullptr).ok());
  }
  auto second = open("worker", 1);
  ASSERT_NE(second, nullptr);
  std::vector<Tensor> out;
  ASSERT_TRUE(second->Run({}, {"w"}, {}, &out).ok());
  EXPECT_TRUE(TensorsEqual(out[0], Tensor::FromVector<float>({22, 64})));

  // w lives on the ps task: resetting a worker leaves it.
  ASSERT_TRUE(ResetTask(*cluster->Target("worker", 1), {}, 10000, runtime).ok());
  ASSERT_TRUE(second->Run({}, {"w"}, {}, &out).ok());
  EXPECT_TRUE(TensorsEqual(out[0], Tensor::FromVector<float>({22, 64})));
  ASSERT_TRUE(ResetTask(*cluster->Target("ps", 0), {}, 10000, runtime).ok());
  Status after_reset = second->Run({}, {"w"}, {}, nullptr);
  EXPECT_EQ(after_reset.code(), Code::kFailedPrecondition) << after_reset;
}

TEST(LocalClusterTest, KillingAWorkerMidStepFailsThatStepAndARestartHealsIt) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  Scope root = Scope::NewRootScope();
  Scope w0 = root.WithDevice("/job:worker/task:0");
  Scope w1 = root.WithDevice("/job:worker/task:1");
  auto x = Const(w1.WithOpName("x"), 3.0f);
  const Node* started = w1.WithOpName("started").AddNode("TestNotify", {x}, {{"name", AttrValue("w1_started")}});
  const Node* slow = w1.WithOpName("slow").AddNode("TestDelay", {Output(started)},
                                                    {{"delay_ms", AttrValue(int64_t{20000})}});
  Neg(w0.WithOpName("needs_w1"), Output(slow));
  Neg(w0.WithOpName("needs_w1_quickly"), x);
  Neg(w0.WithOpName("local_only"), Const(w0.WithOpName("c"), 1.0f));
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = Open(root.graph(), *cluster->Target("worker", 0));
  ASSERT_NE(session, nullptr);

  RunOptions options;
  options.timeout_in_ms = 15000;
  auto step = std::async(std::launch::async, [&] {
    return session->Run(options, {}, {"needs_w1"}, {}, nullptr, nullptr);
  });
  ASSERT_TRUE(WaitForNotifications("w1_started", 1, 10000)) << "the step never reached worker 1";
  ASSERT_TRUE(cluster->StopTask("worker", 1).ok());
  ASSERT_EQ(step.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "the step hung after its worker died";
  Status lost = step.get();
  EXPECT_EQ(lost.code(), Code::kUnavailable) << lost;
  EXPECT_THAT(lost.message(), ::testing::HasSubstr("/job:worker/replica:0/task:1")) << lost;

  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run(options, {}, {"local_only"}, {}, &out, nullptr).ok());
  EXPECT_EQ(out[0].data<float>()[0], -1.0f);

  ASSERT_TRUE(cluster->RestartTask("worker", 1).ok());
  Status healed = session->Run(options, {}, {"needs_w1_quickly"}, {}, &out, nullptr);
  ASSERT_TRUE(healed.ok()) << healed;
  EXPECT_EQ(out[0].data<float>()[0], -3.0f);
}

TEST(LocalClusterTest, AnUnreachableTaskIsUnavailableWithinTheDeadlineNamingIt) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  ASSERT_TRUE(cluster->StopTask("ps", 0).ok());
  Scope root = Scope::NewRootScope();
  Neg(root.WithDevice("/job:ps/task:0").WithOpName("on_ps"), Const(root, 1.0f));
  auto session = Open(root.graph(), *cluster->Target("worker", 0));
  ASSERT_NE(session, nullptr);
  RunOptions options;
  options.timeout_in_ms = 500;
  auto start = std::chrono::steady_clock::now();
  Status s = session->Run(options, {}, {"on_ps"}, {}, nullptr, nullptr);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(s.code(), Code::kUnavailable) << s;
  EXPECT_THAT(s.message(), ::testing::HasSubstr("/job:ps/task:0")) << s;
  auto address = cluster->spec().Address(TaskId{"ps", 0});
  EXPECT_THAT(s.message(), ::testing::HasSubstr(address->ToString())) << s;
  EXPECT_LT(took, std::chrono::seconds(5));
}

TEST(LocalClusterTest, ANodeColocatedWithARemoteVariableReachesItsTaskOnTheFirstStep) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  Scope root = Scope::NewRootScope();
  auto v = Variable(root.WithDevice("/job:ps/task:0").WithOpName("v"), Shape{}, DType::kFloat32);
  // No device of its own: the Assign follows its variable to the ps task.
  Assign(root.WithOpName("v_init"), v, Const(root.WithOpName("seven"), 7.0f));
  auto session = Open(root.graph(), *cluster->Target("worker", 0));
  ASSERT_NE(session, nullptr);
  Status s = session->Run({}, {}, {"v_init"}, nullptr);
  ASSERT_TRUE(s.ok()) << s;
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {"v"}, {}, &out).ok());
  EXPECT_EQ(out[0].data<float>()[0], 7.0f);
}

TEST(LocalClusterBadInputTest, AGraphNamingAJobTheClusterLacksIsInvalidArgument) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  Scope root = Scope::NewRootScope();
  Neg(root.WithDevice("/job:trainer/task:0").WithOpName("lost"), Const(root, 1.0f));
  auto session = Open(root.graph(), *cluster->Target("worker", 0));
  ASSERT_NE(session, nullptr);
  Status s = session->Run({}, {"lost"}, {}, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), ::testing::HasSubstr("trainer")) << s;
  EXPECT_THAT(s.message(), ::testing::HasSubstr("lost")) << s;
}

TEST(LocalClusterBadInputTest, APortAlreadyInUseIsNamed) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  ServerOptions options;
  options.cluster = cluster->spec();
  options.task = TaskId{"worker", 0};  // its port is taken by the running task
  auto server = Server::Start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), Code::kUnavailable);
  auto address = cluster->spec().Address(TaskId{"worker", 0});
  EXPECT_THAT(server.status().message(), ::testing::HasSubstr(address->ToString())) << server.status();
}

TEST(LocalClusterBadInputTest, AClosedPortIsUnavailableWithinTheConnectTimeout) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  std::string target = *cluster->Target("ps", 0);
  ASSERT_TRUE(cluster->StopTask("ps", 0).ok());
  Scope root = Scope::NewRootScope();
  SessionOptions options;
  options.target = target;
  auto session = NewRemoteSession(root.graph(), options, /*connect_timeout_ms=*/300);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().code(), Code::kUnavailable) << session.status();
}

}  // namespace
}  // namespace actorflow
