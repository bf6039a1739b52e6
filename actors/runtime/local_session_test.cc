// The actor runtime on one node: placement (explicit, colocated, soft), parallel
// devices, deadlines and aborts, traces, and bad input.

#include "actors/runtime/local_session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "graph/graph_json.h"
#include "graph/ops.h"
#include "graph/scope.h"

namespace actorflow {
namespace {


std::unique_ptr<ActorSession> MakeSession(const Graph* graph, int cpus, bool soft = false) {
  SessionOptions options;
  options.device_count["CPU"] = cpus;
  options.allow_soft_placement = soft;
  auto session = NewActorSession(graph, options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(session).value() : nullptr;
}

std::string Cpu(int i) { return std::string(kLocalTask) + "/device:CPU:" + std::to_string(i); }

TEST(ActorSessionTest, GuideExampleRunsWithPiOnTheGpuSoftPlacedAndAAndBOnTheCpu) {
  Scope root = Scope::NewRootScope();
  Scope gpu = root.WithDevice("/gpu:0");
  Scope cpu = root.WithDevice("/cpu:0");
  auto pi = Variable(gpu.WithOpName("pi"), Shape{}, DType::kFloat32);
  Assign(gpu.WithOpName("pi_init"), pi, 3.14159f);
  auto a = Const(cpu.WithOpName("a"), 2.0f);
  auto b = Const(cpu.WithOpName("b"), 3.0f);
  Mul(cpu.WithOpName("c"), a, b);
  Mul(root.WithOpName("pi_c"), pi, Output(root.graph()->FindNode("c")));
  ASSERT_TRUE(root.ok()) << root.status();

  auto strict = MakeSession(root.graph(), 1, /*soft=*/false);
  Status no_gpu = strict->Run({}, {}, {"pi_init"}, nullptr);
  EXPECT_EQ(no_gpu.code(), Code::kInvalidArgument) << no_gpu;
  EXPECT_THAT(no_gpu.message(), ::testing::HasSubstr("allow_soft_placement")) << no_gpu;

  auto session = MakeSession(root.graph(), 1, /*soft=*/true);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"pi_init"}, nullptr).ok());
  ASSERT_TRUE(session->Run({}, {"c", "pi_c"}, {}, &out).ok());
  EXPECT_EQ(out[0].data<float>()[0], 6.0f);
  EXPECT_FLOAT_EQ(out[1].data<float>()[0], 3.14159f * 6.0f);
  auto explained = session->ExplainPlacement();
  ASSERT_TRUE(explained.ok()) << explained.status();
  EXPECT_THAT(*explained, ::testing::HasSubstr("pi")) << *explained;
  EXPECT_THAT(*explained, ::testing::HasSubstr("soft placement")) << *explained;
}

TEST(ActorSessionTest, Int32VariableOnAMissingGpuFailsStrictlyAndSoftPlacesOnTheCpu) {
  Scope root = Scope::NewRootScope();
  Scope gpu = root.WithDevice("/gpu:0");
  auto counter = Variable(gpu.WithOpName("counter"), Shape{}, DType::kInt32);
  Assign(gpu.WithOpName("counter_init"), counter, Const(root.WithOpName("forty_one"), 41));
  AssignAdd(gpu.WithOpName("counter_inc"), counter, Const(root.WithOpName("one"), 1));
  ASSERT_TRUE(root.ok()) << root.status();

  auto strict = MakeSession(root.graph(), 1);
  Status s = strict->Run({}, {}, {"counter_init"}, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("counter")) << s;
  EXPECT_THAT(s.message(), ::testing::HasSubstr("allow_soft_placement")) << s;

  auto soft = MakeSession(root.graph(), 1, true);
  ASSERT_TRUE(soft->Run({}, {}, {"counter_init"}, nullptr).ok());
  ASSERT_TRUE(soft->Run({}, {}, {"counter_inc"}, nullptr).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(soft->Run({}, {"counter"}, {}, &out).ok());
  EXPECT_EQ(out[0].data<int32_t>()[0], 42);
  auto explained = soft->ExplainPlacement();
  ASSERT_TRUE(explained.ok());
  EXPECT_THAT(*explained, ::testing::HasSubstr("counter")) << *explained;
  EXPECT_THAT(*explained, ::testing::HasSubstr("CPU:0")) << *explained;
  EXPECT_THAT(*explained, ::testing::HasSubstr("soft placement")) << *explained;
}

TEST(ActorSessionTest, IndependentBranchesOnTwoDevicesRunAtTheSameTime) {
  // Each branch's barrier kernel completes only while the other is inside its own
  // Compute: on one device (one thread) they could never meet.
  Scope root = Scope::NewRootScope();
  auto x0 = Const(root.WithDevice("/cpu:0").WithOpName("x0"), 1.0f);
  auto x1 = Const(root.WithDevice("/cpu:1").WithOpName("x1"), 1.0f);
  AttrMap barrier{{"barrier", AttrValue("branches")}, {"timeout_ms", AttrValue(int64_t{10000})}};
  const Node* left =
      root.WithDevice("/cpu:0").WithOpName("left").AddNode("TestBarrier", {x0}, barrier);
  const Node* right =
      root.WithDevice("/cpu:1").WithOpName("right").AddNode("TestBarrier", {x1}, barrier);
  Add(root.WithDevice("/cpu:0").WithOpName("joined"), Output(left), Output(right));
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = MakeSession(root.graph(), 2);
  RunOptions options;
  options.trace_level = RunOptions::TraceLevel::kFullTrace;
  RunMetadata meta;
  std::vector<Tensor> out;
  Status s = session->Run(options, {}, {"joined"}, {}, &out, &meta);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out[0].data<float>()[0], 2.0f);
  std::set<std::string> devices;
  for (const NodeExecStats& st : meta.step_stats) devices.insert(st.device);
  EXPECT_EQ(devices, (std::set<std::string>{Cpu(0), Cpu(1)}));
}

