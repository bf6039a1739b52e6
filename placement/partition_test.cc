#include "placement/partition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "graph/graph.h"
#include "graph/prune.h"
#include "graph/tensor.h"
#include "placement/placer.h"

namespace actorflow {
namespace {

const char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
const char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";

NodeDef Def(std::string name, std::string op, std::vector<std::string> inputs = {},
            AttrMap attrs = {}, std::string device = "") {
  return NodeDef{std::move(name), std::move(op), std::move(inputs), std::move(attrs),
                 std::move(device)};
}

// A placed and partitioned step of `defs` on CPU:0 (default) and CPU:1.
struct Step {
  std::unique_ptr<Graph> graph;
  std::vector<DevicePartition> partitions;

  const DevicePartition& On(const std::string& device) const {
    for (const DevicePartition& p : partitions) {
      if (p.device == device) return p;
    }
    ADD_FAILURE() << "no partition for " << device;
    return partitions.front();
  }
};

Step PartitionStep(const std::vector<NodeDef>& defs, const std::vector<std::string>& feeds,
                   const std::vector<std::string>& fetches,
                   const std::vector<std::string>& targets) {
  Step step;
  auto graph = Graph::FromNodeDefs(defs);
  EXPECT_TRUE(graph.ok()) << graph.status();
  step.graph = std::move(graph).value();
  auto sig = ResolveRunSignature(*step.graph, feeds, fetches, targets);
  EXPECT_TRUE(sig.ok()) << sig.status();
  auto nodes = PruneForRun(*step.graph, *sig);
  EXPECT_TRUE(nodes.ok()) << nodes.status();
  PlacerOptions options;
  options.devices = {{kCpu0, "CPU"}, {kCpu1, "CPU"}};
  options.default_device = kCpu0;
  auto placement = PlaceNodes(*step.graph, *nodes, options);
  EXPECT_TRUE(placement.ok()) << placement.status();
  auto partitions =
      Partition(*step.graph, *nodes, *placement, sig->feeds, sig->fetches, sig->targets);
  EXPECT_TRUE(partitions.ok()) << partitions.status();
  if (partitions.ok()) step.partitions = std::move(partitions).value();
  return step;
}

std::vector<const Node*> NodesWithOp(const Graph& g, const std::string& op) {
  std::vector<const Node*> out;
  for (int i = 0; i < g.num_nodes(); ++i) {
    if (g.node(i)->op() == op) out.push_back(g.node(i));
  }
  return out;
}

const Node* WithTensorName(const Graph& g, const std::string& op, const std::string& tensor) {
  const Node* found = nullptr;
  for (const Node* n : NodesWithOp(g, op)) {
    if (n->attr<std::string>("tensor_name") != tensor) continue;
    EXPECT_EQ(found, nullptr) << "two " << op << " nodes carry " << tensor;
    found = n;
  }
  EXPECT_NE(found, nullptr) << "no " << op << " carries " << tensor;
  return found;
}

using ::testing::Contains;
using ::testing::Not;

Tensor Floats(std::vector<float> values) { return Tensor::FromVector(values); }

// x (fed) and a on CPU:0; b = x + a on CPU:0; c = b * b, d = Identity(b) and
// e = x + c on CPU:1; n (NoOp on CPU:0) runs after c.
std::vector<NodeDef> TwoDeviceGraph() {
  return {
      Def("x", "Placeholder", {}, {{"dtype", DType::kFloat32}, {"shape", Shape{2}}}),
      Def("a", "Const", {}, {{"value", Floats({10, 20})}}),
      Def("b", "Add", {"x", "a"}),
      Def("c", "Mul", {"b", "b"}, {}, "/cpu:1"),
      Def("d", "Identity", {"b"}, {}, "/cpu:1"),
      Def("e", "Add", {"x", "c"}, {}, "/cpu:1"),
      Def("n", "NoOp", {"^c"}),
  };
}

Step TwoDeviceStep() { return PartitionStep(TwoDeviceGraph(), {"x"}, {"e", "b", "d", "x"}, {"n"}); }

TEST(PartitionTest, ASplitGraphHasOnePartitionPerDeviceInNameOrder) {
  Step step = TwoDeviceStep();
  ASSERT_EQ(step.partitions.size(), 2u);
  EXPECT_EQ(step.partitions[0].device, kCpu0);
  EXPECT_EQ(step.partitions[1].device, kCpu1);
  const Graph& g0 = *step.partitions[0].graph;
  const Graph& g1 = *step.partitions[1].graph;
  for (const char* name : {"a", "b", "n"}) {
    ASSERT_NE(g0.FindNode(name), nullptr) << name;
    EXPECT_EQ(g0.FindNode(name)->requested_device(), kCpu0);
    EXPECT_EQ(g1.FindNode(name), nullptr) << name;
  }
  for (const char* name : {"c", "d", "e"}) {
    ASSERT_NE(g1.FindNode(name), nullptr) << name;
    EXPECT_EQ(g1.FindNode(name)->requested_device(), kCpu1);
    EXPECT_EQ(g0.FindNode(name), nullptr) << name;
  }
}

TEST(PartitionTest, ATensorCrossesOnceToADeviceWhateverItsConsumersThere) {
  Step step = TwoDeviceStep();
  ASSERT_EQ(step.partitions.size(), 2u);
  const Graph& g0 = *step.On(kCpu0).graph;
  const Graph& g1 = *step.On(kCpu1).graph;
  const Node* send = WithTensorName(g0, "_Send", "b:0");
  const Node* recv = WithTensorName(g1, "_Recv", "b:0");
  ASSERT_NE(send, nullptr);
  ASSERT_NE(recv, nullptr);
  EXPECT_EQ(send->input(0).node->name(), "b");
  EXPECT_EQ(send->attr<std::string>("send_device"), kCpu0);
  EXPECT_EQ(send->attr<std::string>("recv_device"), kCpu1);
  EXPECT_EQ(recv->attr<std::string>("send_device"), kCpu0);
  EXPECT_EQ(recv->attr<std::string>("recv_device"), kCpu1);
  EXPECT_EQ(recv->attr<DType>("dtype"), DType::kFloat32);
  EXPECT_EQ(recv->attr<Shape>("shape"), Shape{2});
  EXPECT_EQ(recv->output_shape(0), Shape{2});
  // c's two inputs and d's input all read the one Recv.
  const Node* c = g1.FindNode("c");
  EXPECT_EQ(c->input(0).node, recv);
  EXPECT_EQ(c->input(1).node, recv);
  EXPECT_EQ(g1.FindNode("d")->input(0).node, recv);
  // Data pairs: b:0 only; the other pair is the control edge.
  EXPECT_EQ(NodesWithOp(g0, "_Send").size(), 1u);
  EXPECT_EQ(NodesWithOp(g1, "_Recv").size(), 1u);
  for (const Node* n : {send, recv}) {
    EXPECT_EQ(n->name().find(':'), std::string::npos) << n->name();
  }
  EXPECT_EQ(send->name(), "_send/b_0/to_job_localhost_replica_0_task_0_device_CPU_1");
}

TEST(PartitionTest, AControlEdgeAcrossDevicesBecomesADummyTensorPair) {
  Step step = TwoDeviceStep();
  ASSERT_EQ(step.partitions.size(), 2u);
  const Graph& g0 = *step.On(kCpu0).graph;
  const Graph& g1 = *step.On(kCpu1).graph;
  const Node* send = WithTensorName(g1, "_Send", "^c");
  const Node* recv = WithTensorName(g0, "_Recv", "^c");
  ASSERT_NE(send, nullptr);
  ASSERT_NE(recv, nullptr);
  // The Send's dummy input runs after c.
  const Node* token = send->input(0).node;
  EXPECT_EQ(token->op(), "Const");
  ASSERT_EQ(token->control_inputs().size(), 1u);
  EXPECT_EQ(token->control_inputs()[0]->name(), "c");
  EXPECT_EQ(recv->attr<DType>("dtype"), DType::kInt32);
  EXPECT_EQ(recv->attr<std::string>("send_device"), kCpu1);
  const Node* n = g0.FindNode("n");
  ASSERT_EQ(n->control_inputs().size(), 1u);
  EXPECT_EQ(n->control_inputs()[0], recv);
}

TEST(PartitionTest, EveryPartitionConsumingAFedTensorListsTheFeed) {
  Step step = TwoDeviceStep();
  ASSERT_EQ(step.partitions.size(), 2u);
  for (const DevicePartition& p : step.partitions) {
    EXPECT_EQ(p.feeds, std::vector<std::string>{"x"}) << p.device;
    EXPECT_EQ(p.feed_inputs, std::vector<std::string>{"x"}) << p.device;
    const Node* x = p.graph->FindNode("x");
    ASSERT_NE(x, nullptr) << p.device;
    EXPECT_EQ(x->op(), "Placeholder");
    EXPECT_EQ(x->output_shape(0), Shape{2});
    // Fed tensors never cross devices.
    for (const Node* recv : NodesWithOp(*p.graph, "_Recv")) {
      EXPECT_NE(recv->attr<std::string>("tensor_name"), "x:0");
    }
  }
}

TEST(PartitionTest, FetchesGoToThePartitionThatComputesThemAndFedFetchesToNone) {
  Step step = TwoDeviceStep();
  ASSERT_EQ(step.partitions.size(), 2u);
  EXPECT_EQ(step.On(kCpu0).fetches, std::vector<std::string>{"b"});
  EXPECT_EQ(step.On(kCpu1).fetches, (std::vector<std::string>{"e", "d"}));
}

TEST(PartitionTest, TargetsAreThePlacedTargetsAndEverySend) {
  Step step = TwoDeviceStep();
  ASSERT_EQ(step.partitions.size(), 2u);
  for (const DevicePartition& p : step.partitions) {
    for (const Node* send : NodesWithOp(*p.graph, "_Send")) {
      EXPECT_THAT(p.targets, Contains(send->name())) << send->name();
    }
  }
  EXPECT_THAT(step.On(kCpu0).targets, Contains("n"));
  EXPECT_THAT(step.On(kCpu1).targets, Not(Contains("n")));
}

TEST(PartitionTest, EachPartitionPrunesToAValidStepCoveringItsNodes) {
  Step step = TwoDeviceStep();
  ASSERT_EQ(step.partitions.size(), 2u);
  int original_nodes = 0;
  for (const DevicePartition& p : step.partitions) {
    auto sig = ResolveRunSignature(*p.graph, p.feed_inputs, p.fetches, p.targets);
    ASSERT_TRUE(sig.ok()) << p.device << ": " << sig.status();
    auto nodes = PruneForRun(*p.graph, *sig);
    ASSERT_TRUE(nodes.ok()) << p.device << ": " << nodes.status();
    // Everything but the fed stand-in runs.
    EXPECT_EQ(static_cast<int>(nodes->size()), p.graph->num_nodes() - 1) << p.device;
    for (const Node* n : *nodes) {
      if (step.graph->FindNode(n->name()) != nullptr) ++original_nodes;
    }
  }
  EXPECT_EQ(original_nodes, 6);  // a b c d e n: each runs in exactly one partition
}

TEST(PartitionTest, AFedOutputOtherThanTheFirstGetsANamedStandIn) {
  // s has two outputs; s:1 is fed and consumed on CPU:1, while s itself is not run.
  std::vector<NodeDef> defs = {
      Def("logits", "Const", {}, {{"value", Tensor::FromVector<float>({1, 2}, Shape{1, 2})}}),
      Def("labels", "Const", {}, {{"value", Tensor::FromVector<float>({0, 1}, Shape{1, 2})}}),
      Def("s", "SoftmaxCrossEntropyWithLogits", {"logits", "labels"}),
      Def("y", "Identity", {"s:1"}, {}, "/cpu:1"),
  };
  Step step = PartitionStep(defs, {"s:1"}, {"y"}, {});
  ASSERT_EQ(step.partitions.size(), 1u);
  const DevicePartition& p = step.partitions[0];
  EXPECT_EQ(p.device, kCpu1);
  EXPECT_EQ(p.feeds, std::vector<std::string>{"s:1"});
  EXPECT_EQ(p.feed_inputs, std::vector<std::string>{"_feed/s_1"});
  EXPECT_EQ(p.graph->FindNode("y")->input(0).node->name(), "_feed/s_1");
  EXPECT_EQ(p.graph->FindNode("s"), nullptr);
}

TEST(PartitionTest, AnAssignOutsideItsVariablesStepGetsACopyOfTheVariable) {
  std::vector<NodeDef> defs = {
      Def("v", "Variable", {}, {{"dtype", DType::kFloat32}, {"shape", Shape{2}}}, "/cpu:1"),
      Def("init", "Const", {}, {{"value", Floats({1, 2})}}),
      Def("assign", "Assign", {"v", "init"}),
  };
  Step step = PartitionStep(defs, {}, {}, {"assign"});
  ASSERT_EQ(step.partitions.size(), 2u);
  const Graph& g1 = *step.On(kCpu1).graph;
  ASSERT_NE(g1.FindNode("v"), nullptr);
  EXPECT_EQ(g1.FindNode("v")->op(), "Variable");
  EXPECT_EQ(g1.FindNode("assign")->input(0).node, g1.FindNode("v"));
  EXPECT_EQ(g1.FindNode("assign")->input(1).node->op(), "_Recv");
}

TEST(PartitionTest, ANodeWithoutPlacementIsAnError) {
  auto graph = Graph::FromNodeDefs(TwoDeviceGraph());
  ASSERT_TRUE(graph.ok());
  const Graph& g = **graph;
  auto result = Partition(g, {g.FindNode("a")}, {}, {}, {}, {});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("node 'a'"), std::string::npos) << result.status();
}

TEST(PartitionTest, AStepThatIsNotClosedIsAnError) {
  auto graph = Graph::FromNodeDefs(TwoDeviceGraph());
  ASSERT_TRUE(graph.ok());
  const Graph& g = **graph;
  std::map<int, Placement> placement = {{g.FindNode("b")->id(), Placement{kCpu0, "default"}}};
  auto result = Partition(g, {g.FindNode("b")}, placement, {}, {}, {g.FindNode("b")});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("'x'"), std::string::npos) << result.status();
}

}  // namespace
}  // namespace actorflow
