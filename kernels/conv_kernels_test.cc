// CPU convolution and pooling kernels (Conv2D and its two backprops, MaxPool, AvgPool,
// MaxPoolGrad, AvgPoolGrad) against the reference kernels in float32 and float64, over
// strides 1 and 2, SAME and VALID padding, batch and channel counts above 1, windows
// that do not divide the input, and empty batches; plus the attr and shape errors that
// graph building or the kernel must report.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "graph/tensor.h"
#include "kernels/kernels_test_util.h"

namespace actorflow {
namespace {

using Ints = std::vector<int64_t>;

class ConvKernelTest : public ::testing::TestWithParam<DType> {
 protected:
  DType dtype() const { return GetParam(); }
  Tensor Random(const Shape& shape) { return random_.Uniform(dtype(), shape, -1.0, 1.0); }
  // Sums of up to a few hundred products: float32 needs a looser bound than the default.
  Tolerance Tol() const {
    return dtype() == DType::kFloat32 ? Tolerance{1e-4, 1e-4} : Tolerance{1e-12, 1e-12};
  }
  RandomTensors random_{29};
};

INSTANTIATE_TEST_SUITE_P(Floating, ConvKernelTest, ::testing::ValuesIn(kFloatDTypes),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

struct ConvCase {
  Shape input;   // [N,H,W,C]
  Shape filter;  // [KH,KW,C,O]
  int64_t stride_h, stride_w;
};

const std::vector<ConvCase> kConvCases = {
    {{1, 5, 5, 1}, {3, 3, 1, 1}, 1, 1}, {{2, 7, 6, 3}, {3, 2, 3, 4}, 2, 2},
    {{3, 8, 8, 2}, {5, 5, 2, 3}, 1, 2}, {{2, 4, 9, 5}, {1, 1, 5, 2}, 2, 1},
    {{1, 6, 6, 4}, {2, 2, 4, 8}, 2, 2}, {{2, 3, 3, 2}, {3, 3, 2, 2}, 3, 3},
    {{0, 5, 5, 2}, {3, 3, 2, 2}, 1, 1}, {{2, 10, 7, 3}, {4, 3, 3, 5}, 3, 2},
    {{2, 5, 4, 3}, {1, 1, 3, 4}, 1, 1},  // 1x1 at stride 1: the kernels' im2col-free path
};

AttrMap ConvAttrs(const ConvCase& c, const std::string& padding) {
  return {{"strides", Ints{1, c.stride_h, c.stride_w, 1}}, {"padding", padding}};
}

Tensor Sizes(const Shape& shape) {
  std::vector<int32_t> v(shape.dims().begin(), shape.dims().end());
  return Tensor::FromVector(v);
}

// The convolution's output shape, computed independently for the backprop cases.
Shape ConvOutput(const Shape& in, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                 const std::string& padding, int64_t channels) {
  if (padding == "SAME") {
    return Shape{in.dim(0), (in.dim(1) + sh - 1) / sh, (in.dim(2) + sw - 1) / sw, channels};
  }
  return Shape{in.dim(0), (in.dim(1) - kh) / sh + 1, (in.dim(2) - kw) / sw + 1, channels};
}

TEST_P(ConvKernelTest, Conv2DMatchesReference) {
  for (const ConvCase& c : kConvCases) {
    for (const char* padding : {"SAME", "VALID"}) {
      KernelTestCase t{"Conv2D", ConvAttrs(c, padding), {Random(c.input), Random(c.filter)}};
      t.tolerance = Tol();
      EXPECT_TRUE(MatchesReference(t));
    }
  }
}

TEST_P(ConvKernelTest, Conv2DBackpropsMatchReference) {
  for (const ConvCase& c : kConvCases) {
    for (const char* padding : {"SAME", "VALID"}) {
      const Shape out = ConvOutput(c.input, c.filter.dim(0), c.filter.dim(1), c.stride_h,
                                   c.stride_w, padding, c.filter.dim(3));
      KernelTestCase input_grad{"Conv2DBackpropInput",
                                ConvAttrs(c, padding),
                                {Sizes(c.input), Random(c.filter), Random(out)}};
      input_grad.tolerance = Tol();
      EXPECT_TRUE(MatchesReference(input_grad));
      input_grad.const_inputs = {0};  // inference reads the sizes
      EXPECT_TRUE(MatchesReference(input_grad));
      KernelTestCase filter_grad{"Conv2DBackpropFilter",
                                 ConvAttrs(c, padding),
                                 {Random(c.input), Sizes(c.filter), Random(out)}};
      filter_grad.tolerance = Tol();
      EXPECT_TRUE(MatchesReference(filter_grad));
      filter_grad.const_inputs = {1};
      EXPECT_TRUE(MatchesReference(filter_grad));
    }
  }
}

TEST_P(ConvKernelTest, Conv2DOfAKnownImageHasTheHandComputedValues) {
  // A 3x3 image of 1..9, an all-ones 2x2 filter, stride 1: VALID sums each 2x2 block;
  // SAME pads one row and one column after (the larger half goes after).
  const Tensor x = MakeTensor(dtype(), Shape{1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor f = MakeTensor(dtype(), Shape{2, 2, 1, 1}, {1, 1, 1, 1});
  const ConvCase c{x.shape(), f.shape(), 1, 1};
  StatusOr<KernelRun> valid = RunKernel({"Conv2D", ConvAttrs(c, "VALID"), {x, f}});
  ASSERT_TRUE(valid.ok()) << valid.status().ToString();
  EXPECT_TRUE(TensorsClose(MakeTensor(dtype(), Shape{1, 2, 2, 1}, {12, 16, 24, 28}),
                           valid->outputs[0], {}));
  StatusOr<KernelRun> same = RunKernel({"Conv2D", ConvAttrs(c, "SAME"), {x, f}});
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_TRUE(TensorsClose(
      MakeTensor(dtype(), Shape{1, 3, 3, 1}, {12, 16, 9, 24, 28, 15, 15, 17, 9}),
      same->outputs[0], {}));
}

struct PoolCase {
  Shape input;
  int64_t k_h, k_w, stride_h, stride_w;
};

const std::vector<PoolCase> kPoolCases = {
    {{1, 4, 4, 1}, 2, 2, 2, 2}, {{2, 5, 5, 3}, 2, 2, 2, 2}, {{2, 7, 6, 2}, 3, 3, 2, 2},
    {{3, 5, 8, 4}, 3, 2, 1, 1}, {{1, 6, 6, 2}, 1, 1, 2, 2}, {{2, 3, 3, 2}, 3, 3, 1, 1},
    {{0, 4, 4, 2}, 2, 2, 2, 2}, {{2, 9, 4, 3}, 4, 3, 3, 1},
};

AttrMap PoolAttrs(const PoolCase& c, const std::string& padding) {
  return {{"ksize", Ints{1, c.k_h, c.k_w, 1}},
          {"strides", Ints{1, c.stride_h, c.stride_w, 1}},
          {"padding", padding}};
}

TEST_P(ConvKernelTest, PoolingAndItsGradientsMatchReference) {
  for (const PoolCase& c : kPoolCases) {
    for (const char* padding : {"SAME", "VALID"}) {
      const AttrMap attrs = PoolAttrs(c, padding);
      const Shape out =
          ConvOutput(c.input, c.k_h, c.k_w, c.stride_h, c.stride_w, padding, c.input.dim(3));
      const Tensor x = Random(c.input);
      for (const char* op : {"MaxPool", "AvgPool"}) {
        KernelTestCase t{op, attrs, {x}};
        t.tolerance = Tol();
        EXPECT_TRUE(MatchesReference(t));
      }
      KernelTestCase max_grad{"MaxPoolGrad", attrs, {x, Random(out), Random(out)}};
      max_grad.tolerance = Tol();
      EXPECT_TRUE(MatchesReference(max_grad));
      KernelTestCase avg_grad{"AvgPoolGrad", attrs, {Sizes(c.input), Random(out)}};
      avg_grad.tolerance = Tol();
      EXPECT_TRUE(MatchesReference(avg_grad));
      avg_grad.const_inputs = {0};
      EXPECT_TRUE(MatchesReference(avg_grad));
    }
  }
}

TEST_P(ConvKernelTest, MaxPoolGradSendsATiedWindowsGradientToItsFirstMaximum) {
  // Each 2x2 window of channel 0 is all ties; channel 1 ties at its last two pixels.
  // The gradient goes to the first maximum in row-major window order (the reference's
  // rule, and the element MaxPool's strict comparison keeps).
  const Tensor x = MakeTensor(dtype(), Shape{1, 2, 2, 2}, {5, 1, 5, 2, 5, 7, 5, 7});
  const Tensor grad = MakeTensor(dtype(), Shape{1, 1, 1, 2}, {10, 20});
  const Tensor pooled = MakeTensor(dtype(), Shape{1, 1, 1, 2}, {5, 7});
  KernelTestCase t{"MaxPoolGrad", PoolAttrs({x.shape(), 2, 2, 2, 2}, "VALID"), {x, pooled, grad}};
  StatusOr<KernelRun> run = RunKernel(t);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_TRUE(TensorsClose(MakeTensor(dtype(), Shape{1, 2, 2, 2}, {10, 0, 0, 0, 0, 20, 0, 0}),
                           run->outputs[0], {}));
  EXPECT_TRUE(MatchesReference(t));

  // A NaN first pixel is the window's maximum (nothing compares greater); a later NaN
  // never is.
  const Tensor with_nan = MakeTensor(dtype(), Shape{1, 2, 2, 2}, {NAN, 1, 3, NAN, 4, 2, 4, 2});
  t.inputs = {with_nan, pooled, grad};
  run = RunKernel(t);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_TRUE(TensorsClose(MakeTensor(dtype(), Shape{1, 2, 2, 2}, {10, 0, 0, 0, 0, 20, 0, 0}),
                           run->outputs[0], {}));
}

TEST_P(ConvKernelTest, SameAvgPoolDividesByTheUnpaddedCount) {
  // 3x3 image, 2x2 windows, stride 2, SAME: windows of 4, 2, 2 and 1 unpadded elements.
  const Tensor x = MakeTensor(dtype(), Shape{1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  StatusOr<KernelRun> run =
      RunKernel({"AvgPool", PoolAttrs({x.shape(), 2, 2, 2, 2}, "SAME"), {x}});
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_TRUE(TensorsClose(MakeTensor(dtype(), Shape{1, 2, 2, 1}, {3, 4.5, 7.5, 9}),
                           run->outputs[0], {}));
}

TEST_P(ConvKernelTest, BadShapesAndAttrsAreInvalidArgument) {
  const Tensor x = Random(Shape{1, 4, 4, 2});
  const ConvCase c{x.shape(), {5, 5, 2, 1}, 1, 1};
  EXPECT_TRUE(FailsWith({"Conv2D", ConvAttrs(c, "VALID"), {x, Random(Shape{5, 5, 2, 1})}},
                        Code::kInvalidArgument, "larger than"));
  EXPECT_TRUE(FailsWith({"Conv2D", ConvAttrs(c, "SAME"), {x, Random(Shape{3, 3, 3, 1})}},
                        Code::kInvalidArgument, "channels"));
  EXPECT_TRUE(FailsWith({"Conv2D", ConvAttrs(c, "SAME"), {Random(Shape{4, 4, 2}),
                                                         Random(Shape{3, 3, 2, 1})}},
                        Code::kInvalidArgument, "rank"));
  EXPECT_TRUE(FailsWith({"Conv2D", ConvAttrs({x.shape(), {1, 1, 2, 1}, 0, 1}, "SAME"),
                         {x, Random(Shape{1, 1, 2, 1})}},
                        Code::kInvalidArgument, "strides"));
  EXPECT_TRUE(FailsWith({"Conv2D", ConvAttrs({x.shape(), {1, 1, 2, 1}, -1, 1}, "SAME"),
                         {x, Random(Shape{1, 1, 2, 1})}},
                        Code::kInvalidArgument, "strides"));
  EXPECT_TRUE(FailsWith({"Conv2D", ConvAttrs(c, "FULL"), {x, Random(Shape{1, 1, 2, 1})}},
                        Code::kInvalidArgument, "padding"));
  EXPECT_TRUE(FailsWith({"MaxPool", PoolAttrs({x.shape(), 5, 1, 1, 1}, "VALID"), {x}},
                        Code::kInvalidArgument, "larger than"));
  EXPECT_TRUE(FailsWith({"AvgPool", PoolAttrs({x.shape(), 0, 1, 1, 1}, "VALID"), {x}},
                        Code::kInvalidArgument, "ksize"));
  EXPECT_TRUE(FailsWith({"AvgPool", PoolAttrs({x.shape(), 2, 2, 1, 1}, "VALID"),
                         {Random(Shape{4, 4})}},
                        Code::kInvalidArgument, "rank"));
}

// Shape inference: output shapes at build time, and errors that name the node.
TEST(ConvShapeInferenceTest, OutputShapesFollowTensorFlowGeometry) {
  Scope root = Scope::NewRootScope();
  const Output x = Placeholder(root, DType::kFloat32, Shape{2, 7, 6, 3});
  const Output f = Placeholder(root, DType::kFloat32, Shape{3, 2, 3, 5});
  EXPECT_EQ(Conv2D(root, x, f, {1, 2, 2, 1}, "SAME").shape(), (Shape{2, 4, 3, 5}));
  EXPECT_EQ(Conv2D(root, x, f, {1, 2, 2, 1}, "VALID").shape(), (Shape{2, 3, 3, 5}));
  EXPECT_EQ(MaxPool(root, x, {1, 3, 3, 1}, {1, 2, 2, 1}, "VALID").shape(), (Shape{2, 3, 2, 3}));
  EXPECT_EQ(AvgPool(root, x, {1, 2, 2, 1}, {1, 1, 1, 1}, "SAME").shape(), (Shape{2, 7, 6, 3}));
  const Output unknown = Placeholder(root, DType::kFloat32, Shape{-1, -1, 6, 3});
  EXPECT_EQ(Conv2D(root, unknown, f, {1, 1, 1, 1}, "VALID").shape(), (Shape{-1, -1, 5, 5}));
  EXPECT_TRUE(root.ok()) << root.status().ToString();
}

TEST(ConvShapeInferenceTest, BadShapesAndAttrsFailTheBuildNamingTheNode) {
  struct BadCase {
    const char* what;
    // `named` names the op under test "bad_node"; other nodes are built in `root`.
    Output (*build)(const Scope& root, const Scope& named, const Output& x);
  };
  const std::vector<BadCase> cases = {
      {"window larger than the input",
       [](const Scope& root, const Scope& s, const Output& x) {
         return Conv2D(s, x, Placeholder(root, DType::kFloat32, Shape{5, 5, 2, 1}), {1, 1, 1, 1},
                       "VALID");
       }},
      {"channel mismatch",
       [](const Scope& root, const Scope& s, const Output& x) {
         return Conv2D(s, x, Placeholder(root, DType::kFloat32, Shape{3, 3, 4, 1}), {1, 1, 1, 1},
                       "SAME");
       }},
      {"zero stride",
       [](const Scope&, const Scope& s, const Output& x) {
         return MaxPool(s, x, {1, 2, 2, 1}, {1, 0, 1, 1}, "SAME");
       }},
      {"negative stride",
       [](const Scope&, const Scope& s, const Output& x) {
         return AvgPool(s, x, {1, 2, 2, 1}, {1, 1, -2, 1}, "SAME");
       }},
      {"rank 3 input",
       [](const Scope& root, const Scope& s, const Output&) {
         return MaxPool(s, Placeholder(root, DType::kFloat32, Shape{4, 4, 2}), {1, 2, 2, 1},
                        {1, 1, 1, 1}, "SAME");
       }},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.what);
    Scope root = Scope::NewRootScope();
    const Output x = Placeholder(root, DType::kFloat32, Shape{1, 4, 4, 2});
    c.build(root, root.WithOpName("bad_node"), x);
    EXPECT_EQ(root.status().code(), Code::kInvalidArgument) << root.status().ToString();
    EXPECT_NE(root.status().message().find("bad_node"), std::string::npos)
        << root.status().ToString();
  }
}

}  // namespace
}  // namespace actorflow
