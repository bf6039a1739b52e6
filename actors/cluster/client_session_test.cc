// ClientSession: feeds, fetches and targets by Output on every target kind, fetches
// of ops without outputs, build errors; and the sessions' timeouts from
// SessionOptions (default step deadline, connect timeout), in process and against a
// LocalCluster task on loopback.
#include "actors/cluster/client_session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "actors/cluster/local_cluster.h"
#include "actors/cluster/session_factory.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "graph/status_testing.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

float Value(const Tensor& t) { return t.data<float>()[0]; }

TEST(ClientSessionTest, RunsOnTheActorRuntimeByDefaultWithTensorAndLiteralFeeds) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root, DType::kFloat32);
  auto y = Mul(root, x, 2.0f);
  ASSERT_OK_AND_ASSIGN(auto session, ClientSession::Create(root));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({{x, Tensor::Scalar(3.0f)}}, {y}, &out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Value(out[0]), 6.0f);
  ASSERT_OK(session->Run({{x, 4.5f}}, {y, x}, &out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(Value(out[0]), 9.0f);
  EXPECT_EQ(Value(out[1]), 4.5f);
}

// The README's "C++ API" snippets as written there, so that they keep compiling and
// doing what the README says.
Status ReadmeActorRuntimeSnippet(std::vector<Tensor>* result) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root, DType::kFloat32);
  auto y = Mul(root, x, 2.0f);
  AF_ASSIGN_OR_RETURN(auto session, ClientSession::Create(root));
  std::vector<Tensor> out;
  AF_RETURN_IF_ERROR(session->Run({{x, 3.0f}}, {y}, &out));  // out[0]: float32 [] 6
  *result = out;
  return Status::OK();
}

Status ReadmeRemoteClientSnippet(const std::string& target, std::vector<Tensor>* result) {
  Scope root = Scope::NewRootScope();
  auto y = Add(root, Const(root, 4.0f), 3.0f);
  SessionOptions options;
  options.target = target;
  options.connect_timeout_in_ms = 5000;         // give up connecting after 5 s (default 30 s)
  options.default_step_timeout_in_ms = 10000;   // a Run without RunOptions.timeout_in_ms
  AF_ASSIGN_OR_RETURN(auto session, ClientSession::Create(root, options));
  return session->Run({y}, result);
}

TEST(ClientSessionTest, TheReadmeSnippetRunsOnTheActorRuntime) {
  std::vector<Tensor> out;
  ASSERT_OK(ReadmeActorRuntimeSnippet(&out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype(), DType::kFloat32);
  EXPECT_EQ(Value(out[0]), 6.0f);
}

TEST(ClientSessionTest, VectorAndIntegerLiteralsFeedTheirDTypes) {
  Scope root = Scope::NewRootScope();
  auto v = Placeholder(root, DType::kFloat32, Shape{2});
  auto n = Placeholder(root, DType::kInt32);
  auto sum = Sum(root, v);
  auto twice = Add(root, n, n);
  ASSERT_OK_AND_ASSIGN(auto session, ClientSession::Create(root));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({{v, {1.5f, 2.0f}}, {n, 21}}, {sum, twice}, &out));
  EXPECT_EQ(Value(out[0]), 3.5f);
  EXPECT_EQ(out[1].data<int32_t>()[0], 42);
}

TEST(ClientSessionTest, ATrainOpFetchedBesideTheLossRunsAndItsSlotIsEmpty) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK_AND_ASSIGN(auto w, CreateVariable(root, "w", Tensor::FromVector<float>({1.0f})));
  auto loss = Sum(root, Square(root, w));  // d/dw = 2w
  GradientDescentOptimizer sgd(0.25);
  ASSERT_OK_AND_ASSIGN(Output train, sgd.Minimize(root, loss, Output()));
  auto init = GlobalVariablesInitializer(root);
  ASSERT_EQ(train.node->num_outputs(), 0);

  ASSERT_OK_AND_ASSIGN(auto session, ClientSession::Create(root));
  ASSERT_OK(session->Run({init}, nullptr));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({loss, train}, &out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(Value(out[0]), 1.0f);  // the loss before the step
  EXPECT_FALSE(out[1].IsInitialized());
  ASSERT_OK(session->Run({w}, &out));
  EXPECT_EQ(Value(out[0]), 0.5f);  // w - 0.25 * 2w
}

