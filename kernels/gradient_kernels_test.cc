// The CPU kernels of the gradient helper ops against naive references written here
// (one multi-index loop per op), for float32 and float64, with input shapes known at
// build time and unknown (the kernels must take shapes from their inputs), plus the
// shape errors they promise.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/shape.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "kernels/kernels_test_util.h"

namespace actorflow {
namespace {

// --- Naive references ---------------------------------------------------------------

std::vector<int64_t> Unravel(int64_t i, const Shape& shape) {
  std::vector<int64_t> index(shape.rank());
  for (int d = shape.rank() - 1; d >= 0; --d) {
    index[d] = i % shape.dim(d);
    i /= shape.dim(d);
  }
  return index;
}

int64_t Ravel(const std::vector<int64_t>& index, const Shape& shape) {
  int64_t i = 0;
  for (int d = 0; d < shape.rank(); ++d) i = i * shape.dim(d) + index[d];
  return i;
}

// out[i] = f(i) for every element of `shape`, in `dtype`.
template <typename F>
Tensor Generate(DType dtype, const Shape& shape, F f) {
  std::vector<double> values(shape.num_elements());
  for (int64_t i = 0; i < shape.num_elements(); ++i) values[i] = f(i);
  return MakeTensor(dtype, shape, values);
}

Tensor RefSumToShapeOf(const Tensor& grad, const Shape& like) {
  std::vector<double> acc(like.num_elements(), 0.0);
  const int offset = grad.rank() - like.rank();
  for (int64_t i = 0; i < grad.NumElements(); ++i) {
    std::vector<int64_t> gi = Unravel(i, grad.shape());
    std::vector<int64_t> li(gi.begin() + offset, gi.end());
    for (int d = 0; d < like.rank(); ++d) {
      if (like.dim(d) == 1) li[d] = 0;
    }
    acc[Ravel(li, like)] += grad.ElementAsDouble(i);
  }
  return MakeTensor(grad.dtype(), like, acc);
}

// x is the reduction of like over `reduced` axes with keep_dims.
Tensor RefBroadcastToShapeOf(const Tensor& x, const Shape& like, const std::vector<bool>& reduced,
                             bool keep_dims) {
  return Generate(x.dtype(), like, [&](int64_t i) {
    std::vector<int64_t> li = Unravel(i, like);
    std::vector<int64_t> xi;
    for (int d = 0; d < like.rank(); ++d) {
      if (!reduced[d]) {
        xi.push_back(li[d]);
      } else if (keep_dims) {
        xi.push_back(0);
      }
    }
    return x.ElementAsDouble(Ravel(xi, x.shape()));
  });
}

Tensor RefPadToShapeOf(const Tensor& grad, const Shape& like, const std::vector<int64_t>& begin) {
  return Generate(grad.dtype(), like, [&](int64_t i) {
    std::vector<int64_t> li = Unravel(i, like);
    for (int d = 0; d < like.rank(); ++d) {
      li[d] -= begin[d];
      if (li[d] < 0 || li[d] >= grad.dim(d)) return 0.0;
    }
    return grad.ElementAsDouble(Ravel(li, grad.shape()));
  });
}

Tensor RefSliceConcatPart(const Tensor& grad, const std::vector<Shape>& parts, int axis,
                          int index) {
  int64_t offset = 0;
  for (int k = 0; k < index; ++k) offset += parts[k].dim(axis);
  return Generate(grad.dtype(), parts[index], [&](int64_t i) {
    std::vector<int64_t> pi = Unravel(i, parts[index]);
    pi[axis] += offset;
    return grad.ElementAsDouble(Ravel(pi, grad.shape()));
  });
}

// --- Harness ------------------------------------------------------------------------

// Runs the case with known and with unknown input shapes and compares output 0 with
// `want` (float32: rtol 1e-5, atol 1e-6; float64: 1e-12). A failure names the case
// and the first check that did not hold.
::testing::AssertionResult Matches(const KernelTestCase& c, const Tensor& want) {
  const Tolerance tol =
      want.dtype() == DType::kFloat32 ? Tolerance{1e-5, 1e-6} : Tolerance{1e-12, 1e-12};
  for (bool unknown : {false, true}) {
    const std::string what = c.ToString() + (unknown ? " (unknown input shapes)" : "");
    StatusOr<KernelRun> run = RunKernel(c, unknown);
    if (!run.ok()) return ::testing::AssertionFailure() << what << ": " << run.status();
    if (!run->status.ok()) {
      return ::testing::AssertionFailure() << what << ": kernel failed: " << run->status;
    }
    if (run->outputs.size() != 1u) {
      return ::testing::AssertionFailure()
             << what << ": " << run->outputs.size() << " outputs, expected 1";
    }
    const Tensor& got = run->outputs[0];
    if (!run->node->output_shape(0).IsCompatibleWith(got.shape())) {
      return ::testing::AssertionFailure()
             << what << ": output is " << got.DebugString() << " but the node infers "
             << run->node->output_shape(0).ToString();
    }
    ::testing::AssertionResult close = TensorsClose(want, got, tol);
    if (!close) return ::testing::AssertionFailure() << what << ": " << close.message();
  }
  return ::testing::AssertionSuccess();
}

// Whether the kernel (shapes unknown at build time) fails with InvalidArgument naming
// the node and containing `substring`.
::testing::AssertionResult KernelRejects(const KernelTestCase& c, const std::string& substring) {
  StatusOr<KernelRun> run = RunKernel(c, /*unknown_input_shapes=*/true);
  if (!run.ok()) return ::testing::AssertionFailure() << c.ToString() << ": " << run.status();
  const Status& error = run->status;
  if (error.code() != Code::kInvalidArgument) {
    return ::testing::AssertionFailure()
           << c.ToString() << ": expected InvalidArgument, got " << error;
  }
  for (const std::string& part : {std::string(kNodeUnderTest), substring}) {
    if (error.message().find(part) == std::string::npos) {
      return ::testing::AssertionFailure()
             << c.ToString() << ": the error does not mention '" << part << "': " << error;
    }
  }
  return ::testing::AssertionSuccess();
}

// Whether building the node with known shapes fails with InvalidArgument.
::testing::AssertionResult InferenceRejects(const KernelTestCase& c) {
  StatusOr<KernelRun> run = RunKernel(c, /*unknown_input_shapes=*/false);
  if (run.ok()) return ::testing::AssertionFailure() << c.ToString() << ": the node builds";
  if (run.status().code() != Code::kInvalidArgument) {
    return ::testing::AssertionFailure()
           << c.ToString() << ": expected InvalidArgument, got " << run.status();
  }
  return ::testing::AssertionSuccess();
}

class GradientKernelsTest : public ::testing::TestWithParam<DType> {
 protected:
  DType dtype() const { return GetParam(); }
  RandomTensors random_{20240611};
};

TEST_P(GradientKernelsTest, ActivationGradientsMatchTheirFormulas) {
  for (const Shape& shape : {Shape{}, Shape{5}, Shape{2, 3, 4}}) {
    Tensor a = random_.AwayFromZero(dtype(), shape, 0.05, 2.0);
    Tensor b = random_.Uniform(dtype(), shape, -2.0, 2.0);
    Tensor y = random_.Uniform(dtype(), shape, -0.99, 0.99);  // a sigmoid/tanh output
    EXPECT_TRUE(Matches({"ReluGrad", {}, {b, a}}, Generate(dtype(), shape, [&](int64_t i) {
                          return a.ElementAsDouble(i) > 0 ? b.ElementAsDouble(i) : 0.0;
                        })));
    EXPECT_TRUE(Matches({"SigmoidGrad", {}, {y, b}}, Generate(dtype(), shape, [&](int64_t i) {
                          const double v = y.ElementAsDouble(i);
                          return b.ElementAsDouble(i) * v * (1 - v);
                        })));
    EXPECT_TRUE(Matches({"TanhGrad", {}, {y, b}}, Generate(dtype(), shape, [&](int64_t i) {
                          const double v = y.ElementAsDouble(i);
                          return b.ElementAsDouble(i) * (1 - v * v);
                        })));
  }
}

TEST_P(GradientKernelsTest, SumToShapeOfSumsOverTheBroadcastDimensions) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 3}, {2, 3}}, {{2, 3}, {3}},       {{2, 3}, {2, 1}},    {{2, 3}, {1, 3}},
      {{2, 3}, {}},     {{4, 2, 3}, {2, 1}}, {{2, 4, 3}, {4, 1}}, {{3, 2, 2, 5}, {2, 1, 5}},
      {{}, {}},         {{1, 3}, {3}},       {{0, 3}, {3}},       {{5, 6}, {1, 1}}};
  for (const auto& [grad_shape, like_shape] : cases) {
    Tensor grad = random_.Uniform(dtype(), grad_shape);
    Tensor like = random_.Uniform(DType::kInt32, like_shape, -3, 3);  // only its shape counts
    EXPECT_TRUE(Matches({"SumToShapeOf", {}, {grad, like}}, RefSumToShapeOf(grad, like_shape)));
  }
}

