#include "placement/graph_dot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status_testing.h"
#include "graph/tensor.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
const char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";

NodeDef Def(std::string name, std::string op, std::vector<std::string> inputs = {},
            AttrMap attrs = {}, std::string device = "") {
  return NodeDef{std::move(name), std::move(op), std::move(inputs), std::move(attrs),
                 std::move(device)};
}

AttrMap Value(float v) { return {{"value", Tensor::Scalar<float>(v)}}; }

int Count(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

std::unique_ptr<Graph> MakeGraph(const std::vector<NodeDef>& defs) {
  auto graph = Graph::FromNodeDefs(defs);
  EXPECT_OK(graph.status());
  return graph.ok() ? std::move(graph).value() : std::make_unique<Graph>();
}

// The text of `subgraph cluster_<n> { ... }` in `dot`.
std::string Cluster(const std::string& dot, int n) {
  const std::string open = "  subgraph cluster_" + std::to_string(n) + " {\n";
  const size_t begin = dot.find(open);
  if (begin == std::string::npos) return "";
  return dot.substr(begin, dot.find("\n  }\n", begin) - begin);
}

PlacerOptions TwoCpus() {
  PlacerOptions options;
  options.devices = {{kCpu0, "CPU"}, {kCpu1, "CPU"}};
  options.default_device = kCpu0;
  return options;
}

TEST(GraphDotTest, LabelsNodesWithNameOpAndInferredShapes) {
  auto graph = MakeGraph({
      Def("p", "Placeholder", {}, {{"dtype", DType::kFloat32}, {"shape", Shape{-1, 2}}}),
      Def("any", "Placeholder", {}, {{"dtype", DType::kFloat32}}),
      Def("w", "Variable", {}, {{"dtype", DType::kFloat32}, {"shape", Shape{2, 3}}}),
      Def("m", "MatMul", {"p", "w"}),
  });
  const std::string dot = GraphToDot(*graph);
  EXPECT_EQ(dot.rfind("digraph actorflow {\n", 0), 0u);
  EXPECT_EQ(dot.substr(dot.size() - 2), "}\n");
  EXPECT_THAT(dot, HasSubstr("n0 [label=\"p\\nPlaceholder\\nfloat32 [?,2]\""));
  EXPECT_THAT(dot, HasSubstr("n1 [label=\"any\\nPlaceholder\\nfloat32 <unknown>\""));
  EXPECT_THAT(dot, HasSubstr("n2 [label=\"w\\nVariable\\nfloat32 [2,3]\""));
  EXPECT_THAT(dot, HasSubstr("n3 [label=\"m\\nMatMul\\nfloat32 [?,3]\""));
  EXPECT_EQ(Count(dot, " [label=\""), 4 + 2);  // four nodes, two edges
}

TEST(GraphDotTest, DataEdgesCarryDtypeAndShapeAndControlEdgesAreDashed) {
  auto graph = MakeGraph({
      Def("w", "Variable", {}, {{"dtype", DType::kFloat32}, {"shape", Shape{2}}}),
      Def("one", "Const", {}, {{"value", Tensor::FromVector<float>({1, 1}, Shape{2})}}),
      Def("init", "Assign", {"w", "one"}),
      Def("read", "Identity", {"w", "^init"}),
  });
  const std::string dot = GraphToDot(*graph);
  EXPECT_THAT(dot, HasSubstr("n0 -> n2 [label=\"ref float32 [2]\"];"));
  EXPECT_THAT(dot, HasSubstr("n1 -> n2 [label=\"float32 [2]\"];"));
  EXPECT_THAT(dot, HasSubstr("n0 -> n3 [label=\"float32 [2]\"];"));
  EXPECT_THAT(dot, HasSubstr("n2 -> n3 [style=dashed];"));
  EXPECT_EQ(Count(dot, "style=dashed"), 1);
}

TEST(GraphDotTest, AnOutputOtherThanTheFirstIsNamedOnItsEdge) {
  auto graph = MakeGraph({
      Def("logits", "Placeholder", {}, {{"dtype", DType::kFloat32}, {"shape", Shape{4, 3}}}),
      Def("labels", "Placeholder", {}, {{"dtype", DType::kFloat32}, {"shape", Shape{4, 3}}}),
      Def("xent", "SoftmaxCrossEntropyWithLogits", {"logits", "labels"}),
      Def("grad", "Identity", {"xent:1"}),
  });
  const std::string dot = GraphToDot(*graph);
  EXPECT_THAT(dot, HasSubstr("xent\\nSoftmaxCrossEntropyWithLogits\\n0: float32 [4]\\n"
                             "1: float32 [4,3]\""));
  EXPECT_THAT(dot, HasSubstr("n2 -> n3 [label=\":1 float32 [4,3]\"];"));
}

TEST(GraphDotTest, PlacedGraphHasAClusterPerDeviceJoinedBySendRecv) {
  auto graph = MakeGraph({
      Def("a", "Const", {}, Value(2), "/device:CPU:0"),
      Def("b", "Const", {}, Value(3), "/device:CPU:1"),
      Def("sum", "Add", {"a", "b"}, {}, "/device:CPU:1"),
  });
  ASSERT_OK_AND_ASSIGN(std::vector<DevicePartition> partitions,
                       PlaceAndPartitionWholeGraph(*graph, TwoCpus()));
  const std::string dot = PartitionsToDot(partitions);
  const std::string cpu0 = Cluster(dot, 0), cpu1 = Cluster(dot, 1);
  EXPECT_EQ(Cluster(dot, 2), "");
  EXPECT_THAT(cpu0, HasSubstr("label=\"" + std::string(kCpu0) + "\";"));
  EXPECT_THAT(cpu1, HasSubstr("label=\"" + std::string(kCpu1) + "\";"));
  // a and its _Send on CPU:0; b, sum and the _Recv on CPU:1.
  EXPECT_THAT(cpu0, HasSubstr("[label=\"a\\nConst\\nfloat32 []\""));
  EXPECT_THAT(cpu0, HasSubstr("\\n_Send\""));
  EXPECT_THAT(cpu0, Not(HasSubstr("_Recv")));
  EXPECT_THAT(cpu1, HasSubstr("[label=\"b\\nConst"));
  EXPECT_THAT(cpu1, HasSubstr("[label=\"sum\\nAdd\\nfloat32 []\""));
  EXPECT_THAT(cpu1, HasSubstr("\\n_Recv\\nfloat32 []\""));
  EXPECT_THAT(cpu1, Not(HasSubstr("_Send")));
  // One bold edge from cluster 0's _Send to cluster 1's _Recv, outside both clusters.
  ASSERT_EQ(Count(dot, "style=bold"), 1) << dot;
  const size_t edge = dot.find("style=bold");
  const size_t line = dot.rfind('\n', edge) + 1;
  const std::string statement = dot.substr(line, dot.find('\n', edge) - line);
  EXPECT_THAT(statement, ::testing::MatchesRegex("  d0_n[0-9]+ -> d1_n[0-9]+ \\[label=\"a:0\".*"));
  EXPECT_GT(line, dot.find(cpu1) + cpu1.size());
}

TEST(GraphDotTest, AControlEdgeAcrossDevicesIsAPairToo) {
  auto graph = MakeGraph({
      Def("a", "Const", {}, Value(2), "/device:CPU:0"),
      Def("b", "Const", {"^a"}, Value(3), "/device:CPU:1"),
  });
  ASSERT_OK_AND_ASSIGN(std::vector<DevicePartition> partitions,
                       PlaceAndPartitionWholeGraph(*graph, TwoCpus()));
  const std::string dot = PartitionsToDot(partitions);
  EXPECT_THAT(dot, HasSubstr("[label=\"^a\", style=bold"));
  EXPECT_THAT(Cluster(dot, 1), HasSubstr("[style=dashed];"));  // _Recv -> b
}

TEST(GraphDotTest, AGraphOnOneDeviceIsOneClusterWithoutPairs) {
  auto graph = MakeGraph({
      Def("a", "Const", {}, Value(2)),
      Def("b", "Const", {}, Value(3)),
      Def("sum", "Add", {"a", "b"}),
  });
  ASSERT_OK_AND_ASSIGN(std::vector<DevicePartition> partitions,
                       PlaceAndPartitionWholeGraph(*graph, TwoCpus()));
  const std::string dot = PartitionsToDot(partitions);
  EXPECT_NE(Cluster(dot, 0), "");
  EXPECT_EQ(Cluster(dot, 1), "");
  EXPECT_EQ(Count(dot, "_Send"), 0);
  EXPECT_EQ(Count(dot, "style=bold"), 0);
}

TEST(GraphDotTest, AnUnsatisfiableDeviceNeedsSoftPlacement) {
  auto graph = MakeGraph({Def("a", "Const", {}, Value(2), "/device:CPU:7")});
  const Status status = PlaceAndPartitionWholeGraph(*graph, TwoCpus()).status();
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("'a'"));
  EXPECT_THAT(status.message(), HasSubstr("soft"));
  PlacerOptions soft = TwoCpus();
  soft.allow_soft_placement = true;
  EXPECT_OK(PlaceAndPartitionWholeGraph(*graph, soft).status());
}

TEST(GraphDotTest, QuotesAndBackslashesInLabelsAreEscaped) {
  auto graph = MakeGraph({Def("say\"hi\"\\", "Const", {}, Value(1))});
  const std::string dot = GraphToDot(*graph);
  EXPECT_THAT(dot, HasSubstr("[label=\"say\\\"hi\\\"\\\\\\nConst"));
}

}  // namespace
}  // namespace actorflow
