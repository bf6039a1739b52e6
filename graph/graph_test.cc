// Graph, Scope and the op set: what builds, what each op infers, and how build-time
// errors name the culprit.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/graph.h"
#include "graph/op_registry.h"
#include "graph/ops.h"
#include "graph/scope.h"

namespace actorflow {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// Output shape of a node built in `scope`; fails the test if the scope failed.
#define EXPECT_SHAPE(scope, output, ...)                          \
  do {                                                            \
    ASSERT_TRUE((scope).ok()) << (scope).status();                \
    EXPECT_EQ((output).shape(), (Shape{__VA_ARGS__}));            \
  } while (0)

std::vector<int64_t> NoDims() { return {}; }

// --- The op set ---------------------------------------------------------------

TEST(OpSetTest, RegistersEveryOpOfTheContract) {
  for (const char* op :
       {"Const", "Placeholder", "Variable", "Assign", "AssignAdd", "AssignSub", "Identity",
        "NoOp", "Add", "Sub", "Mul", "Div", "Pow", "Maximum", "Minimum", "Neg", "Exp", "Log",
        "Sqrt", "Square", "Abs", "Relu", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "MatMul",
        "BiasAdd", "Sum", "Mean", "Max", "Min", "ArgMax", "Equal", "Less", "Greater", "Cast",
        "Reshape", "Transpose", "ConcatV2", "Slice", "Fill", "ZerosLike", "OnesLike", "Shape",
        "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits",
        "RandomUniform", "RandomNormal", "TruncatedNormal"}) {
    EXPECT_NE(OpRegistry::Global().Find(op), nullptr) << op;
  }
}

TEST(OpSetTest, VariablesAndRandomOpsAreStatefulAndAssignTakesARef) {
  EXPECT_TRUE(OpRegistry::Global().Find("Variable")->stateful);
  EXPECT_TRUE(OpRegistry::Global().Find("RandomUniform")->stateful);
  EXPECT_FALSE(OpRegistry::Global().Find("Add")->stateful);
  EXPECT_TRUE(OpRegistry::Global().Find("Assign")->IsRefInput(0));
  EXPECT_FALSE(OpRegistry::Global().Find("Assign")->IsRefInput(1));
}

// --- The TensorFlow guide's programs build ------------------------------------

TEST(GuideProgramsTest, AddOfTwoLiteralsIsAnInt32Scalar) {
  Scope root = Scope::NewRootScope();
  Output sum = Add(root, 3, 5);
  EXPECT_SHAPE(root, sum);
  EXPECT_EQ(sum.dtype(), DType::kInt32);
  EXPECT_EQ(root.graph()->num_nodes(), 3);
  EXPECT_EQ(sum.node->def().inputs, (std::vector<std::string>{"Const", "Const_1"}));
  EXPECT_EQ(sum.name(), "Add");
}

TEST(GuideProgramsTest, PowOfAddAndMulOfInt32Constants) {
  Scope root = Scope::NewRootScope();
  Output x = Const(root.WithOpName("x"), 2);
  Output y = Const(root.WithOpName("y"), 3);
  Output op3 = Pow(root, Add(root, x, y), Mul(root, x, y));
  EXPECT_SHAPE(root, op3);
  EXPECT_EQ(op3.dtype(), DType::kInt32);
  EXPECT_EQ(op3.node->def().inputs, (std::vector<std::string>{"Add", "Mul"}));
  EXPECT_EQ(root.graph()->FindNode("x")->attr<Tensor>("value").data<int32_t>()[0], 2);
}

TEST(GuideProgramsTest, SumOfPlaceholdersKeepsUnknownShapes) {
  Scope root = Scope::NewRootScope();
  Output x = Placeholder(root.WithOpName("x"), DType::kFloat32);
  Output y = Placeholder(root.WithOpName("y"), DType::kFloat32);
  Output z = Add(root, x, y);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_TRUE(z.shape().unknown_rank());
  EXPECT_EQ(z.dtype(), DType::kFloat32);
  // Unknown rank is expressed by leaving the shape attr out.
  EXPECT_EQ(x.node->def().attrs.count("shape"), 0u);
  Output batch = Placeholder(root, DType::kFloat32, Shape{-1, 2});
  EXPECT_EQ(batch.node->attr<Shape>("shape"), (Shape{-1, 2}));
  EXPECT_SHAPE(root, Add(root, batch, Const(root, {1.f, 2.f})), -1, 2);
}

// --- Inferred dtypes and shapes ------------------------------------------------

TEST(InferenceTest, BinaryOpsBroadcastLikeNumPy) {
  Scope root = Scope::NewRootScope();
  auto a = Placeholder(root, DType::kFloat32, Shape{2, 1, 3});
  auto b = Placeholder(root, DType::kFloat32, Shape{4, 1});
  EXPECT_SHAPE(root, Mul(root, a, b), 2, 4, 3);
  auto c = Placeholder(root, DType::kFloat32, Shape{-1, 3});
  EXPECT_SHAPE(root, Sub(root, c, Const(root, {1.f, 2.f, 3.f})), -1, 3);
  EXPECT_SHAPE(root, Maximum(root, c, Placeholder(root, DType::kFloat32, Shape{5, 1})), 5, 3);
  Add(root.WithOpName("bad"), Placeholder(root, DType::kFloat32, Shape{2, 3}),
      Placeholder(root, DType::kFloat32, Shape{4}));
  EXPECT_THAT(root.status().message(),
              AllOf(HasSubstr("node 'bad' (Add)"), HasSubstr("incompatible shapes"),
                    HasSubstr("[2,3]"), HasSubstr("[4]")));
}

TEST(InferenceTest, ComparisonsAreBoolWithTheBroadcastShape) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root, DType::kFloat32, Shape{3});
  for (Output out : {Less(root, x, 0.5f), Greater(root, x, 0.5f), Equal(root, x, x)}) {
    EXPECT_SHAPE(root, out, 3);
    EXPECT_EQ(out.dtype(), DType::kBool);
  }
}