TEST_P(GradientKernelsTest, SumToShapeOfRejectsALikeThatDoesNotBroadcast) {
  EXPECT_TRUE(KernelRejects(
      {"SumToShapeOf", {}, {random_.Uniform(dtype(), {2, 3}), random_.Uniform(dtype(), {2})}},
      "does not broadcast"));
  EXPECT_TRUE(KernelRejects(
      {"SumToShapeOf", {}, {random_.Uniform(dtype(), {3}), random_.Uniform(dtype(), {2, 3})}},
      "does not broadcast"));
  EXPECT_TRUE(InferenceRejects(
      {"SumToShapeOf", {}, {random_.Uniform(dtype(), {2, 3}), random_.Uniform(dtype(), {4})}}));
}

TEST_P(GradientKernelsTest, BroadcastToShapeOfUndoesEveryKindOfReduction) {
  const Shape like{2, 3, 4};
  struct Case {
    std::optional<std::vector<int64_t>> axis;  // nullopt = every axis
    std::vector<bool> reduced;
  };
  const std::vector<Case> cases = {{std::nullopt, {true, true, true}},
                                   {std::vector<int64_t>{}, {false, false, false}},
                                   {std::vector<int64_t>{0}, {true, false, false}},
                                   {std::vector<int64_t>{1}, {false, true, false}},
                                   {std::vector<int64_t>{-1}, {false, false, true}},
                                   {std::vector<int64_t>{0, 2}, {true, false, true}},
                                   {std::vector<int64_t>{2, 0, 1}, {true, true, true}}};
  for (const Case& c : cases) {
    for (bool keep_dims : {false, true}) {
      std::vector<int64_t> x_dims;
      for (int d = 0; d < like.rank(); ++d) {
        if (!c.reduced[d]) {
          x_dims.push_back(like.dim(d));
        } else if (keep_dims) {
          x_dims.push_back(1);
        }
      }
      Tensor x = random_.Uniform(dtype(), Shape(x_dims));
      AttrMap attrs = {{"keep_dims", keep_dims}};
      if (c.axis) attrs["axis"] = *c.axis;
      EXPECT_TRUE(Matches({"BroadcastToShapeOf", attrs, {x, random_.Uniform(dtype(), like)}},
                          RefBroadcastToShapeOf(x, like, c.reduced, keep_dims)));
    }
  }
  // An int axis, as a reduction node may carry it.
  Tensor x = random_.Uniform(dtype(), {2, 4});
  EXPECT_TRUE(
      Matches({"BroadcastToShapeOf", {{"axis", int64_t{1}}}, {x, random_.Uniform(dtype(), like)}},
              RefBroadcastToShapeOf(x, like, {false, true, false}, false)));
}

