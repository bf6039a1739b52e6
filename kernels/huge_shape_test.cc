// Shapes whose element or byte count does not fit in int64, arriving from outside
// (a shape attr, a Const shape, a fed shape tensor, empty tensors with huge other
// dims): every op family refuses them with InvalidArgument naming the node, when the
// graph is built or when it runs, instead of allocating a wrapped-around size and
// reading or writing past it. Runs through the DirectSession.
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "graph/status_testing.h"
#include "gtest/gtest.h"
#include "kernels/direct_session.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
// (2^62 + 1) * 4 wraps around to 4 in int64 arithmetic: the element count of the
// small tensor below, so an unchecked product would let the Reshape through.
constexpr int64_t kWrapsToFour = (int64_t{1} << 62) + 1;

// Runs `fetch` with `feeds`; the error it must end in.
Status RunExpectingError(Scope& root, const FeedList& feeds, const std::string& fetch) {
  EXPECT_TRUE(root.ok()) << root.status();
  auto session = NewDirectSession(root.graph());
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return session.status();
  std::vector<Tensor> out;
  Status s = (*session)->Run(feeds, {fetch}, {}, &out);
  EXPECT_FALSE(s.ok()) << "fetched " << (out.empty() ? std::string("nothing") : out[0].DebugString());
  return s;
}

// --- Array ops -------------------------------------------------------------------

TEST(HugeShapeTest, ReshapeToAnOverflowingConstShapeThenSliceIsRefusedAtBuild) {
  Scope root = Scope::NewRootScope();
  auto x = Const(root.WithOpName("x"), {1.0f, 2.0f, 3.0f, 4.0f});
  auto shape = Const(root.WithOpName("shape"), Tensor::FromVector<int64_t>({kWrapsToFour, 4}));
  auto reshaped = Reshape(root.WithOpName("reshape"), x, shape);
  Slice(root.WithOpName("slice"), reshaped, {kWrapsToFour - 1, 0}, {1, 4});
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument) << root.status();
  EXPECT_THAT(root.status().message(), HasSubstr("node 'reshape'")) << root.status();
  EXPECT_THAT(root.status().message(), HasSubstr("more elements than an int64 can count"));
}

TEST(HugeShapeTest, ReshapeToAnOverflowingFedShapeThenSliceIsRefusedAtRun) {
  Scope root = Scope::NewRootScope();
  auto x = Const(root.WithOpName("x"), {1.0f, 2.0f, 3.0f, 4.0f});
  auto shape = Placeholder(root.WithOpName("shape"), DType::kInt64, Shape{2});
  auto reshaped = Reshape(root.WithOpName("reshape"), x, shape);
  Slice(root.WithOpName("slice"), reshaped, {kWrapsToFour - 1, 0}, {1, 4});
  Status s = RunExpectingError(
      root, {{"shape", Tensor::FromVector<int64_t>({kWrapsToFour, 4})}}, "slice");
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("reshape")) << s;
  EXPECT_THAT(s.message(), HasSubstr("more elements than an int64 can count")) << s;
}

TEST(HugeShapeTest, SliceWhoseBeginPlusSizeOverflowsIsOutOfBounds) {
  Scope root = Scope::NewRootScope();
  // bool: kMax - 1 elements are kMax - 1 bytes, a shape the graph accepts; only the
  // kernel, seeing x's 4 elements, can tell that 2 + (kMax - 1) runs past them.
  auto x = Placeholder(root.WithOpName("x"), DType::kBool);
  Slice(root.WithOpName("slice"), x, {2}, {kMax - 1});
  Tensor four(DType::kBool, Shape{4});
  Status s = RunExpectingError(root, {{"x", four}}, "slice");
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("slice")) << s;
  EXPECT_THAT(s.message(), HasSubstr("out of bounds")) << s;
}

TEST(HugeShapeTest, FillOfAnOverflowingShapeIsRefusedAtBuild) {
  Scope root = Scope::NewRootScope();
  Fill(root.WithOpName("fill"), Shape{int64_t{1} << 40, int64_t{1} << 40}, 1.0f);
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument) << root.status();
  EXPECT_THAT(root.status().message(), HasSubstr("node 'fill'")) << root.status();
}

TEST(HugeShapeTest, PlaceholderShapeWithANegativeDimIsRefused) {
  Scope root = Scope::NewRootScope();
  Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{-3, 2});
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument) << root.status();
  EXPECT_THAT(root.status().message(), HasSubstr("node 'x'")) << root.status();
  EXPECT_THAT(root.status().message(), HasSubstr("negative dimension -3")) << root.status();
}

