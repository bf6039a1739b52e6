// The replica device setter puts variables on ps tasks (round robin or by bytes) and
// the rest on the worker, keeps updates beside their variables; and the builder
// reports a device that conflicts with a colocation partner when the node is added.
#include "placement/replica_device_setter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "graph/ops.h"
#include "graph/scope.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

constexpr char kWorker[] = "/job:worker/task:1";

Scope SetterScope(int ps_tasks, PsStrategy strategy = PsStrategy::kRoundRobin) {
  ReplicaDeviceSetterOptions options;
  options.ps_tasks = ps_tasks;
  options.worker_device = kWorker;
  options.strategy = strategy;
  auto setter = ReplicaDeviceSetter(options);
  EXPECT_TRUE(setter.ok()) << setter.status();
  return Scope::NewRootScope().WithDeviceFunction(setter.ok() ? *setter : nullptr);
}

// A variable and its initializer, as training/optimizers/variables.h's CreateVariable builds them.
Output VariableWithInit(const Scope& scope, const std::string& name, const Shape& shape) {
  Output var = Variable(scope.WithOpName(name), shape, DType::kFloat32);
  Assign(scope.WithOpName(name + "/Assign"), var,
         Const(scope.NewSubScope(name), Tensor(DType::kFloat32, shape)));
  return var;
}

std::string DeviceOf(const Scope& scope, const std::string& node) {
  const Node* n = scope.graph()->FindNode(node);
  return n == nullptr ? "<no node " + node + ">" : n->requested_device();
}

TEST(ReplicaDeviceSetterTest, VariablesGoToPsTasksRoundRobinAndTheRestToTheWorker) {
  Scope root = SetterScope(3);
  Output a = VariableWithInit(root, "a", Shape{2});
  Output b = VariableWithInit(root, "b", Shape{2});
  Output c = VariableWithInit(root, "c", Shape{2});
  Output d = VariableWithInit(root, "d", Shape{2});
  Output sum = Add(root.WithOpName("sum"), a, b);
  ASSERT_TRUE(root.ok()) << root.status();

  EXPECT_EQ(DeviceOf(root, "a"), "/job:ps/task:0");
  EXPECT_EQ(DeviceOf(root, "b"), "/job:ps/task:1");
  EXPECT_EQ(DeviceOf(root, "c"), "/job:ps/task:2");
  EXPECT_EQ(DeviceOf(root, "d"), "/job:ps/task:0");
  // Initializers follow their variable; their values and the compute are the worker's.
  EXPECT_EQ(DeviceOf(root, "c/Assign"), "/job:ps/task:2");
  EXPECT_EQ(DeviceOf(root, "sum"), kWorker);
  EXPECT_EQ(DeviceOf(root, "c/Const"), kWorker);
}

TEST(ReplicaDeviceSetterTest, TheScopesOwnRequestWinsFieldByField) {
  Scope root = SetterScope(2);
  VariableWithInit(root.WithDevice("/job:ps/task:1"), "pinned", Shape{1});
  VariableWithInit(root, "next", Shape{1});  // the sequence went on: task 1
  Output x = Const(root.WithOpName("x").WithDevice("/device:GPU:0"), 1.0f);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(DeviceOf(root, "pinned"), "/job:ps/task:1");
  EXPECT_EQ(DeviceOf(root, "next"), "/job:ps/task:1");
  EXPECT_EQ(DeviceOf(root, "x"), "/job:worker/task:1/device:GPU:0");
}

TEST(ReplicaDeviceSetterTest, GreedyBytesFillsTheLightestTask) {
  Scope root = SetterScope(2, PsStrategy::kGreedyBytes);
  VariableWithInit(root, "big", Shape{100});
  VariableWithInit(root, "small1", Shape{10});
  VariableWithInit(root, "small2", Shape{10});
  VariableWithInit(root, "small3", Shape{100});
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(DeviceOf(root, "big"), "/job:ps/task:0");     // 400 bytes
  EXPECT_EQ(DeviceOf(root, "small1"), "/job:ps/task:1");  // 40
  EXPECT_EQ(DeviceOf(root, "small2"), "/job:ps/task:1");  // 80
  EXPECT_EQ(DeviceOf(root, "small3"), "/job:ps/task:1");  // 480
}

