#include "kernels/cpu/broadcast.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/tensor.h"
#include "kernels/kernel.h"
#include "kernels/resource.h"

namespace actorflow {
namespace cpu {
namespace {

using Kind = BroadcastPlan::Kind;

TEST(BroadcastShapeTest, AlignsTrailingDimsAndStretchesOnes) {
  auto s = BroadcastShape(Shape{4, 1, 3}, Shape{5, 1});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(*s, (Shape{4, 5, 3}));
}

TEST(BroadcastShapeTest, ClashingDimsAreInvalidArgumentNamingBothShapes) {
  auto s = BroadcastShape(Shape{2, 3}, Shape{4});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
  EXPECT_NE(s.status().message().find("[2,3]"), std::string::npos);
  EXPECT_NE(s.status().message().find("[4]"), std::string::npos);
}

TEST(PlanBroadcastTest, EqualElementOrderIsSameKindEvenAcrossRanks) {
  auto p = PlanBroadcast(Shape{2, 3}, Shape{1, 2, 3});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->kind, Kind::kSame);
  EXPECT_EQ(p->out_shape, (Shape{1, 2, 3}));
  EXPECT_EQ(p->num_elements, 6);
}

TEST(PlanBroadcastTest, EqualShapesAreSameKindWithTheirOwnShapeAndSize) {
  for (const Shape& s : {Shape{}, Shape{7}, Shape{2, 1, 3}, Shape{0, 5}}) {
    auto p = PlanBroadcast(s, s);
    ASSERT_TRUE(p.ok()) << s.ToString();
    EXPECT_EQ(p->kind, Kind::kSame) << s.ToString();
    EXPECT_EQ(p->out_shape, s);
    EXPECT_EQ(p->num_elements, *s.CheckedNumElements()) << s.ToString();
  }
  // Their element count is still checked.
  const Shape huge{int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_FALSE(PlanBroadcast(huge, huge).ok());
}

TEST(PlanBroadcastTest, SingleElementOperandIsScalarKind) {
  EXPECT_EQ(PlanBroadcast(Shape{}, Shape{2, 3})->kind, Kind::kScalarX);
  EXPECT_EQ(PlanBroadcast(Shape{1, 1}, Shape{2, 3})->kind, Kind::kScalarX);
  EXPECT_EQ(PlanBroadcast(Shape{2, 3}, Shape{1})->kind, Kind::kScalarY);
}

TEST(PlanBroadcastTest, RowBroadcastWalksContiguousRowsWithZeroOuterStride) {
  auto p = PlanBroadcast(Shape{2, 3}, Shape{3});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->kind, Kind::kGeneral);
  EXPECT_EQ(p->dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(p->x_strides, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(p->y_strides, (std::vector<int64_t>{0, 1}));
}

TEST(PlanBroadcastTest, CoalescesNeighbouringDimsWithTheSameBroadcastPattern) {
  auto p = PlanBroadcast(Shape{2, 3, 4}, Shape{2, 1, 1});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->dims, (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(p->x_strides, (std::vector<int64_t>{12, 1}));
  EXPECT_EQ(p->y_strides, (std::vector<int64_t>{1, 0}));
}

TEST(PlanBroadcastTest, EmptyOutputHasNoElements) {
  auto p = PlanBroadcast(Shape{0, 3}, Shape{3});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->out_shape, (Shape{0, 3}));
  EXPECT_EQ(p->num_elements, 0);
}

// out[i] = x * 100 + y with indices computed the naive way, for an awkward shape pair.
TEST(BinaryLoopTest, GeneralCaseMatchesNaiveIndexing) {
  const Shape xs{2, 1, 3, 1};
  const Shape ys{4, 1, 5};
  auto p = PlanBroadcast(xs, ys);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->out_shape, (Shape{2, 4, 3, 5}));
  std::vector<int> x(6), y(20), out(p->num_elements);
  for (int i = 0; i < 6; ++i) x[i] = i;
  for (int i = 0; i < 20; ++i) y[i] = i;
  auto op = [](int a, int b) { return a * 100 + b; };
  BinaryLoop(*p, x.data(), y.data(), out.data(), op);
  int i = 0;
  for (int a = 0; a < 2; ++a) {
    for (int b = 0; b < 4; ++b) {
      for (int c = 0; c < 3; ++c) {
        for (int d = 0; d < 5; ++d, ++i) {
          EXPECT_EQ(out[i], (a * 3 + c) * 100 + (b * 5 + d)) << "at " << i;
        }
      }
    }
  }
}

// ---- kernels built on the plan, run directly ----

const Node* AddNode(Graph& g, NodeDef def) {
  auto node = g.AddNode(std::move(def));
  EXPECT_TRUE(node.ok()) << node.status();
  return node.ok() ? *node : nullptr;
}

const Node* AddPlaceholder(Graph& g, const std::string& name, DType dtype, Shape shape) {
  return AddNode(g, NodeDef{name, "Placeholder", {}, {{"dtype", dtype}, {"shape", shape}}, ""});
}

StatusOr<std::vector<Tensor>> RunKernel(const Node* node, std::vector<Tensor> inputs) {
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> kernel,
                      KernelRegistry::Global().CreateKernel(*node, kDeviceCpu));
  ResourceManager resources;
  KernelContext ctx(node, std::move(inputs), &resources, /*step_id=*/1);
  kernel->Compute(&ctx);
  if (!ctx.status().ok()) return ctx.status();
  return ctx.outputs();
}

TEST(BroadcastKernelTest, AddBroadcastsARowOverEveryRow) {
  Graph g;
  AddPlaceholder(g, "x", DType::kFloat32, Shape{2, 3});
  AddPlaceholder(g, "y", DType::kFloat32, Shape{3});
  const Node* add = AddNode(g, NodeDef{"add", "Add", {"x", "y"}, {}, ""});
  auto out = RunKernel(add, {Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3}),
                             Tensor::FromVector<float>({10, 20, 30})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsEqual(
      (*out)[0], Tensor::FromVector<float>({11, 22, 33, 14, 25, 36}, Shape{2, 3})));
}

TEST(BroadcastKernelTest, IntegerDivTruncatesTowardZero) {
  Graph g;
  AddPlaceholder(g, "x", DType::kInt32, Shape{4});
  AddPlaceholder(g, "y", DType::kInt32, Shape{4});
  const Node* div = AddNode(g, NodeDef{"div", "Div", {"x", "y"}, {}, ""});
  auto out = RunKernel(div, {Tensor::FromVector<int32_t>({-7, 7, -7, 7}),
                             Tensor::FromVector<int32_t>({2, -2, -2, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsEqual((*out)[0], Tensor::FromVector<int32_t>({-3, -3, 3, 3})));
}

TEST(BroadcastKernelTest, IntegerDivByZeroIsInvalidArgumentNamingTheNode) {
  Graph g;
  AddPlaceholder(g, "x", DType::kInt64, Shape{2});
  AddPlaceholder(g, "y", DType::kInt64, Shape{});
  const Node* div = AddNode(g, NodeDef{"my_div", "Div", {"x", "y"}, {}, ""});
  auto out = RunKernel(div, {Tensor::FromVector<int64_t>({1, 2}), Tensor::Scalar<int64_t>(0)});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
  EXPECT_NE(out.status().message().find("my_div"), std::string::npos);
  EXPECT_NE(out.status().message().find("integer division by zero"), std::string::npos);
}

TEST(BroadcastKernelTest, IntegerPowSquaresAndRejectsNegativeExponents) {
  Graph g;
  AddPlaceholder(g, "x", DType::kInt32, Shape{4});
  AddPlaceholder(g, "y", DType::kInt32, Shape{4});
  const Node* pow = AddNode(g, NodeDef{"pow", "Pow", {"x", "y"}, {}, ""});
  auto out = RunKernel(pow, {Tensor::FromVector<int32_t>({3, -2, -1, 5}),
                             Tensor::FromVector<int32_t>({4, 3, -3, 0})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsEqual((*out)[0], Tensor::FromVector<int32_t>({81, -8, -1, 1})));

  auto bad = RunKernel(pow, {Tensor::FromVector<int32_t>({3, 2, 1, 1}),
                             Tensor::FromVector<int32_t>({1, -1, 1, 1})});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'pow'"), std::string::npos);
}

TEST(BroadcastKernelTest, ReshapeSharesTheInputBufferAndResolvesMinusOne) {
  Graph g;
  AddPlaceholder(g, "x", DType::kFloat32, Shape{2, 3});
  AddPlaceholder(g, "s", DType::kInt64, Shape{2});
  const Node* reshape = AddNode(g, NodeDef{"r", "Reshape", {"x", "s"}, {}, ""});
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  auto out = RunKernel(reshape, {x, Tensor::FromVector<int64_t>({-1, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{3, 2}));
  EXPECT_TRUE((*out)[0].SharesBufferWith(x));
}

TEST(BroadcastKernelTest, ReshapeToAWrongElementCountFailsNamingTheNode) {
  Graph g;
  AddPlaceholder(g, "x", DType::kFloat32, Shape{2, 3});
  AddPlaceholder(g, "s", DType::kInt32, Shape{2});
  const Node* reshape = AddNode(g, NodeDef{"bad_reshape", "Reshape", {"x", "s"}, {}, ""});
  Tensor x(DType::kFloat32, Shape{2, 3});
  for (auto dims : {std::vector<int32_t>{4, 2}, std::vector<int32_t>{-1, -1},
                    std::vector<int32_t>{-1, 4}}) {
    auto out = RunKernel(reshape, {x, Tensor::FromVector<int32_t>(dims)});
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
    EXPECT_NE(out.status().message().find("bad_reshape"), std::string::npos);
  }
}

}  // namespace
}  // namespace cpu
}  // namespace actorflow
