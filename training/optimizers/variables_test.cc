// CreateVariable, GlobalVariablesInitializer, local variables and the global step: the
// nodes they add, the collections they fill, where they are placed, and what running
// the initializers does.

#include "training/optimizers/variables.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "graph/ops.h"
#include "kernels/direct_session.h"
#include "placement/replica_device_setter.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

using Names = std::vector<std::string>;

TEST(CreateVariableTest, AddsAVariableWithTheInitialValuesDTypeAndShapeAndItsInitializer) {
  Scope root = Scope::NewRootScope();
  auto w = CreateVariable(root, "w", Tensor::FromVector<double>({1, 2, 3, 4, 5, 6}, {2, 3}));
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->node->name(), "w");
  EXPECT_EQ(w->node->op(), "Variable");
  EXPECT_EQ(w->dtype(), DType::kFloat64);
  EXPECT_EQ(w->shape(), (Shape{2, 3}));
  const Node* assign = root.graph()->FindNode("w/Assign");
  ASSERT_NE(assign, nullptr);
  EXPECT_EQ(assign->op(), "Assign");
  EXPECT_EQ(assign->input(0).node, w->node);
}

TEST(CreateVariableTest, RecordsTheVariableAndItsInitializerInTheCollections) {
  Scope root = Scope::NewRootScope();
  ASSERT_TRUE(CreateVariable(root, "a", 1.0f).ok());
  ASSERT_TRUE(CreateVariable(root, "b", 2.0f, /*trainable=*/false).ok());
  const Graph& g = *root.graph();
  EXPECT_EQ(g.GetCollection(kVariablesCollection), (Names{"a", "b"}));
  EXPECT_EQ(g.GetCollection(kTrainableVariablesCollection), (Names{"a"}));
  EXPECT_EQ(g.GetCollection(kInitializersCollection), (Names{"a/Assign", "b/Assign"}));
}

TEST(CreateVariableTest, NamesFollowTheScopesNameScope) {
  Scope root = Scope::NewRootScope();
  auto w = CreateVariable(root.NewSubScope("layer1"), "w", 0.5f);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->node->name(), "layer1/w");
  EXPECT_NE(root.graph()->FindNode("layer1/w/Assign"), nullptr);
  EXPECT_EQ(root.graph()->GetCollection(kVariablesCollection), (Names{"layer1/w"}));
}

TEST(CreateVariableTest, AnInitialValueWithoutAFullyDefinedShapeIsRejectedNamingTheVariable) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{-1, 3});
  auto w = CreateVariable(root, "w", x);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(w.status().message(), HasSubstr("'w'")) << w.status();
  EXPECT_THAT(w.status().message(), HasSubstr("[?,3]")) << w.status();
  EXPECT_EQ(root.graph()->FindNode("w"), nullptr);
  EXPECT_TRUE(root.graph()->GetCollection(kVariablesCollection).empty());
}

TEST(CreateVariableTest, ADuplicateNameIsAnError) {
  Scope root = Scope::NewRootScope();
  ASSERT_TRUE(CreateVariable(root, "w", 1.0f).ok());
  auto again = CreateVariable(root, "w", 2.0f);
  ASSERT_FALSE(again.ok());
  EXPECT_THAT(again.status().message(), HasSubstr("'w'")) << again.status();
}

TEST(CreateVariableTest, AFailedScopeIsReported) {
  Scope root = Scope::NewRootScope();
  root.UpdateStatus(InvalidArgument("earlier failure"));
  auto w = CreateVariable(root, "w", 1.0f);
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("earlier failure"));
}

