// CPU element-wise kernels (unary math, broadcasting binary math, comparisons, Cast)
// against the reference kernels, for every dtype the op set requires.
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "graph/tensor.h"
#include "kernels/kernels_test_util.h"

namespace actorflow {
namespace {

// x, y shapes covering same shape, broadcasting both ways, scalars and empty tensors;
// 37 and 3x17 elements are not multiples of common vector widths.
const std::vector<std::pair<Shape, Shape>> kBinaryShapes = {
    {Shape{2, 3}, Shape{2, 3}},       {Shape{2, 3}, Shape{3}},
    {Shape{3}, Shape{2, 3}},          {Shape{2, 1}, Shape{1, 3}},
    {Shape{}, Shape{2, 3}},           {Shape{2, 3}, Shape{}},
    {Shape{}, Shape{}},               {Shape{4, 1, 3}, Shape{2, 1}},
    {Shape{5, 1, 7}, Shape{1, 4, 1}}, {Shape{0, 3}, Shape{0, 3}},
    {Shape{0, 3}, Shape{3}},          {Shape{0, 3}, Shape{}},
    {Shape{37}, Shape{37}},           {Shape{3, 17}, Shape{3, 17}},
    {Shape{3, 17}, Shape{17}},        {Shape{3, 17}, Shape{3, 1}},
};

const std::vector<Shape> kUnaryShapes = {Shape{},     Shape{5},    Shape{2, 3},
                                         Shape{0, 3}, Shape{3, 17}, Shape{2, 3, 4}};

using Generator = std::function<Tensor(RandomTensors&, DType, const Shape&)>;

Generator UniformIn(double lo, double hi) {
  return [lo, hi](RandomTensors& r, DType d, const Shape& s) { return r.Uniform(d, s, lo, hi); };
}

// Small whole numbers in any dtype, so that comparisons and Maximum/Minimum see ties.
Tensor SmallWholeNumbers(RandomTensors& r, DType d, const Shape& s) {
  Tensor ints = r.Uniform(DType::kInt64, s, -2, 2);
  std::vector<double> values;
  for (int64_t i = 0; i < ints.NumElements(); ++i) values.push_back(ints.ElementAsDouble(i));
  return MakeTensor(d, s, values);
}

// ---- Binary ----------------------------------------------------------------------

struct BinaryInputs {
  Generator x;
  Generator y;
};

// How each binary op draws its inputs (dtype-dependent where the domain needs it).
BinaryInputs InputsFor(const std::string& op, DType dtype) {
  if (op == "Div") {
    return {UniformIn(-9, 9), [](RandomTensors& r, DType d, const Shape& s) {
              return r.AwayFromZero(d, s, IsInteger(d) ? 1.0 : 0.5, 9.0);
            }};
  }
  if (op == "Pow") {
    if (IsInteger(dtype)) return {UniformIn(-4, 4), UniformIn(0, 5)};
    return {UniformIn(0.1, 3.0), UniformIn(-3.0, 3.0)};  // positive bases
  }
  if (op == "Maximum" || op == "Minimum" || op == "Equal" || op == "Less" || op == "Greater") {
    return {SmallWholeNumbers, SmallWholeNumbers};
  }
  return {UniformIn(-9, 9), UniformIn(-9, 9)};
}

class BinaryKernelTest : public ::testing::TestWithParam<OpDType> {};

TEST_P(BinaryKernelTest, MatchesReferenceWithBroadcasting) {
  const auto& [op, dtype] = GetParam();
  RandomTensors random(17);
  const BinaryInputs inputs = InputsFor(op, dtype);
  for (const auto& [x_shape, y_shape] : kBinaryShapes) {
    KernelTestCase c{op, {}, {inputs.x(random, dtype, x_shape), inputs.y(random, dtype, y_shape)}};
    EXPECT_TRUE(MatchesReference(c));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Arithmetic, BinaryKernelTest,
    ::testing::ValuesIn(Combine({"Add", "Sub", "Mul", "Div", "Pow", "Maximum", "Minimum"},
                                kNumericDTypes)),
    OpDTypeName);
INSTANTIATE_TEST_SUITE_P(Comparison, BinaryKernelTest,
                         ::testing::ValuesIn(Combine({"Equal", "Less", "Greater"},
                                                     kNumericDTypes)),
                         OpDTypeName);
INSTANTIATE_TEST_SUITE_P(BoolEquality, BinaryKernelTest,
                         ::testing::ValuesIn(Combine({"Equal"}, {DType::kBool})), OpDTypeName);

TEST(BinaryKernelTest, MismatchedShapesAreRejected) {
  RandomTensors random(3);
  KernelTestCase c{"Add", {}, {random.Uniform(DType::kFloat32, Shape{2, 3}),
                               random.Uniform(DType::kFloat32, Shape{4})}};
  EXPECT_TRUE(FailsWith(c, Code::kInvalidArgument));
}

TEST(DivKernelTest, IntegerDivisionTruncatesTowardZero) {
  for (DType dtype : kIntDTypes) {
    const Shape shape{8};
    KernelTestCase c{"Div", {}, {MakeTensor(dtype, shape, {7, -7, 7, -7, 0, 5, -1, 9}),
                                 MakeTensor(dtype, shape, {2, 2, -2, -2, 3, -5, 4, 10})}};
    EXPECT_TRUE(MatchesReference(c));
    auto run = RunKernel(c);
    ASSERT_TRUE(run.ok()) << run.status();
    ASSERT_TRUE(run->status.ok()) << run->status;
    EXPECT_TRUE(TensorsClose(MakeTensor(dtype, shape, {3, -3, -3, 3, 0, -1, 0, 0}),
                             run->outputs[0], Tolerance{}));
  }
}

TEST(DivKernelTest, IntegerDivisionByZeroIsInvalidArgumentNamingTheNode) {
  for (DType dtype : kIntDTypes) {
    KernelTestCase c{"Div", {}, {MakeTensor(dtype, Shape{3}, {1, 2, 3}),
                                 MakeTensor(dtype, Shape{3}, {1, 0, 1})}};
    EXPECT_TRUE(FailsWith(c, Code::kInvalidArgument, kNodeUnderTest));
    // A zero reached through broadcasting is caught too.
    KernelTestCase scalar{"Div", {}, {MakeTensor(dtype, Shape{2, 2}, {1, 2, 3, 4}),
                                      MakeTensor(dtype, Shape{}, {0})}};
    EXPECT_TRUE(FailsWith(scalar, Code::kInvalidArgument, kNodeUnderTest));
  }
}

TEST(DivKernelTest, FloatDivisionByZeroGivesInfinityAndNaN) {
  for (DType dtype : kFloatDTypes) {
    KernelTestCase c{"Div", {}, {MakeTensor(dtype, Shape{3}, {1, -1, 0}),
                                 MakeTensor(dtype, Shape{3}, {0, 0, 0})}};
    EXPECT_TRUE(MatchesReference(c));
  }
}

TEST(PowKernelTest, IntegerNegativeExponentWorksOnlyForBaseOneOrMinusOne) {
  for (DType dtype : kIntDTypes) {
    KernelTestCase ok{"Pow", {}, {MakeTensor(dtype, Shape{4}, {1, -1, -1, 1}),
                                  MakeTensor(dtype, Shape{4}, {-3, -3, -2, -1})}};
    EXPECT_TRUE(MatchesReference(ok));
    auto run = RunKernel(ok);
    ASSERT_TRUE(run.ok() && run->status.ok());
    EXPECT_TRUE(TensorsClose(MakeTensor(dtype, Shape{4}, {1, -1, 1, 1}), run->outputs[0], {}));

    KernelTestCase bad{"Pow", {}, {MakeTensor(dtype, Shape{2}, {2, 3}),
                                   MakeTensor(dtype, Shape{2}, {1, -1})}};
    EXPECT_TRUE(FailsWith(bad, Code::kInvalidArgument, kNodeUnderTest));
  }
}

TEST(PowKernelTest, IntegerPowerIsExact) {
  for (DType dtype : kIntDTypes) {
    KernelTestCase c{"Pow", {}, {MakeTensor(dtype, Shape{5}, {3, -2, 0, 0, 7}),
                                 MakeTensor(dtype, Shape{5}, {4, 3, 0, 2, 10})}};
    auto run = RunKernel(c);
    ASSERT_TRUE(run.ok() && run->status.ok());
    EXPECT_TRUE(TensorsClose(MakeTensor(dtype, Shape{5}, {81, -8, 1, 0, 282475249}),
                             run->outputs[0], {}));
    EXPECT_TRUE(MatchesReference(c));
  }
}

// ---- Unary -----------------------------------------------------------------------

Generator UnaryInputsFor(const std::string& op) {
  if (op == "Log" || op == "Sqrt") return UniformIn(0.01, 10.0);  // positive
  if (op == "Exp") return UniformIn(-10.0, 10.0);
  return UniformIn(-9, 9);
}

class UnaryKernelTest : public ::testing::TestWithParam<OpDType> {};

TEST_P(UnaryKernelTest, MatchesReference) {
  const auto& [op, dtype] = GetParam();
  RandomTensors random(29);
  for (const Shape& shape : kUnaryShapes) {
    EXPECT_TRUE(MatchesReference({op, {}, {UnaryInputsFor(op)(random, dtype, shape)}}));
  }
}

INSTANTIATE_TEST_SUITE_P(Numeric, UnaryKernelTest,
                         ::testing::ValuesIn(Combine({"Neg", "Abs", "Square"}, kNumericDTypes)),
                         OpDTypeName);
INSTANTIATE_TEST_SUITE_P(Floating, UnaryKernelTest,
                         ::testing::ValuesIn(Combine({"Exp", "Log", "Sqrt"}, kFloatDTypes)),
                         OpDTypeName);

TEST(UnaryKernelTest, SpecialValuesFollowIeee) {
  const double inf = std::numeric_limits<double>::infinity();
  for (DType dtype : kFloatDTypes) {
    const Tensor x = MakeTensor(dtype, Shape{6}, {0.0, 1.0, -inf, inf, 1e-30, 100.0});
    for (const char* op : {"Exp", "Log", "Sqrt", "Neg", "Abs", "Square"}) {
      EXPECT_TRUE(MatchesReference({op, {}, {x}}));
    }
  }
}

// ---- Cast ------------------------------------------------------------------------

// Values that exercise truncation toward zero, 0/1 for bool, and zeros for x != 0.
Tensor CastInput(DType dtype) {
  const std::vector<double> values = {-2.7, -1.0, -0.5, 0.0, 0.5, 1.0, 2.7, 100.25, -99.9,
                                      0.0,  3.0,  -3.0};
  return MakeTensor(dtype, Shape{3, 4}, values);
}

class CastKernelTest : public ::testing::TestWithParam<std::pair<DType, DType>> {};

TEST_P(CastKernelTest, MatchesReference) {
  const auto [from, to] = GetParam();
  RandomTensors random(41);
  const AttrMap attrs = {{"dtype", to}};
  EXPECT_TRUE(MatchesReference({"Cast", attrs, {CastInput(from)}}));
  for (const Shape& shape : kUnaryShapes) {
    EXPECT_TRUE(MatchesReference({"Cast", attrs, {random.Uniform(from, shape, -100, 100)}}));
  }
}

std::vector<std::pair<DType, DType>> AllDTypePairs() {
  std::vector<std::pair<DType, DType>> pairs;
  for (DType from : kAllDTypes) {
    for (DType to : kAllDTypes) pairs.emplace_back(from, to);
  }
  return pairs;
}

INSTANTIATE_TEST_SUITE_P(AllPairs, CastKernelTest, ::testing::ValuesIn(AllDTypePairs()),
                         [](const ::testing::TestParamInfo<std::pair<DType, DType>>& info) {
                           return std::string(DTypeName(info.param.first)) + "_to_" +
                                  DTypeName(info.param.second);
                         });

TEST(CastKernelTest, FloatToIntTruncatesTowardZeroAndNumberToBoolIsNonZero) {
  for (DType from : kFloatDTypes) {
    auto to_int = RunKernel({"Cast", {{"dtype", DType::kInt32}},
                             {MakeTensor(from, Shape{4}, {-2.7, 2.7, -0.5, 0.0})}});
    ASSERT_TRUE(to_int.ok() && to_int->status.ok());
    EXPECT_TRUE(TensorsClose(MakeTensor(DType::kInt32, Shape{4}, {-2, 2, 0, 0}),
                             to_int->outputs[0], {}));
    auto to_bool = RunKernel({"Cast", {{"dtype", DType::kBool}},
                              {MakeTensor(from, Shape{4}, {-2.7, 0.0, 0.5, 0.0})}});
    ASSERT_TRUE(to_bool.ok() && to_bool->status.ok());
    EXPECT_TRUE(TensorsClose(MakeTensor(DType::kBool, Shape{4}, {1, 0, 1, 0}),
                             to_bool->outputs[0], {}));
  }
}

// An element-wise kernel whose context holds the only reference to an input of the
// output's shape and dtype writes its output over it (ForwardInputOrAllocateOutput);
// while anything else holds the input it allocates. Values are checked in both ways
// by MatchesReference.
TEST(ElementwiseInPlaceTest, OutputTakesTheBufferOfAnInputNothingElseHolds) {
  RandomTensors random(5);
  const DType f32 = DType::kFloat32;
  struct Case {
    KernelTestCase test;
    int forwarded;  // the input whose buffer the output takes; -1: none may
  };
  const std::vector<Case> cases = {
      {{"Relu", {}, {random.Uniform(f32, Shape{2, 3})}}, 0},
      {{"Mul", {}, {random.Uniform(f32, Shape{2, 3}), random.Uniform(f32, Shape{2, 3})}}, 0},
      {{"Sub", {}, {random.Uniform(f32, Shape{2, 3}), random.Uniform(f32, Shape{})}}, 0},
      // x a scalar: y takes the output, and the operands keep their order (x - y).
      {{"Sub", {}, {random.Uniform(f32, Shape{}), random.Uniform(f32, Shape{2, 3})}}, 1},
      {{"BiasAdd", {}, {random.Uniform(f32, Shape{4, 3}), random.Uniform(f32, Shape{3})}}, 0},
      // Broadcast along rows: x is smaller than the output; y is not taken either.
      {{"Add", {}, {random.Uniform(f32, Shape{3}), random.Uniform(f32, Shape{2, 3})}}, -1},
      // A bool output cannot live in a float buffer.
      {{"Less", {}, {random.Uniform(f32, Shape{2, 3}), random.Uniform(f32, Shape{2, 3})}}, -1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.test.ToString());
    EXPECT_TRUE(MatchesReference(c.test));
    auto sole = RunKernel(c.test, /*unknown_input_shapes=*/false, /*sole_inputs=*/true);
    ASSERT_TRUE(sole.ok()) << sole.status();
    ASSERT_TRUE(sole->status.ok()) << sole->status;
    auto shared = RunKernel(c.test);
    ASSERT_TRUE(shared.ok()) << shared.status();
    ASSERT_TRUE(shared->status.ok()) << shared->status;
    for (size_t i = 0; i < c.test.inputs.size(); ++i) {
      EXPECT_EQ(sole->outputs[0].SharesBufferWith(sole->inputs[i]),
                static_cast<int>(i) == c.forwarded)
          << "input " << i;
      EXPECT_FALSE(shared->outputs[0].SharesBufferWith(shared->inputs[i])) << "input " << i;
    }
  }
}

}  // namespace
}  // namespace actorflow