TEST(InferenceTest, MatMulHonoursTransposes) {
  Scope root = Scope::NewRootScope();
  auto a = Placeholder(root, DType::kFloat32, Shape{2, 3});
  auto at = Placeholder(root, DType::kFloat32, Shape{3, 2});
  auto b = Placeholder(root, DType::kFloat32, Shape{3, 4});
  auto bt = Placeholder(root, DType::kFloat32, Shape{4, 3});
  EXPECT_SHAPE(root, MatMul(root, a, b), 2, 4);
  EXPECT_SHAPE(root, MatMul(root, at, b, /*transpose_a=*/true), 2, 4);
  EXPECT_SHAPE(root, MatMul(root, a, bt, false, /*transpose_b=*/true), 2, 4);
  EXPECT_SHAPE(root, MatMul(root, at, bt, true, true), 2, 4);
  auto batch = Placeholder(root, DType::kFloat32, Shape{-1, 3});
  EXPECT_SHAPE(root, MatMul(root, batch, b), -1, 4);
  EXPECT_SHAPE(root, MatMul(root, Placeholder(root, DType::kFloat32), b), -1, 4);
}

TEST(InferenceTest, ReductionsDropOrKeepAxesAndAcceptNegativeAxes) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root, DType::kFloat32, Shape{2, 3, 4});
  EXPECT_SHAPE(root, Sum(root, x, 1), 2, 4);
  EXPECT_SHAPE(root, Mean(root, x, 1, /*keep_dims=*/true), 2, 1, 4);
  EXPECT_SHAPE(root, Max(root, x, -1), 2, 3);
  EXPECT_SHAPE(root, Min(root, x, {0, -1}, true), 1, 3, 1);
  EXPECT_SHAPE(root, Sum(root, x));
  EXPECT_SHAPE(root, Sum(root, x, std::vector<int64_t>{}), 2, 3, 4);
  EXPECT_SHAPE(root, Sum(root, x, {}), 2, 3, 4);  // an empty list reduces nothing
  Output all = Sum(root, x);
  EXPECT_EQ(all.node->attrs().count("axis"), 0u);  // absent means every axis
  EXPECT_SHAPE(root, Sum(root, Placeholder(root, DType::kFloat32)));
  EXPECT_TRUE(Sum(root, Placeholder(root, DType::kFloat32), 0).shape().unknown_rank());
}

TEST(InferenceTest, ReductionRejectsOutOfRangeAndDuplicateAxes) {
  Scope root = Scope::NewRootScope();
  Sum(root.WithOpName("s"), Placeholder(root, DType::kFloat32, Shape{2, 3}), 2);
  EXPECT_THAT(root.status().message(),
              AllOf(HasSubstr("node 's' (Sum)"), HasSubstr("axis 2 is out of range")));
  Scope other = Scope::NewRootScope();
  Sum(other.WithOpName("d"), Placeholder(other, DType::kFloat32, Shape{2, 3}), {1, -1});
  EXPECT_THAT(other.status().message(), AllOf(HasSubstr("node 'd'"), HasSubstr("duplicate")));
}