TEST(GlobalVariablesInitializerTest, RunningItInitializesEveryVariable) {
  Scope root = Scope::NewRootScope();
  ASSERT_TRUE(CreateVariable(root, "a", Tensor::FromVector<float>({1, 2})).ok());
  ASSERT_TRUE(CreateVariable(root, "b", int32_t{7}, /*trainable=*/false).ok());
  ASSERT_TRUE(CreateVariable(root, "noise",
                             TruncatedNormal(root, Shape{100}, DType::kFloat32, /*seed=*/3,
                                             /*mean=*/5.0, /*stddev=*/0.5))
                  .ok());
  auto init = GlobalVariablesInitializer(root.WithOpName("init"));
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(init.node->name(), "init");
  EXPECT_EQ(init.node->control_inputs().size(), 3u);

  auto session = NewDirectSession(root.graph()).value();
  std::vector<Tensor> out;
  Status before = session->Run({}, {"a"}, {}, &out);
  EXPECT_EQ(before.code(), Code::kFailedPrecondition) << before;

  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  ASSERT_TRUE(session->Run({}, {"a", "b", "noise"}, {}, &out).ok());
  EXPECT_TRUE(TensorsEqual(out[0], Tensor::FromVector<float>({1, 2})));
  EXPECT_EQ(out[1].data<int32_t>()[0], 7);
  ASSERT_EQ(out[2].NumElements(), 100);
  for (int64_t i = 0; i < 100; ++i) {
    EXPECT_LE(std::fabs(out[2].data<float>()[i] - 5.0f), 1.0f + 1e-5f) << "element " << i;
  }
}

TEST(GlobalVariablesInitializerTest, WithNoVariablesItIsANoOpThatRuns) {
  Scope root = Scope::NewRootScope();
  auto init = GlobalVariablesInitializer(root.WithOpName("init"));
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(init.node->op(), "NoOp");
  auto session = NewDirectSession(root.graph()).value();
  EXPECT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
}

TEST(GlobalStepTest, IsANonTrainableInt64ScalarStartingAtZero) {
  Scope root = Scope::NewRootScope();
  auto step = CreateGlobalStep(root);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(step->node->name(), "global_step");
  EXPECT_EQ(step->dtype(), DType::kInt64);
  EXPECT_EQ(step->shape(), Shape{});
  const Graph& g = *root.graph();
  EXPECT_EQ(g.GetCollection(kGlobalStepCollection), (Names{"global_step"}));
  EXPECT_EQ(g.GetCollection(kVariablesCollection), (Names{"global_step"}));
  EXPECT_TRUE(g.GetCollection(kTrainableVariablesCollection).empty());
  auto found = GetGlobalStep(g);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->node, step->node);

  GlobalVariablesInitializer(root.WithOpName("init"));
  auto session = NewDirectSession(root.graph()).value();
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  ASSERT_TRUE(session->Run({}, {"global_step"}, {}, &out).ok());
  EXPECT_EQ(out[0].data<int64_t>()[0], 0);
}

TEST(GlobalStepTest, ASecondGlobalStepIsAlreadyExists) {
  Scope root = Scope::NewRootScope();
  ASSERT_TRUE(CreateGlobalStep(root).ok());
  auto again = CreateGlobalStep(root);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), Code::kAlreadyExists);
  EXPECT_THAT(again.status().message(), HasSubstr("global_step"));
}

TEST(GlobalStepTest, AGraphWithoutOneHasNone) {
  Graph g;
  EXPECT_EQ(GetGlobalStep(g).status().code(), Code::kNotFound);
}

// --- Local variables ------------------------------------------------------------------

TEST(LocalVariableTest, IsRecordedOnlyInTheLocalCollections) {
  Scope root = Scope::NewRootScope();
  ASSERT_TRUE(CreateVariable(root, "w", 1.0f).ok());
  auto count = CreateLocalVariable(root, "count", 0.0f);
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(count->node->op(), "Variable");
  const Graph& g = *root.graph();
  EXPECT_EQ(g.GetCollection(kLocalVariablesCollection), (Names{"count"}));
  EXPECT_EQ(g.GetCollection(kLocalInitializersCollection), (Names{"count/Assign"}));
  EXPECT_EQ(g.GetCollection(kVariablesCollection), (Names{"w"}));
  EXPECT_EQ(g.GetCollection(kTrainableVariablesCollection), (Names{"w"}));
  EXPECT_EQ(g.GetCollection(kInitializersCollection), (Names{"w/Assign"}));
}