TEST(HugeShapeTest, ConcatOfEmptyTensorsWhoseAxisDimsOverflowIsRefusedAtRun) {
  Scope root = Scope::NewRootScope();
  auto a = Placeholder(root.WithOpName("a"), DType::kFloat32);
  auto b = Placeholder(root.WithOpName("b"), DType::kFloat32);
  ConcatV2(root.WithOpName("concat"), {a, b}, 1);
  const Tensor empty(DType::kFloat32, Shape{0, int64_t{1} << 62});  // no elements
  Status s = RunExpectingError(root, {{"a", empty}, {"b", empty}}, "concat");
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("concat")) << s;
}

// --- Element-wise ops and broadcasting -------------------------------------------

TEST(HugeShapeTest, BroadcastToAnOverflowingShapeIsRefusedAtBuild) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{int64_t{1} << 32, 1});
  auto y = Placeholder(root.WithOpName("y"), DType::kFloat32, Shape{1, int64_t{1} << 32});
  Add(root.WithOpName("add"), x, y);
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument) << root.status();
  EXPECT_THAT(root.status().message(), HasSubstr("node 'add'")) << root.status();
}

// --- Reductions ------------------------------------------------------------------

TEST(HugeShapeTest, ReducingAwayTheZeroDimOfAnEmptyTensorIsRefusedAtRun) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32);
  Sum(root.WithOpName("sum"), x, {2});
  // [2^40, 2^40, 0] holds no element; without its 0 it would hold 2^80.
  const Tensor empty(DType::kFloat32, Shape{int64_t{1} << 40, int64_t{1} << 40, 0});
  Status s = RunExpectingError(root, {{"x", empty}}, "sum");
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("sum")) << s;
  EXPECT_THAT(s.message(), HasSubstr("more elements than an int64 can count")) << s;
}

TEST(HugeShapeTest, ReductionWithAKnownOverflowingOutputIsRefusedAtBuild) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32,
                       Shape{int64_t{1} << 40, int64_t{1} << 40, 0});
  Sum(root.WithOpName("sum"), x, {2});
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument) << root.status();
  EXPECT_THAT(root.status().message(), HasSubstr("node 'sum'")) << root.status();
}

// --- Neural-network ops: convolution and pooling ---------------------------------

TEST(HugeShapeTest, ConvOfAnEmptyInputAndFilterWithHugeDimsIsRefusedAtRun) {
  Scope root = Scope::NewRootScope();
  auto input = Placeholder(root.WithOpName("input"), DType::kFloat32);
  auto filter = Placeholder(root.WithOpName("filter"), DType::kFloat32);
  Conv2D(root.WithOpName("conv"), input, filter, {1, 1, 1, 1}, "SAME");
  // Output [2^21, 2^21, 1, 2^22]: 2^64 elements.
  const Tensor x(DType::kFloat32, Shape{int64_t{1} << 21, int64_t{1} << 21, 1, 0});
  const Tensor f(DType::kFloat32, Shape{1, 1, 0, int64_t{1} << 22});
  Status s = RunExpectingError(root, {{"input", x}, {"filter", f}}, "conv");
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("conv")) << s;
}

TEST(HugeShapeTest, AvgPoolGradToAnOverflowingFedShapeIsRefusedAtRun) {
  Scope root = Scope::NewRootScope();
  auto sizes = Placeholder(root.WithOpName("sizes"), DType::kInt64, Shape{4});
  auto grad = Placeholder(root.WithOpName("grad"), DType::kFloat32);
  AvgPoolGrad(root.WithOpName("pool_grad"), sizes, grad, {1, 1, 1, 1}, {1, 1, 1, 1}, "VALID");
  const int64_t huge = int64_t{1} << 20;
  Status s = RunExpectingError(root,
                               {{"sizes", Tensor::FromVector<int64_t>({huge, huge, huge, huge})},
                                {"grad", Tensor(DType::kFloat32, Shape{1, 1, 1, 1})}},
                               "pool_grad");
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("pool_grad")) << s;
  EXPECT_THAT(s.message(), HasSubstr("more elements than an int64 can count")) << s;
}

TEST(HugeShapeTest, ConvBackpropInputToAnOverflowingConstShapeIsRefusedAtBuild) {
  Scope root = Scope::NewRootScope();
  const int64_t huge = int64_t{1} << 20;
  auto sizes = Const(root.WithOpName("sizes"), Tensor::FromVector<int64_t>({huge, huge, huge, huge}));
  auto filter = Placeholder(root.WithOpName("filter"), DType::kFloat32);
  auto dy = Placeholder(root.WithOpName("dy"), DType::kFloat32);
  Conv2DBackpropInput(root.WithOpName("conv_grad"), sizes, filter, dy, {1, 1, 1, 1}, "SAME");
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument) << root.status();
  EXPECT_THAT(root.status().message(), HasSubstr("node 'conv_grad'")) << root.status();
}

}  // namespace
}  // namespace actorflow