TEST(InferenceTest, ReshapeResolvesMinusOneFromConstantShape) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root, DType::kFloat32, Shape{2, 3, 4});
  EXPECT_SHAPE(root, Reshape(root, x, {-1, 4}), 6, 4);
  EXPECT_SHAPE(root, Reshape(root, x, Tensor::FromVector<int64_t>({4, -1})), 4, 6);
  auto batch = Placeholder(root, DType::kFloat32, Shape{-1, 4});
  EXPECT_SHAPE(root, Reshape(root, batch, {-1, 2}), -1, 2);
  auto dynamic_shape = Placeholder(root, DType::kInt32, Shape{3});
  EXPECT_SHAPE(root, Reshape(root, x, dynamic_shape), -1, -1, -1);
  Reshape(root.WithOpName("r"), x, {5, 5});
  EXPECT_THAT(root.status().message(),
              AllOf(HasSubstr("node 'r' (Reshape)"), HasSubstr("24 elements")));
}

TEST(InferenceTest, ConcatV2AddsTheAxisDimension) {
  Scope root = Scope::NewRootScope();
  auto a = Placeholder(root, DType::kFloat32, Shape{2, 3});
  auto b = Placeholder(root, DType::kFloat32, Shape{2, 5});
  EXPECT_SHAPE(root, ConcatV2(root, {a, b}, 1), 2, 8);
  EXPECT_SHAPE(root, ConcatV2(root, {a, b, a}, -1), 2, 11);
  auto c = Placeholder(root, DType::kFloat32, Shape{-1, 3});
  EXPECT_SHAPE(root, ConcatV2(root, {c, a}, 0), -1, 3);
  EXPECT_SHAPE(root, ConcatV2(root, {c, a}, 1), 2, 6);
  ConcatV2(root.WithOpName("cat"), {a, b}, 0);
  EXPECT_THAT(root.status().message(),
              AllOf(HasSubstr("node 'cat' (ConcatV2)"), HasSubstr("dimension 1")));
}

TEST(InferenceTest, SliceSizeMinusOneRunsToTheEnd) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root, DType::kFloat32, Shape{4, 5});
  EXPECT_SHAPE(root, Slice(root, x, {1, 0}, {2, -1}), 2, 5);
  EXPECT_SHAPE(root, Slice(root, Placeholder(root, DType::kFloat32, Shape{-1, 5}), {1, 2},
                           {-1, 3}),
               -1, 3);
  Slice(root.WithOpName("sl"), x, {3, 0}, {2, 1});
  EXPECT_THAT(root.status().message(),
              AllOf(HasSubstr("node 'sl' (Slice)"), HasSubstr("out of bounds")));
}

TEST(InferenceTest, ArgMaxRemovesTheAxisAndIsInt64) {
  Scope root = Scope::NewRootScope();
  Output idx = ArgMax(root, Placeholder(root, DType::kFloat32, Shape{2, 3}), 1);
  EXPECT_SHAPE(root, idx, 2);
  EXPECT_EQ(idx.dtype(), DType::kInt64);
  EXPECT_SHAPE(root, ArgMax(root, Placeholder(root, DType::kInt32, Shape{2, 3})), 3);
}

TEST(InferenceTest, ShapeManipulationAndSourceOps) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root, DType::kFloat32, Shape{2, 3, 4});
  EXPECT_SHAPE(root, Transpose(root, x), 4, 3, 2);
  EXPECT_SHAPE(root, Transpose(root, x, {0, 2, 1}), 2, 4, 3);
  Output filled = Fill(root, {2, 3}, 1.5);
  EXPECT_SHAPE(root, filled, 2, 3);
  EXPECT_EQ(filled.dtype(), DType::kFloat64);
  Output cast = Cast(root, x, DType::kInt32);
  EXPECT_EQ(cast.dtype(), DType::kInt32);
  Output shape = ShapeOf(root, x);
  EXPECT_SHAPE(root, shape, 3);
  EXPECT_EQ(shape.dtype(), DType::kInt32);
  EXPECT_SHAPE(root, ShapeOf(root, Placeholder(root, DType::kBool), DType::kInt64), -1);
  EXPECT_SHAPE(root, Const(root, {1.f, 2.f, 3.f, 4.f}, {2, 2}), 2, 2);
  Output noise = RandomNormal(root, {3, 2}, DType::kFloat64, /*seed=*/7);
  EXPECT_SHAPE(root, noise, 3, 2);
  EXPECT_EQ(noise.node->attr<double>("stddev"), 1.0);
  Output w = Variable(root, {3, 2}, DType::kFloat64);
  EXPECT_SHAPE(root, AssignAdd(root, w, noise), 3, 2);
  EXPECT_EQ(w.node->attr<std::string>("container"), "");
}