TEST(ActorSessionTest, BranchesOnOneDeviceCannotMeetAtABarrier) {
  // The control for the test above: the same graph on one device fails.
  Scope root = Scope::NewRootScope();
  auto x = Const(root.WithOpName("x"), 1.0f);
  AttrMap barrier{{"barrier", AttrValue("single")}, {"timeout_ms", AttrValue(int64_t{200})}};
  const Node* left = root.WithOpName("left").AddNode("TestBarrier", {x}, barrier);
  const Node* right = root.WithOpName("right").AddNode("TestBarrier", {x}, barrier);
  Add(root.WithOpName("joined"), Output(left), Output(right));
  auto session = MakeSession(root.graph(), 1);
  Status s = session->Run({}, {"joined"}, {}, nullptr);
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s;
}

TEST(ActorSessionTest, AfterADeadlineNoRecvIsPendingAndTheNextStepSucceeds) {
  // CPU:1 delays its value for 10 s; CPU:0 waits for it in a Recv. The step's
  // 100 ms deadline aborts both devices.
  Scope root = Scope::NewRootScope();
  auto x = Const(root.WithDevice("/cpu:1").WithOpName("x"), 5.0f);
  const Node* slow = root.WithDevice("/cpu:1").WithOpName("slow").AddNode(
      "TestDelay", {x}, {{"delay_ms", AttrValue(int64_t{10000})}});
  Neg(root.WithDevice("/cpu:0").WithOpName("waiting"), Output(slow));
  Neg(root.WithDevice("/cpu:0").WithOpName("quick"), x);
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = MakeSession(root.graph(), 2);
  RunOptions options;
  options.timeout_in_ms = 100;
  Status s = session->Run(options, {}, {"waiting"}, {}, nullptr, nullptr);
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s;

  auto statuses = session->DeviceStatuses();
  ASSERT_TRUE(statuses.ok()) << statuses.status();
  ASSERT_EQ(statuses->size(), 2u);
  for (const DeviceStatus& d : *statuses) {
    EXPECT_EQ(d.pending_recvs, 0) << d.device;
    EXPECT_EQ(d.inbox_tensors, 0) << d.device;
  }
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run(options, {}, {"quick"}, {}, &out, nullptr).ok());
  EXPECT_EQ(out[0].data<float>()[0], -5.0f);
}

TEST(ActorSessionTest, OperationTimeoutEndsABlockedRecvWithDeadlineExceeded) {
  Scope root = Scope::NewRootScope();
  auto x = Const(root.WithDevice("/cpu:1").WithOpName("x"), 5.0f);
  const Node* slow = root.WithDevice("/cpu:1").WithOpName("slow").AddNode(
      "TestDelay", {x}, {{"delay_ms", AttrValue(int64_t{10000})}});
  Neg(root.WithDevice("/cpu:0").WithOpName("waiting"), Output(slow));
  SessionOptions options;
  options.device_count["CPU"] = 2;
  options.operation_timeout_in_ms = 100;
  auto session = NewActorSession(root.graph(), options);
  ASSERT_TRUE(session.ok());
  Status s = (*session)->Run({}, {"waiting"}, {}, nullptr);
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s;
  EXPECT_THAT(s.message(), ::testing::HasSubstr("operation_timeout_in_ms")) << s;
}

TEST(ActorSessionTest, StepErrorsNameTheNodeAndTheDevice) {
  Scope root = Scope::NewRootScope();
  Div(root.WithDevice("/cpu:1").WithOpName("ratio"), Const(root, 1), Const(root, 0));
  auto session = MakeSession(root.graph(), 2);
  Status s = session->Run({}, {"ratio"}, {}, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("ratio")) << s;
  EXPECT_THAT(s.message(), ::testing::HasSubstr("CPU:1")) << s;
}