TEST(LocalVariableTest, EachInitializerCoversOnlyItsOwnKind) {
  Scope root = Scope::NewRootScope();
  ASSERT_TRUE(CreateVariable(root, "w", Tensor::FromVector<float>({1, 2})).ok());
  ASSERT_TRUE(CreateLocalVariable(root, "count", Tensor::Scalar<int64_t>(7)).ok());
  GlobalVariablesInitializer(root.WithOpName("init"));
  LocalVariablesInitializer(root.WithOpName("local_init"));
  IsVariableInitialized(root.WithOpName("w_ready"), root.graph()->FindNode("w"));
  IsVariableInitialized(root.WithOpName("count_ready"), root.graph()->FindNode("count"));
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = NewDirectSession(root.graph()).value();
  std::vector<Tensor> ready;
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  ASSERT_TRUE(session->Run({}, {"w_ready", "count_ready"}, {}, &ready).ok());
  EXPECT_TRUE(ready[0].data<bool>()[0]);
  EXPECT_FALSE(ready[1].data<bool>()[0]) << "the global initializer set a local variable";
  ASSERT_TRUE(session->Run({}, {}, {"local_init"}, nullptr).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {"count"}, {}, &out).ok());
  EXPECT_EQ(out[0].data<int64_t>()[0], 7);
}

TEST(LocalVariableTest, WithoutLocalVariablesTheInitializerIsANoOpWithoutInputs) {
  Scope root = Scope::NewRootScope();
  ASSERT_TRUE(CreateVariable(root, "w", 1.0f).ok());
  Output init = LocalVariablesInitializer(root.WithOpName("local_init"));
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(init.node->op(), "NoOp");
  EXPECT_EQ(init.node->num_inputs(), 0);
  EXPECT_TRUE(init.node->control_inputs().empty());
  auto session = NewDirectSession(root.graph()).value();
  EXPECT_TRUE(session->Run({}, {}, {"local_init"}, nullptr).ok());
}

TEST(LocalVariableTest, KeepsTheScopesDevice) {
  Scope root = Scope::NewRootScope();
  auto count = CreateLocalVariable(root.WithDevice("/job:worker/task:1"), "count", 0.0f);
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(count->node->requested_device(), "/job:worker/task:1");
  EXPECT_EQ(root.graph()->FindNode("count/Assign")->requested_device(), "/job:worker/task:1");
}

// Under a replica device setter, the scope's explicit worker device wins over the ps
// placement, and the local variable takes no turn of the round robin.
TEST(LocalVariableTest, UnderAReplicaDeviceSetterTheExplicitWorkerDeviceWins) {
  ReplicaDeviceSetterOptions options;
  options.ps_tasks = 2;
  options.worker_device = "/job:worker/task:1";
  auto setter = ReplicaDeviceSetter(options);
  ASSERT_TRUE(setter.ok()) << setter.status();
  Scope root = Scope::NewRootScope();
  Scope model = root.WithDeviceFunction(*setter);
  ASSERT_TRUE(CreateVariable(model, "a", 1.0f).ok());
  auto count = CreateLocalVariable(model.WithDevice("/job:worker/task:1"), "count", 0.0f);
  ASSERT_TRUE(count.ok()) << count.status();
  ASSERT_TRUE(CreateVariable(model, "b", 1.0f).ok());
  // No explicit device: a Variable like any other, on a ps task (documented).
  ASSERT_TRUE(CreateLocalVariable(model, "shared_count", 0.0f).ok());
  const Graph& g = *root.graph();
  EXPECT_EQ(g.FindNode("a")->requested_device(), "/job:ps/task:0");
  EXPECT_EQ(g.FindNode("count")->requested_device(), "/job:worker/task:1");
  EXPECT_EQ(g.FindNode("count/Assign")->requested_device(), "/job:worker/task:1");
  EXPECT_EQ(g.FindNode("count/Const")->requested_device(), "/job:worker/task:1");
  EXPECT_EQ(g.FindNode("b")->requested_device(), "/job:ps/task:1");
  EXPECT_EQ(g.FindNode("shared_count")->requested_device(), "/job:ps/task:0");
}

}  // namespace
}  // namespace actorflow