TEST(InferenceTest, CrossEntropyOutputsLossAndBackprop) {
  Scope root = Scope::NewRootScope();
  auto logits = Placeholder(root, DType::kFloat32, Shape{-1, 10});
  auto dense = SoftmaxCrossEntropyWithLogits(
      root, logits, Placeholder(root, DType::kFloat32, Shape{8, 10}));
  EXPECT_SHAPE(root, dense.loss, 8);
  EXPECT_SHAPE(root, dense.backprop, 8, 10);
  auto sparse = SparseSoftmaxCrossEntropyWithLogits(
      root, logits, Placeholder(root, DType::kInt64, Shape{-1}));
  EXPECT_SHAPE(root, sparse.loss, -1);
  EXPECT_SHAPE(root, sparse.backprop, -1, 10);
  EXPECT_EQ(sparse.loss.dtype(), DType::kFloat32);
}

// --- Build-time errors name the node --------------------------------------------

TEST(BuildErrorTest, MatMulMismatchNamesNodeAndBothShapes) {
  Scope root = Scope::NewRootScope();
  auto a = Placeholder(root, DType::kFloat32, Shape{2, 3});
  auto b = Placeholder(root, DType::kFloat32, Shape{4, 5});
  Output m = MatMul(root.WithOpName("m"), a, b);
  EXPECT_FALSE(m.valid());
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(root.status().message(),
              AllOf(HasSubstr("node 'm' (MatMul)"), HasSubstr("MatMul shape mismatch"),
                    HasSubstr("[2,3]"), HasSubstr("[4,5]")));
  // The first error sticks; later ops are not added.
  EXPECT_FALSE(Add(root, a, a).valid());
  EXPECT_THAT(root.status().message(), HasSubstr("node 'm'"));
}

TEST(BuildErrorTest, AddOfDifferentDTypesNamesBothDTypes) {
  Scope root = Scope::NewRootScope();
  Add(root.WithOpName("mixed"), 1.0f, 2);
  EXPECT_THAT(root.status().message(),
              AllOf(HasSubstr("node 'mixed' (Add)"), HasSubstr("float32"), HasSubstr("int32")));
}

TEST(BuildErrorTest, FloatOnlyOpsRejectIntegers) {
  Scope root = Scope::NewRootScope();
  Relu(root.WithOpName("r"), Const(root, 3));
  EXPECT_THAT(root.status().message(),
              AllOf(HasSubstr("node 'r' (Relu)"), HasSubstr("float32 or float64")));
}

TEST(BuildErrorTest, UnknownOpIsRejected) {
  Graph graph;
  auto added = graph.AddNode(NodeDef{"n", "Frobnicate", {}, {}, ""});
  ASSERT_FALSE(added.ok());
  EXPECT_THAT(added.status().message(),
              AllOf(HasSubstr("node 'n'"), HasSubstr("unknown op 'Frobnicate'")));
  EXPECT_EQ(graph.num_nodes(), 0);
}

TEST(BuildErrorTest, FromNodeDefsRejectsDanglingInputsAndCycles) {
  AttrMap one = {{"value", Tensor::Scalar(1.0f)}};
  auto dangling = Graph::FromNodeDefs({NodeDef{"c", "Const", {}, one, ""},
                                       NodeDef{"s", "Add", {"c", "ghost"}, {}, ""}});
  ASSERT_FALSE(dangling.ok());
  EXPECT_THAT(dangling.status().message(),
              AllOf(HasSubstr("node 's'"), HasSubstr("'ghost' names no node")));
  auto cycle = Graph::FromNodeDefs(
      {NodeDef{"a", "Identity", {"b"}, {}, ""}, NodeDef{"b", "Identity", {"a"}, {}, ""}});
  ASSERT_FALSE(cycle.ok());
  EXPECT_THAT(cycle.status().message(), HasSubstr("cycle"));
}