TEST(ReplicaDeviceSetterTest, FromAClusterSpecCountsItsPsTasks) {
  auto cluster = ClusterSpec::FromJson(R"({"ps": ["a:1", "b:1"], "worker": ["c:1"]})");
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto setter = ReplicaDeviceSetter(*cluster, "/job:worker/task:0");
  ASSERT_TRUE(setter.ok()) << setter.status();
  Scope root = Scope::NewRootScope().WithDeviceFunction(*setter);
  for (const char* name : {"v0", "v1", "v2"}) VariableWithInit(root, name, Shape{1});
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(DeviceOf(root, "v0"), "/job:ps/task:0");
  EXPECT_EQ(DeviceOf(root, "v1"), "/job:ps/task:1");
  EXPECT_EQ(DeviceOf(root, "v2"), "/job:ps/task:0");
}

TEST(ReplicaDeviceSetterTest, NoPsTasksPutsEverythingOnTheWorker) {
  Scope root = SetterScope(0);
  VariableWithInit(root, "v", Shape{1});
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(DeviceOf(root, "v"), kWorker);
  EXPECT_EQ(DeviceOf(root, "v/Assign"), kWorker);
}

TEST(ReplicaDeviceSetterTest, BadOptionsNameTheOption) {
  ReplicaDeviceSetterOptions options;
  options.ps_tasks = -1;
  EXPECT_THAT(ReplicaDeviceSetter(options).status().message(), HasSubstr("ps_tasks"));
  options.ps_tasks = 1;
  options.ps_device = "/job:ps/task:0";
  EXPECT_THAT(ReplicaDeviceSetter(options).status().message(), HasSubstr("names a task"));
  options.ps_device = "/job:ps";
  options.worker_device = "/job:worker/task:x";
  EXPECT_THAT(ReplicaDeviceSetter(options).status().message(), HasSubstr("worker_device"));
}

// Build-time placement conflicts (graph/scope.h) --------------------------------------

TEST(ScopePlacementConflictTest, ColocatingWithANodeOnAnotherDeviceFailsWhenTheNodeIsAdded) {
  Scope root = Scope::NewRootScope();
  Output var =
      Variable(root.WithOpName("w").WithDevice("/job:ps/task:0"), Shape{2}, DType::kFloat32);
  Output read =
      Identity(root.WithOpName("read").WithDevice("/job:worker/task:0").ColocateWith(var), var);
  EXPECT_FALSE(read.valid());
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(root.status().message(), HasSubstr("'read'"));
  EXPECT_THAT(root.status().message(), HasSubstr("/job:worker/task:0"));
  EXPECT_THAT(root.status().message(), HasSubstr("'w'"));
  EXPECT_THAT(root.status().message(), HasSubstr("/job:ps/task:0"));
  EXPECT_EQ(root.graph()->FindNode("read"), nullptr);
}

TEST(ScopePlacementConflictTest, UpdatingAVariableFromAnotherDeviceFailsWhenTheNodeIsAdded) {
  Scope root = Scope::NewRootScope();
  Output var =
      Variable(root.WithOpName("w").WithDevice("/job:ps/task:0"), Shape{2}, DType::kFloat32);
  Output one = Const(root, Tensor(DType::kFloat32, Shape{2}));
  AssignAdd(root.WithOpName("bump").WithDevice("/job:ps/task:1"), var, one);
  ASSERT_FALSE(root.ok());
  EXPECT_THAT(root.status().message(), HasSubstr("'bump' (AssignAdd) requests device "
                                                 "'/job:ps/task:1'"));
  EXPECT_THAT(root.status().message(), HasSubstr("'w' (Variable), which requests device "
                                                 "'/job:ps/task:0'"));
}

TEST(ScopePlacementConflictTest, CompatibleSpellingsOfOneDeviceAreNoConflict) {
  Scope root = Scope::NewRootScope();
  Output var =
      Variable(root.WithOpName("w").WithDevice("/job:ps/task:0"), Shape{2}, DType::kFloat32);
  Output one = Const(root, Tensor(DType::kFloat32, Shape{2}));
  AssignAdd(root.WithDevice("/job:ps/replica:0/task:0/device:CPU:0"), var, one);
  AssignAdd(root.WithDevice("/cpu:0").ColocateWith(var), var, one);
  AssignAdd(root, var, one);  // no request: the placer puts it with the variable
  EXPECT_TRUE(root.ok()) << root.status();
}

}  // namespace
}  // namespace actorflow