TEST(ActorSessionBadInputTest, UnknownDeviceListsTheAvailableOnes) {
  Scope root = Scope::NewRootScope();
  Neg(root.WithDevice("/cpu:7").WithOpName("lost"), Const(root, 1.0f));
  auto session = MakeSession(root.graph(), 2);
  Status s = session->Run({}, {"lost"}, {}, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("lost")) << s;
  EXPECT_THAT(s.message(), ::testing::HasSubstr("CPU:1")) << s;  // an available device is listed
}

TEST(ActorSessionBadInputTest, ConflictingDevicesInAColocationGroupNameBothNodes) {
  // The builder refuses the conflict when the Assign is added...
  Scope root = Scope::NewRootScope();
  auto v = Variable(root.WithDevice("/cpu:0").WithOpName("var"), Shape{}, DType::kFloat32);
  Assign(root.WithDevice("/cpu:1").WithOpName("var_init"), v, 1.0f);
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument) << root.status();
  EXPECT_THAT(root.status().message(), ::testing::HasSubstr("var_init")) << root.status();

  // ...and a graph that did not come through the builder (JSON) is refused by the
  // placer at the first Run, naming both nodes.
  auto graph = GraphFromJson(R"({"format": "actorflow.graph/1", "nodes": [
    {"name": "var", "op": "Variable", "attrs": {"dtype": "float32", "shape": []},
     "device": "/cpu:0"},
    {"name": "one", "op": "Const", "attrs": {"value": {"dtype": "float32", "shape": [],
     "data": [1]}}},
    {"name": "var_init", "op": "Assign", "inputs": ["var", "one"], "device": "/cpu:1"}]})");
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto session = MakeSession(graph->get(), 2);
  Status s = session->Run({}, {}, {"var_init"}, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), ::testing::HasSubstr("var")) << s;
  EXPECT_THAT(s.message(), ::testing::HasSubstr("var_init")) << s;
}

TEST(ActorSessionBadInputTest, RunOnAClosedSessionFails) {
  Scope root = Scope::NewRootScope();
  Const(root.WithOpName("c"), 1.0f);
  auto session = MakeSession(root.graph(), 1);
  ASSERT_TRUE(session->Close().ok());
  Status s = session->Run({}, {"c"}, {}, nullptr);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
}

TEST(ActorSessionTest, RunMetadataListsTheExecutedNodesInOrderAndStatsOnlyWhenTraced) {
  Scope root = Scope::NewRootScope();
  auto a = Const(root.WithOpName("a"), 1.0f);
  auto b = Neg(root.WithOpName("b"), a);
  Neg(root.WithOpName("c"), b);
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = MakeSession(root.graph(), 1);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {"c"}, {}, &out).ok());  // no metadata asked for
  EXPECT_EQ(out[0].data<float>()[0], 1.0f);

  RunMetadata meta;
  ASSERT_TRUE(session->Run(RunOptions(), {}, {"c"}, {}, &out, &meta).ok());
  EXPECT_EQ(meta.executed_nodes, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(meta.step_stats.empty());

  RunOptions traced;
  traced.trace_level = RunOptions::TraceLevel::kFullTrace;
  RunMetadata traced_meta;
  ASSERT_TRUE(session->Run(traced, {}, {"c"}, {}, &out, &traced_meta).ok());
  EXPECT_EQ(traced_meta.executed_nodes, (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(traced_meta.step_stats.size(), 3u);
  for (const NodeExecStats& s : traced_meta.step_stats) {
    EXPECT_EQ(s.device, Cpu(0)) << s.node_name;
    EXPECT_GE(s.start_micros, 0) << s.node_name;
    EXPECT_LE(s.start_micros, s.end_micros) << s.node_name;
  }
}

TEST(ActorSessionTest, VariablesOnAnotherDeviceAreReadThroughSendAndRecv) {
  Scope root = Scope::NewRootScope();
  auto w = Variable(root.WithDevice("/cpu:1").WithOpName("w"), Shape{2, 2}, DType::kFloat32);
  Assign(root.WithDevice("/cpu:1").WithOpName("w_init"), w,
         Tensor::FromVector<float>({1, 2, 3, 4}, Shape{2, 2}));
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{-1, 2});
  MatMul(root.WithDevice("/cpu:0").WithOpName("y"), x, w);
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = MakeSession(root.graph(), 2);
  ASSERT_TRUE(session->Run({}, {}, {"w_init"}, nullptr).ok());
  std::vector<Tensor> out;
  RunMetadata meta;
  ASSERT_TRUE(session
                  ->Run(RunOptions(), {{"x", Tensor::FromVector<float>({1, 1}, Shape{1, 2})}},
                        {"y"}, {}, &out, &meta)
                  .ok());
  EXPECT_TRUE(TensorsEqual(out[0], Tensor::FromVector<float>({4, 6}, Shape{1, 2})));
  for (const std::string& n : meta.executed_nodes) EXPECT_NE(n[0], '_') << n;
}

}  // namespace
}  // namespace actorflow