TEST(BuildErrorTest, FromNodeDefsAcceptsAnyOrder) {
  AttrMap one = {{"value", Tensor::Scalar(1.0f)}};
  auto graph = Graph::FromNodeDefs(
      {NodeDef{"s", "Add", {"c", "c"}, {}, ""}, NodeDef{"c", "Const", {}, one, ""}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ((*graph)->node(0)->name(), "c");
  EXPECT_EQ((*graph)->FindNode("s")->output_dtype(0), DType::kFloat32);
}

TEST(BuildErrorTest, WrongAttrTypeAndMissingRequiredAttrNameTheAttr) {
  Graph graph;
  auto placeholder = graph.AddNode(NodeDef{"p", "Placeholder", {}, {}, ""});
  ASSERT_FALSE(placeholder.ok());
  EXPECT_THAT(placeholder.status().message(),
              AllOf(HasSubstr("node 'p'"), HasSubstr("missing required attr 'dtype'")));
  auto x = graph.AddNode(NodeDef{"x", "Placeholder", {}, {{"dtype", "float32"}}, ""});
  ASSERT_TRUE(x.ok()) << x.status();
  auto m = graph.AddNode(NodeDef{"m", "MatMul", {"x", "x"}, {{"transpose_a", "yes"}}, ""});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(),
              AllOf(HasSubstr("node 'm' (MatMul)"), HasSubstr("attr 'transpose_a'"),
                    HasSubstr("expected bool")));
}

TEST(BuildErrorTest, AssignNeedsAVariableAndAMatchingDType) {
  Scope root = Scope::NewRootScope();
  Assign(root.WithOpName("a"), Const(root.WithOpName("c"), 1.0f), 2.0f);
  EXPECT_THAT(root.status().message(),
              AllOf(HasSubstr("node 'a' (Assign)"), HasSubstr("must be a Variable node"),
                    HasSubstr("'c'")));
  Scope other = Scope::NewRootScope();
  Output v = Variable(other, {2}, DType::kFloat32);
  EXPECT_SHAPE(other, Assign(other, v, Const(other, {1.f, 2.f})), 2);
  Assign(other.WithOpName("wrong"), v, Const(other, {1, 2}));
  EXPECT_THAT(other.status().message(),
              AllOf(HasSubstr("node 'wrong'"), HasSubstr("int32"), HasSubstr("float32")));
}

TEST(BuildErrorTest, VariableShapeMustBeFullyDefined) {
  Scope root = Scope::NewRootScope();
  Variable(root.WithOpName("v"), {-1, 2}, DType::kFloat32);
  EXPECT_THAT(root.status().message(),
              AllOf(HasSubstr("node 'v' (Variable)"), HasSubstr("fully defined")));
}

// --- Scope: names, devices, colocation, control dependencies ----------------------

TEST(ScopeTest, SubScopesPrefixNamesAndNamesAreMadeUnique) {
  Scope root = Scope::NewRootScope();
  Scope ab = root.NewSubScope("a").NewSubScope("b");
  EXPECT_EQ(Add(ab, 1, 2).name(), "a/b/Add");
  EXPECT_EQ(Add(ab, 1, 2).name(), "a/b/Add_1");
  EXPECT_EQ(Add(ab.WithOpName("total"), 1, 2).name(), "a/b/total");
  EXPECT_EQ(Neg(root, 1).name(), "Neg");
}

TEST(ScopeTest, WithDeviceSetsTheRequestedDevice) {
  Scope root = Scope::NewRootScope();
  Output x = Const(root.WithDevice("/job:worker/task:1/cpu:0"), 1.0f);
  EXPECT_EQ(x.node->def().device, "/job:worker/task:1/cpu:0");
  EXPECT_EQ(Const(root, 1.0f).node->def().device, "");
}

TEST(ScopeTest, ColocateWithSetsClassAttr) {
  Scope root = Scope::NewRootScope();
  Output w = Variable(root.WithOpName("w"), {2}, DType::kFloat32);
  Output update = AssignSub(root.ColocateWith(w), w, Const(root, {1.f, 1.f}));
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(update.node->attrs().at("_class").Get<std::vector<std::string>>(),
            (std::vector<std::string>{"loc:@w"}));
}

TEST(OpSetTest, IsVariableInitializedAndVariableShapeAreBesideTheirVariable) {
  const OpDef* op = OpRegistry::Global().Find("IsVariableInitialized");
  ASSERT_NE(op, nullptr);
  EXPECT_TRUE(op->stateful);
  EXPECT_TRUE(op->IsRefInput(0));
  Scope root = Scope::NewRootScope();
  Output w = Variable(root.WithOpName("w").WithDevice("/job:ps/task:1"), {2, 3}, DType::kInt64);
  // Built in a scope with a device function (a replica device setter's): the ref
  // input keeps it with the variable; the function is not asked.
  Scope worker = root.WithDeviceFunction([](const NodeDef&) { return "/job:worker/task:0"; });
  Output ready = IsVariableInitialized(worker.WithOpName("w_ready"), w);
  EXPECT_SHAPE(root, ready);
  EXPECT_EQ(ready.dtype(), DType::kBool);
  EXPECT_EQ(ready.node->requested_device(), "/job:ps/task:1");
  Output shape = VariableShape(worker.WithOpName("w_shape"), w);
  EXPECT_SHAPE(root, shape, 2);
  EXPECT_EQ(shape.dtype(), DType::kInt64);
  EXPECT_EQ(shape.node->requested_device(), "/job:ps/task:1");
  EXPECT_TRUE(OpRegistry::Global().Find("VariableShape")->IsRefInput(0));
  // Its input must be a variable.
  IsVariableInitialized(root, Const(root, 1.0f));
  EXPECT_FALSE(root.ok());
  EXPECT_THAT(root.status().message(), HasSubstr("IsVariableInitialized"));
}

TEST(ScopeTest, ControlDependenciesComeAfterDataInputs) {
  Scope root = Scope::NewRootScope();
  Output a = Const(root.WithOpName("a"), 1.0f);
  Output b = Const(root.WithOpName("b"), 2.0f);
  Output sum = Identity(root.WithControlDependencies({a, b}), a);
  EXPECT_EQ(sum.node->def().inputs, (std::vector<std::string>{"a", "^a", "^b"}));
  const Node* step = NoOp(root.WithOpName("step").WithControlDependencies({sum}));
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->num_outputs(), 0);
  EXPECT_EQ(step->control_inputs().size(), 1u);
}