TEST(ClientSessionTest, TargetsByOutputNodeOrNameRunWithoutBeingFetched) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK_AND_ASSIGN(auto w, CreateVariable(root, "w", Tensor::FromVector<float>({0.0f})));
  auto init = GlobalVariablesInitializer(root);
  auto add_one = AssignAdd(root.WithOpName("add_one"), w, Tensor::FromVector<float>({1.0f}));
  ASSERT_OK_AND_ASSIGN(auto session, ClientSession::Create(root));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {}, {init}, nullptr));
  ASSERT_OK(session->Run({}, {}, {add_one}, nullptr));
  ASSERT_OK(session->Run({}, {}, {add_one.node}, nullptr));
  ASSERT_OK(session->Run({}, {}, {"add_one"}, &out));
  EXPECT_TRUE(out.empty());
  ASSERT_OK(session->Run({w}, &out));
  EXPECT_EQ(Value(out[0]), 3.0f);
}

TEST(ClientSessionTest, RunOptionsAndMetadataReachTheSession) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32);
  auto y = Neg(root.WithOpName("y"), x);
  ASSERT_OK_AND_ASSIGN(auto session, ClientSession::Create(root));
  RunOptions options;
  options.timeout_in_ms = 10000;
  RunMetadata metadata;
  std::vector<Tensor> out;
  ASSERT_OK(session->Run(options, {{x, 2.0f}}, {y}, {}, &out, &metadata));
  EXPECT_EQ(Value(out[0]), -2.0f);
  EXPECT_THAT(metadata.executed_nodes, ::testing::Contains("y"));
}

TEST(ClientSessionTest, DirectTargetAndAWrappedSessionGiveTheSameResults) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root, DType::kFloat32);
  auto y = Add(root, Mul(root, x, x), 1.0f);
  ASSERT_OK_AND_ASSIGN(auto direct, ClientSession::Create(root, "direct"));
  SessionOptions options;
  ASSERT_OK_AND_ASSIGN(auto plain, NewSession(root.graph(), options));
  ClientSession wrapped(std::move(plain));
  std::vector<Tensor> a, b;
  ASSERT_OK(direct->Run({{x, 3.0f}}, {y}, &a));
  ASSERT_OK(wrapped.Run({{x, 3.0f}}, {y}, &b));
  EXPECT_EQ(Value(a[0]), 10.0f);
  EXPECT_EQ(Value(b[0]), 10.0f);
}

TEST(ClientSessionBadInputTest, AFailedOpFunctionIsReportedByCreateAndByRun) {
  Scope root = Scope::NewRootScope();
  auto a = Const(root, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3}));
  ASSERT_OK_AND_ASSIGN(auto session, ClientSession::Create(root));
  // [2,3] x [2,3] does not multiply: the op function records the error, returns {}.
  auto bad = MatMul(root.WithOpName("bad_matmul"), a, a);
  EXPECT_FALSE(bad.valid());
  std::vector<Tensor> out;
  Status run = session->Run({bad}, &out);
  EXPECT_EQ(run.code(), root.status().code());
  EXPECT_THAT(run.message(), HasSubstr("bad_matmul"));
  auto created = ClientSession::Create(root);
  ASSERT_FALSE(created.ok());
  EXPECT_THAT(created.status().message(), HasSubstr("bad_matmul"));
}

TEST(ClientSessionBadInputTest, EmptyOutputsAndUnknownTargetsAreNamed) {
  Scope root = Scope::NewRootScope();
  auto x = Const(root, 1.0f);
  ASSERT_OK_AND_ASSIGN(auto session, ClientSession::Create(root.graph()));
  std::vector<Tensor> out;
  Status s = session->Run({x, Output()}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("fetch #1"));
  s = session->Run({{Output(), 1.0f}}, {x}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("feed #0"));
  s = session->Run({}, {}, {std::string()}, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("target #0"));
  s = session->Run({}, {}, {"no_such_op"}, nullptr);
  EXPECT_EQ(s.code(), Code::kNotFound) << s;

  auto unknown = ClientSession::Create(root, "bogus://x");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("bogus://x"));
}

TEST(ClientSessionBadInputTest, BadTimeoutsAreInvalidArgumentNamingTheField) {
  Scope root = Scope::NewRootScope();
  SessionOptions options;
  options.default_step_timeout_in_ms = -1;
  auto s = ClientSession::Create(root, options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("default_step_timeout_in_ms"));

  options = SessionOptions();
  options.target = "actorflow://127.0.0.1:1";
  options.connect_timeout_in_ms = 0;
  s = ClientSession::Create(root, options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("connect_timeout_in_ms"));
}