TEST_P(GradientKernelsTest, BroadcastToShapeOfRejectsAnXThatIsNotTheReduction) {
  Tensor like = random_.Uniform(dtype(), {2, 3});
  EXPECT_TRUE(KernelRejects({"BroadcastToShapeOf",
                             {{"axis", std::vector<int64_t>{1}}},
                             {random_.Uniform(dtype(), {3}), like}},
                            "is not the reduction"));
  EXPECT_TRUE(KernelRejects({"BroadcastToShapeOf",
                             {{"axis", std::vector<int64_t>{2}}},
                             {random_.Uniform(dtype(), {2}), like}},
                            "out of range"));
  EXPECT_TRUE(InferenceRejects({"BroadcastToShapeOf",
                                {{"axis", std::vector<int64_t>{0}}},
                                {random_.Uniform(dtype(), {2}), like}}));
}

TEST_P(GradientKernelsTest, PadToShapeOfPlacesTheGradientAtBeginAndZerosElsewhere) {
  struct Case {
    Shape grad, like;
    std::vector<int64_t> begin;
  };
  const std::vector<Case> cases = {{{2, 2}, {3, 4}, {1, 1}},
                                   {{3, 4}, {3, 4}, {0, 0}},
                                   {{1, 4}, {3, 4}, {2, 0}},
                                   {{2}, {5}, {3}},
                                   {{}, {}, {}},
                                   {{2, 1, 3}, {3, 2, 5}, {1, 1, 2}},
                                   {{0, 4}, {3, 4}, {1, 0}}};
  for (const Case& c : cases) {
    Tensor grad = random_.Uniform(dtype(), c.grad);
    EXPECT_TRUE(
        Matches({"PadToShapeOf", {{"begin", c.begin}}, {grad, random_.Uniform(dtype(), c.like)}},
                RefPadToShapeOf(grad, c.like, c.begin)));
  }
}