TEST(ScopeTest, ConstRejectsANonLiteralAndFillTakesAConstOutput) {
  Scope root = Scope::NewRootScope();
  Output seven = Const(root, 7);
  EXPECT_SHAPE(root, Fill(root, {3}, seven), 3);
  EXPECT_FALSE(Const(root, seven).valid());
  EXPECT_THAT(root.status().message(), HasSubstr("literal"));
}

// --- AttrValue conversions ---------------------------------------------------------

TEST(AttrValueTest, ConvertsParsedValuesToDeclaredTypes) {
  auto dtype = AttrValue("float64").ConvertTo(AttrType::kType);
  ASSERT_TRUE(dtype.ok());
  EXPECT_EQ(dtype->Get<DType>(), DType::kFloat64);
  auto shape = AttrValue(std::vector<int64_t>{-1, 3}).ConvertTo(AttrType::kShape);
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(shape->Get<Shape>(), (Shape{-1, 3}));
  auto scalar_shape = AttrValue(NoDims()).ConvertTo(AttrType::kShape);
  ASSERT_TRUE(scalar_shape.ok());
  EXPECT_EQ(scalar_shape->Get<Shape>(), Shape{});
  auto number = AttrValue(2).ConvertTo(AttrType::kFloat);
  ASSERT_TRUE(number.ok());
  EXPECT_EQ(number->Get<double>(), 2.0);
  EXPECT_FALSE(AttrValue("float128").ConvertTo(AttrType::kType).ok());
  EXPECT_FALSE(AttrValue(std::vector<int64_t>{-2}).ConvertTo(AttrType::kShape).ok());
  EXPECT_FALSE(AttrValue(1.5).ConvertTo(AttrType::kInt).ok());
}

