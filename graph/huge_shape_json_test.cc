// Graph and tensor JSON from outside with shapes no tensor can have: element or byte
// counts beyond int64, negative dims. The parsers refuse them with InvalidArgument
// naming the node (or the tensor's field) before anything is allocated.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "graph/graph_json.h"
#include "graph/tensor_json.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

std::string GraphWith(const std::string& nodes) {
  return R"({"format": "actorflow.graph/1", "nodes": [)" + nodes + "]}";
}

Status ParseGraph(const std::string& nodes) { return GraphFromJson(GraphWith(nodes)).status(); }

Status ParseTensor(const std::string& text) {
  return TensorFromJson(nlohmann::json::parse(text)).status();
}

TEST(HugeShapeJsonTest, TensorWhoseBytesOverflowIsRefusedBeforeAllocating) {
  // 2^61 elements fit in an int64; 2^61 float64 values (2^64 bytes) do not.
  Status s = ParseTensor(R"({"dtype": "float64", "shape": [2305843009213693952], "data": []})");
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("bytes of float64")) << s;
}

TEST(HugeShapeJsonTest, TensorWithHugeDimsAndAZeroDimIsEmptyNotAnError) {
  auto t = TensorFromJson(nlohmann::json::parse(
      R"({"dtype": "float32", "shape": [4611686018427387904, 4, 0], "data": []})"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->NumElements(), 0);
}

TEST(HugeShapeJsonTest, TensorWithANegativeDimIsRefused) {
  Status s = ParseTensor(R"({"dtype": "float32", "shape": [2, -2], "data": []})");
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("shape dimension 1")) << s;
}

TEST(HugeShapeJsonTest, PlaceholderShapeAttrThatOverflowsNamesTheNode) {
  Status s = ParseGraph(R"({"name": "p", "op": "Placeholder",
                            "attrs": {"dtype": "float32", "shape": [4294967296, 4294967296]}})");
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("node 'p'")) << s;
  EXPECT_THAT(s.message(), HasSubstr("more elements than an int64 can count")) << s;
}

TEST(HugeShapeJsonTest, PlaceholderShapeAttrWithANegativeDimNamesTheNode) {
  Status s = ParseGraph(R"({"name": "p", "op": "Placeholder",
                            "attrs": {"dtype": "float32", "shape": [-5, 2]}})");
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("node 'p'")) << s;
  EXPECT_THAT(s.message(), HasSubstr("-5")) << s;
}

TEST(HugeShapeJsonTest, ReshapeOfASmallConstToAnOverflowingShapeThenSliceNamesTheReshape) {
  // (2^62 + 1) * 4 wraps around to 4, the element count of x.
  Status s = ParseGraph(R"(
    {"name": "x", "op": "Const",
     "attrs": {"value": {"dtype": "float32", "shape": [4], "data": [1, 2, 3, 4]}}},
    {"name": "shape", "op": "Const",
     "attrs": {"value": {"dtype": "int64", "shape": [2], "data": [4611686018427387905, 4]}}},
    {"name": "r", "op": "Reshape", "inputs": ["x", "shape"]},
    {"name": "s", "op": "Slice", "inputs": ["r"],
     "attrs": {"begin": [4611686018427387904, 0], "size": [1, 4]}})");
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("node 'r'")) << s;
}

TEST(HugeShapeJsonTest, BroadcastToAnOverflowingShapeNamesTheNode) {
  Status s = ParseGraph(R"(
    {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [4294967296, 1]}},
    {"name": "y", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [1, 4294967296]}},
    {"name": "z", "op": "Mul", "inputs": ["x", "y"]})");
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("node 'z'")) << s;
}

}  // namespace
}  // namespace actorflow