TEST_P(GradientKernelsTest, PadToShapeOfRejectsAGradientThatDoesNotFit) {
  EXPECT_TRUE(KernelRejects({"PadToShapeOf",
                             {{"begin", std::vector<int64_t>{2, 0}}},
                             {random_.Uniform(dtype(), {2, 4}), random_.Uniform(dtype(), {3, 4})}},
                            "does not fit"));
  EXPECT_TRUE(
      InferenceRejects({"PadToShapeOf",
                        {{"begin", std::vector<int64_t>{0}}},
                        {random_.Uniform(dtype(), {2, 4}), random_.Uniform(dtype(), {3, 4})}}));
}

TEST_P(GradientKernelsTest, SliceConcatPartReturnsEachInputsPartAlongTheAxis) {
  struct Case {
    std::vector<Shape> parts;
    int axis;
  };
  const std::vector<Case> cases = {{{{2, 3}, {2, 1}, {2, 4}}, 1},
                                   {{{1, 3}, {3, 3}}, 0},
                                   {{{2, 2, 3}, {2, 1, 3}}, -2},
                                   {{{4}, {0}, {2}}, 0},
                                   {{{2, 3}}, -1}};
  for (const Case& c : cases) {
    const int rank = c.parts[0].rank();
    const int axis = c.axis < 0 ? c.axis + rank : c.axis;
    std::vector<int64_t> dims = c.parts[0].dims();
    dims[axis] = 0;
    for (const Shape& p : c.parts) dims[axis] += p.dim(axis);
    Tensor grad = random_.Uniform(dtype(), Shape(dims));
    std::vector<Tensor> inputs = {grad};
    for (const Shape& p : c.parts) inputs.push_back(random_.Uniform(dtype(), p));
    for (int index = 0; index < static_cast<int>(c.parts.size()); ++index) {
      EXPECT_TRUE(Matches(
          {"SliceConcatPart", {{"axis", int64_t{c.axis}}, {"index", int64_t{index}}}, inputs},
          RefSliceConcatPart(grad, c.parts, axis, index)));
    }
  }
}

TEST_P(GradientKernelsTest, SliceConcatPartRejectsPartsThatDoNotMakeUpTheGradient) {
  Tensor grad = random_.Uniform(dtype(), {2, 5});
  EXPECT_TRUE(
      KernelRejects({"SliceConcatPart",
                     {{"axis", int64_t{1}}, {"index", int64_t{0}}},
                     {grad, random_.Uniform(dtype(), {2, 3}), random_.Uniform(dtype(), {2, 3})}},
                    "add up to"));
  EXPECT_TRUE(
      KernelRejects({"SliceConcatPart",
                     {{"axis", int64_t{1}}, {"index", int64_t{0}}},
                     {grad, random_.Uniform(dtype(), {3, 2}), random_.Uniform(dtype(), {2, 3})}},
                    "does not match"));
  EXPECT_TRUE(InferenceRejects(
      {"SliceConcatPart",
       {{"axis", int64_t{1}}, {"index", int64_t{2}}},
       {grad, random_.Uniform(dtype(), {2, 2}), random_.Uniform(dtype(), {2, 3})}}));
}

TEST_P(GradientKernelsTest, SizeCountsTheElements) {
  for (const Shape& shape : {Shape{}, Shape{0, 3}, Shape{2, 3, 4}}) {
    EXPECT_TRUE(Matches({"Size", {}, {random_.Uniform(dtype(), shape)}},
                        Tensor::Scalar(static_cast<int32_t>(shape.num_elements()))));
    EXPECT_TRUE(Matches({"Size", {{"out_type", DType::kInt64}}, {random_.Uniform(dtype(), shape)}},
                        Tensor::Scalar(shape.num_elements())));
  }
}

INSTANTIATE_TEST_SUITE_P(FloatDTypes, GradientKernelsTest,
                         ::testing::Values(DType::kFloat32, DType::kFloat64),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

}  // namespace
}  // namespace actorflow