TEST(AttrValueTest, GraphConvertsWrittenAttrsAndFillsDefaults) {
  Graph graph;
  auto p = graph.AddNode(NodeDef{
      "p", "Placeholder", {}, {{"dtype", "int64"}, {"shape", std::vector<int64_t>{-1, 2}}}, ""});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->output_dtype(0), DType::kInt64);
  EXPECT_EQ((*p)->output_shape(0), (Shape{-1, 2}));
  auto r = graph.AddNode(NodeDef{"r", "RandomUniform", {}, {{"shape", std::vector<int64_t>{2}},
                                                             {"maxval", 4}}, ""});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->attr<double>("maxval"), 4.0);
  EXPECT_EQ((*r)->attr<int64_t>("seed"), 0);
  EXPECT_EQ((*r)->attr<DType>("dtype"), DType::kFloat32);
  // What was written is what serializes: defaults are not added to the NodeDef.
  EXPECT_EQ((*r)->def().attrs.count("seed"), 0u);
}

TEST(GraphTest, CloneIsAnEqualGraphThatOwnsItsNodes) {
  Scope root = Scope::NewRootScope();
  Output x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{-1, 3});
  Output w = Const(root.WithOpName("w"), {1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {3, 2});
  Output y = MatMul(root.WithOpName("y"), x, w);
  NoOp(root.WithOpName("step").WithControlDependencies({y}));
  root.graph()->AddToCollection(kVariablesCollection, "w");
  ASSERT_TRUE(root.ok()) << root.status();
  const Graph& original = *root.graph();

  std::unique_ptr<Graph> copy = original.Clone();
  auto rebuilt = Graph::FromNodeDefs(original.ToNodeDefs());
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  ASSERT_EQ(copy->num_nodes(), original.num_nodes());
  EXPECT_EQ(copy->ToNodeDefs(), (*rebuilt)->ToNodeDefs());
  EXPECT_EQ(copy->GetCollection(kVariablesCollection), std::vector<std::string>{"w"});
  for (int id = 0; id < copy->num_nodes(); ++id) {
    const Node* n = copy->node(id);
    const Node* r = (*rebuilt)->node(id);
    EXPECT_EQ(n->id(), id);
    EXPECT_EQ(copy->FindNode(n->name()), n);
    EXPECT_EQ(n->attrs(), r->attrs()) << n->name();
    ASSERT_EQ(n->num_outputs(), r->num_outputs()) << n->name();
    for (int k = 0; k < n->num_outputs(); ++k) {
      EXPECT_EQ(n->output_dtype(k), r->output_dtype(k)) << n->name();
      EXPECT_EQ(n->output_shape(k), r->output_shape(k)) << n->name();
    }
    // Edges lead to the copy's own nodes, never back into the original.
    for (const Endpoint& in : n->inputs()) EXPECT_EQ(in.node, copy->node(in.node->id()));
    for (const Node* c : n->control_inputs()) EXPECT_EQ(c, copy->node(c->id()));
  }
  EXPECT_EQ(copy->FindNode("y")->input(1).node, copy->FindNode("w"));
  EXPECT_EQ(copy->FindNode("step")->control_inputs().at(0), copy->FindNode("y"));

  // Growing the original leaves the copy as it was.
  Identity(root.WithOpName("later"), y);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(copy->FindNode("later"), nullptr);
  EXPECT_EQ(copy->num_nodes(), original.num_nodes() - 1);
}

TEST(GraphTest, UniqueNamesAreTheFirstFreeSuffixEvenWhenNamesWereTakenOutOfOrder) {
  Scope root = Scope::NewRootScope();
  Const(root.WithOpName("Const_2"), 1.0f);
  std::vector<std::string> names;
  for (int i = 0; i < 4; ++i) names.push_back(Const(root, 1.0f).node->name());
  EXPECT_EQ(names, (std::vector<std::string>{"Const", "Const_1", "Const_3", "Const_4"}));
  // A name handed out but never added is handed out again.
  Graph* graph = root.graph();
  EXPECT_EQ(graph->UniqueName("Const"), "Const_5");
  EXPECT_EQ(graph->UniqueName("Const"), "Const_5");
  Const(root.WithOpName("Const_5"), 1.0f);
  Const(root.WithOpName("Const_6"), 1.0f);
  EXPECT_EQ(Const(root, 1.0f).node->name(), "Const_7");
  EXPECT_EQ(graph->UniqueName("Fresh"), "Fresh");
  ASSERT_TRUE(root.ok()) << root.status();
  // 5 000 unnamed nodes of one op: each name is the next suffix.
  for (int i = 8; i < 5008; ++i) {
    ASSERT_EQ(Const(root, 1.0f).node->name(), "Const_" + std::to_string(i));
  }
}

}  // namespace
}  // namespace actorflow