// A dequeue from an empty queue blocks until the step's deadline ends it. Which
// deadline did so shows in the message ("deadline of N ms").
struct BlockingGraph {
  Scope root = Scope::NewRootScope();
  Output dequeued;

  explicit BlockingGraph(const std::string& device) {
    Scope scope = root.WithDevice(device);
    Queue queue = FIFOQueue(scope, {DType::kFloat32}, {Shape{}}, 10);
    dequeued = QueueDequeue(scope, queue)[0];
  }
};

void ExpectDeadlines(ClientSession* session, const Output& blocked, int64_t default_ms) {
  std::vector<Tensor> out;
  Status s = session->Run({blocked}, &out);
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s;
  EXPECT_THAT(s.message(), HasSubstr(std::to_string(default_ms) + " ms")) << s;
  // RunOptions' own deadline wins over the session's default.
  RunOptions options;
  options.timeout_in_ms = default_ms + 77;
  s = session->Run(options, {}, {blocked}, {}, &out, nullptr);
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s;
  EXPECT_THAT(s.message(), HasSubstr(std::to_string(default_ms + 77) + " ms")) << s;
}

TEST(SessionTimeoutTest, TheDefaultStepDeadlineEndsABlockedStepInProcess) {
  BlockingGraph g("");
  SessionOptions options;
  options.default_step_timeout_in_ms = 200;
  ASSERT_OK_AND_ASSIGN(auto session, ClientSession::Create(g.root, options));
  ExpectDeadlines(session.get(), g.dequeued, 200);
}

std::unique_ptr<LocalCluster> StartWorkerCluster() {
  auto cluster = LocalCluster::Start({{"worker", 1}});
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  return cluster.ok() ? std::move(cluster).value() : nullptr;
}

TEST(SessionTimeoutTest, ARemoteSessionHonoursTheDefaultStepDeadline) {
  auto cluster = StartWorkerCluster();
  ASSERT_NE(cluster, nullptr);
  BlockingGraph g("/job:worker/task:0");
  auto y = Add(g.root.WithDevice("/job:worker/task:0"), Const(g.root, 1.0f), 2.0f);
  SessionOptions options;
  ASSERT_OK_AND_ASSIGN(options.target, cluster->Target("worker", 0));
  options.default_step_timeout_in_ms = 250;
  ASSERT_OK_AND_ASSIGN(auto session, ClientSession::Create(g.root, options));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({y}, &out));
  EXPECT_EQ(Value(out[0]), 3.0f);
  ExpectDeadlines(session.get(), g.dequeued, 250);
  // The aborted steps left the task usable.
  ASSERT_OK(session->Run({y}, &out));
  EXPECT_EQ(Value(out[0]), 3.0f);
}

TEST(SessionTimeoutTest, TheReadmeRemoteClientSnippetRunsOnAClusterTask) {
  auto cluster = StartWorkerCluster();
  ASSERT_NE(cluster, nullptr);
  ASSERT_OK_AND_ASSIGN(std::string target, cluster->Target("worker", 0));
  std::vector<Tensor> out;
  ASSERT_OK(ReadmeRemoteClientSnippet(target, &out));
  EXPECT_EQ(Value(out[0]), 7.0f);
}

TEST(SessionTimeoutTest, ARemoteSessionGivesUpConnectingAfterConnectTimeout) {
  auto cluster = StartWorkerCluster();
  ASSERT_NE(cluster, nullptr);
  Scope root = Scope::NewRootScope();
  Const(root, 1.0f);
  SessionOptions options;
  ASSERT_OK_AND_ASSIGN(options.target, cluster->Target("worker", 0));
  ASSERT_OK(cluster->StopTask("worker", 0));  // its port now refuses connections
  options.connect_timeout_in_ms = 300;
  const auto start = std::chrono::steady_clock::now();
  auto session = ClientSession::Create(root, options);
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().code(), Code::kUnavailable) << session.status();
  EXPECT_THAT(session.status().message(), HasSubstr(options.target));
  // Refused connections are retried until the deadline: 300 ms, not the 30 s default.
  EXPECT_LT(waited, std::chrono::seconds(15));
}

}  // namespace
}  // namespace actorflow
