// The shape ops (graph/shape_ops.h): CPU kernels against the reference kernels for
// every dtype they move (OneHot for its index and output dtypes), the errors that
// name a bad axis, shape or dtype (at build time and, for shapes unknown until then,
// at run time), CausalMask's values, and numeric gradient checks of every
// differentiable op.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/ops.h"
#include "graph/shape_ops.h"
#include "gtest/gtest.h"
#include "kernels/direct_session.h"
#include "kernels/gradient_check_util.h"
#include "kernels/kernels_test_util.h"
#include "kernels/reference/reference.h"

namespace actorflow {
namespace {

using Ints = std::vector<int64_t>;

class ShapeKernelTest : public ::testing::TestWithParam<DType> {
 protected:
  Tensor Random(const Shape& shape) { return random_.Uniform(GetParam(), shape, -9, 9); }
  RandomTensors random_{31};
};

INSTANTIATE_TEST_SUITE_P(AllDTypes, ShapeKernelTest, ::testing::ValuesIn(kAllDTypes),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

TEST_P(ShapeKernelTest, ExpandDimsAndSqueezeMatchReference) {
  const Tensor x = Random(Shape{2, 3});
  for (int64_t axis : {0, 1, 2, -1, -3}) {
    EXPECT_TRUE(MatchesReference({"ExpandDims", {{"axis", axis}}, {x}})) << axis;
  }
  EXPECT_TRUE(MatchesReference({"ExpandDims", {{"axis", int64_t{0}}}, {Random(Shape{})}}));
  const Tensor ones = Random(Shape{1, 2, 1, 3});
  for (const Ints& dims : {Ints{}, Ints{0}, Ints{-2}, Ints{0, 2}}) {
    EXPECT_TRUE(MatchesReference({"Squeeze", {{"squeeze_dims", dims}}, {ones}}));
  }
  EXPECT_TRUE(MatchesReference({"Squeeze", {}, {Random(Shape{1, 1})}}));  // to a scalar
  EXPECT_TRUE(MatchesReference({"Squeeze", {}, {Random(Shape{0, 1})}}));
}

TEST_P(ShapeKernelTest, PackUnpackAndSplitMatchReference) {
  const std::vector<Tensor> values = {Random(Shape{2, 3}), Random(Shape{2, 3}),
                                      Random(Shape{2, 3})};
  for (int64_t axis : {0, 1, 2, -1}) {
    EXPECT_TRUE(MatchesReference({"Pack", {{"axis", axis}}, values})) << axis;
  }
  EXPECT_TRUE(MatchesReference({"Pack", {}, {Random(Shape{}), Random(Shape{})}}));
  EXPECT_TRUE(MatchesReference({"Pack", {}, {Random(Shape{0, 2})}}));
  const Tensor cube = Random(Shape{3, 2, 4});
  EXPECT_TRUE(MatchesReference({"Unpack", {{"num", int64_t{3}}}, {cube}}));
  EXPECT_TRUE(MatchesReference({"Unpack", {{"num", int64_t{2}}, {"axis", int64_t{1}}}, {cube}}));
  EXPECT_TRUE(MatchesReference({"Unpack", {{"num", int64_t{4}}, {"axis", int64_t{-1}}}, {cube}}));
  EXPECT_TRUE(MatchesReference({"Unpack", {{"num", int64_t{2}}}, {Random(Shape{2})}}));
  const Tensor grid = Random(Shape{4, 6});
  for (int64_t parts : {1, 2, 4}) {
    EXPECT_TRUE(MatchesReference({"Split", {{"num_split", parts}, {"axis", int64_t{0}}}, {grid}}));
  }
  EXPECT_TRUE(
      MatchesReference({"Split", {{"num_split", int64_t{3}}, {"axis", int64_t{-1}}}, {grid}}));
  EXPECT_TRUE(MatchesReference(
      {"Split", {{"num_split", int64_t{2}}, {"axis", int64_t{1}}}, {Random(Shape{0, 4})}}));
}

TEST_P(ShapeKernelTest, TileMatchesReference) {
  const Tensor x = Random(Shape{2, 3});
  for (const Ints& multiples : {Ints{1, 1}, Ints{2, 1}, Ints{1, 3}, Ints{3, 2}, Ints{0, 2}}) {
    EXPECT_TRUE(MatchesReference({"Tile", {{"multiples", multiples}}, {x}}));
  }
  EXPECT_TRUE(MatchesReference({"Tile", {{"multiples", Ints{}}}, {Random(Shape{})}}));
  EXPECT_TRUE(MatchesReference({"Tile", {{"multiples", Ints{2, 1, 3}}}, {Random(Shape{2, 1, 2})}}));
}

TEST_P(ShapeKernelTest, SelectMatchesReferenceElementwiseAndByRows) {
  RandomTensors coins(32);
  const Tensor t = Random(Shape{4, 3}), e = Random(Shape{4, 3});
  EXPECT_TRUE(MatchesReference({"Select", {}, {coins.Uniform(DType::kBool, Shape{4, 3}), t, e}}));
  EXPECT_TRUE(MatchesReference({"Select", {}, {coins.Uniform(DType::kBool, Shape{4}), t, e}}));
  EXPECT_TRUE(MatchesReference(
      {"Select", {}, {coins.Uniform(DType::kBool, Shape{}), Random(Shape{}), Random(Shape{})}}));
  EXPECT_TRUE(MatchesReference(
      {"Select",
       {},
       {coins.Uniform(DType::kBool, Shape{2}), Random(Shape{2, 0}), Random(Shape{2, 0})}}));
}

struct SliceSpec {
  Ints begin, end, strides;
  int64_t begin_mask = 0, end_mask = 0, shrink = 0;
  AttrMap Attrs() const {
    return {{"begin", begin},           {"end", end},           {"strides", strides},
            {"begin_mask", begin_mask}, {"end_mask", end_mask}, {"shrink_axis_mask", shrink}};
  }
};

// Positive and negative strides, negative and clamped bounds, masks, shrunk axes,
// empty results and a spec shorter than the rank.
const std::vector<SliceSpec> kSlices = {
    {{1, 0}, {3, 5}, {1, 1}},
    {{0, 0}, {4, 5}, {2, 2}},
    {{-1, -1}, {0, 0}, {-1, -2}},
    {{1, 0}, {-1, 0}, {1, -2}, 2, 2},    // x[1:-1, ::-2]
    {{0, 3}, {0, 4}, {1, 1}, 1, 1, 2},   // x[:, 3]
    {{-2, 0}, {0, 0}, {1, 1}, 0, 3, 1},  // x[-2, :]
    {{-100, 2}, {100, -100}, {1, -1}},   // clamped: x[:, 2::-1]
    {{3, 0}, {1, 5}, {1, 1}},            // empty
    {{2}, {4}, {1}},                     // x[2:4]
    {{3}, {0}, {-1}, 0, 0, 0},           // x[3:0:-1]
};

TEST_P(ShapeKernelTest, StridedSliceAndItsGradMatchReference) {
  const Tensor x = Random(Shape{4, 5});
  for (const SliceSpec& spec : kSlices) {
    EXPECT_TRUE(MatchesReference({"StridedSlice", spec.Attrs(), {x}}));
    auto sliced = ReferenceCompute("StridedSlice", spec.Attrs(), {x}, {});
    ASSERT_TRUE(sliced.ok()) << sliced.status();
    const Tensor dy = Random((*sliced)[0].shape());
    EXPECT_TRUE(MatchesReference({"StridedSliceGrad", spec.Attrs(), {x, dy}}));
  }
  EXPECT_TRUE(MatchesReference(
      {"StridedSlice", SliceSpec{{0}, {0}, {1}, 0, 0, 1}.Attrs(), {Random(Shape{3})}}));
}

// Pins the semantics both implementations share to NumPy's (and TensorFlow's) for
// x = arange(20).reshape(4, 5): inferred shapes and the reference's values.
TEST(StridedSliceTest, ShapesAndValuesAreNumPys) {
  Scope root = Scope::NewRootScope();
  const Output x = Placeholder(root, DType::kFloat32, Shape{4, 5});
  const std::vector<Shape> want = {Shape{2, 5}, Shape{2, 3}, Shape{3, 2}, Shape{2, 3}, Shape{4},
                                   Shape{5},    Shape{4, 3}, Shape{0, 5}, Shape{2, 5}, Shape{3, 5}};
  ASSERT_EQ(want.size(), kSlices.size());
  for (size_t i = 0; i < kSlices.size(); ++i) {
    const SliceSpec& c = kSlices[i];
    const Output y =
        StridedSlice(root, x, c.begin, c.end, c.strides, c.begin_mask, c.end_mask, c.shrink);
    ASSERT_TRUE(root.ok()) << root.status();
    EXPECT_EQ(y.shape().ToString(), want[i].ToString()) << "slice " << i;
  }
  std::vector<double> values(20);
  for (int i = 0; i < 20; ++i) values[i] = i;
  const Tensor grid = MakeTensor(DType::kFloat64, {4, 5}, values);
  auto sliced = ReferenceCompute("StridedSlice", kSlices[3].Attrs(), {grid}, {});  // x[1:-1, ::-2]
  ASSERT_TRUE(sliced.ok()) << sliced.status();
  EXPECT_TRUE(
      TensorsClose(MakeTensor(DType::kFloat64, {2, 3}, {9, 7, 5, 14, 12, 10}), (*sliced)[0], {}));
  sliced = ReferenceCompute("StridedSlice", kSlices[2].Attrs(), {grid}, {});  // x[-1:0:-1, -1:0:-2]
  ASSERT_TRUE(sliced.ok()) << sliced.status();
  EXPECT_TRUE(
      TensorsClose(MakeTensor(DType::kFloat64, {3, 2}, {19, 17, 14, 12, 9, 7}), (*sliced)[0], {}));
}

TEST_P(ShapeKernelTest, MatrixBandPartMatchesReference) {
  const Tensor x = Random(Shape{2, 3, 4});
  for (const auto& [lower, upper] : std::vector<std::pair<int64_t, int64_t>>{
           {-1, 0}, {0, 0}, {1, 2}, {-1, -1}, {0, -1}, {5, 5}}) {
    EXPECT_TRUE(
        MatchesReference({"MatrixBandPart", {{"num_lower", lower}, {"num_upper", upper}}, {x}}));
  }
  EXPECT_TRUE(MatchesReference({"MatrixBandPart",
                                {{"num_lower", int64_t{1}}, {"num_upper", int64_t{0}}},
                                {Random(Shape{4, 3})}}));
}

TEST(OneHotKernelTest, MatchesReferenceForIndexAndOutputDTypesAndAxes) {
  for (DType index : kIntDTypes) {
    for (DType out : kFloatDTypes) {
      // -1 and 4 are outside [0, 4): rows of off_value, as TensorFlow.
      const Tensor ids = MakeTensor(index, {2, 3}, {0, 3, -1, 2, 4, 1});
      for (int64_t axis : {-1, 0, 1, 2}) {
        const AttrMap attrs = {{"depth", int64_t{4}},
                               {"axis", axis},
                               {"T", out},
                               {"on_value", 2.5},
                               {"off_value", -0.5}};
        EXPECT_TRUE(MatchesReference({"OneHot", attrs, {ids}})) << axis;
      }
      EXPECT_TRUE(MatchesReference(
          {"OneHot", {{"depth", int64_t{3}}, {"T", out}}, {MakeTensor(index, {}, {1})}}));
      EXPECT_TRUE(MatchesReference(
          {"OneHot", {{"depth", int64_t{0}}, {"T", out}}, {MakeTensor(index, {2}, {0, 1})}}));
    }
  }
}

// --- Errors -------------------------------------------------------------------------

TEST(ShapeKernelErrorTest, BadAxesShapesAndAttrsAreNamed) {
  const Tensor x = MakeTensor(DType::kFloat32, {2, 3}, {1, 2, 3, 4, 5, 6});
  const auto fails = [](const KernelTestCase& c, const std::string& substring) {
    return FailsWith(c, Code::kInvalidArgument, substring);
  };
  EXPECT_TRUE(fails({"ExpandDims", {{"axis", int64_t{3}}}, {x}}, "'axis' 3 is out of range"));
  EXPECT_TRUE(fails({"Squeeze", {{"squeeze_dims", Ints{1}}}, {x}},
                    "dimension 1 of x [2,3] has size 3, not 1"));
  EXPECT_TRUE(fails({"Squeeze", {{"squeeze_dims", Ints{2}}}, {x}}, "2 is out of range"));
  EXPECT_TRUE(fails({"Pack", {}, {x, MakeTensor(DType::kFloat32, {3, 2}, {1, 2, 3, 4, 5, 6})}},
                    "Pack value 1 has shape [3,2]"));
  EXPECT_TRUE(fails({"Pack", {{"axis", int64_t{-4}}}, {x}}, "'axis' -4 is out of range"));
  EXPECT_TRUE(fails({"Unpack", {{"num", int64_t{3}}}, {x}}, "the dimension there is 2"));
  EXPECT_TRUE(fails({"Split", {{"num_split", int64_t{2}}, {"axis", int64_t{1}}}, {x}},
                    "dimension 3 is not divisible by num_split 2"));
  EXPECT_TRUE(fails({"Split", {{"num_split", int64_t{1}}, {"axis", int64_t{2}}}, {x}},
                    "'axis' 2 is out of range"));
  EXPECT_TRUE(fails({"Tile", {{"multiples", Ints{2}}}, {x}}, "needs one entry per axis"));
  EXPECT_TRUE(fails({"Tile", {{"multiples", Ints{2, -1}}}, {x}}, "negative"));
  EXPECT_TRUE(fails({"StridedSlice", SliceSpec{{0, 0}, {1, 1}, {1, 0}}.Attrs(), {x}}, "is 0"));
  EXPECT_TRUE(fails({"StridedSlice", SliceSpec{{0, 3}, {0, 4}, {1, 1}, 0, 0, 2}.Attrs(), {x}},
                    "outside its dimension 3"));
  EXPECT_TRUE(fails({"StridedSlice", SliceSpec{{0, 0, 0}, {1, 1, 1}, {1, 1, 1}}.Attrs(), {x}},
                    "at most the rank 2"));
  EXPECT_TRUE(fails({"Select", {}, {MakeTensor(DType::kBool, {3}, {1, 0, 1}), x, x}},
                    "must have the shape of t"));
  EXPECT_TRUE(fails({"MatrixBandPart",
                     {{"num_lower", int64_t{0}}, {"num_upper", int64_t{0}}},
                     {MakeTensor(DType::kFloat32, {3}, {1, 2, 3})}},
                    "MatrixBandPart input"));
  EXPECT_TRUE(fails({"OneHot",
                     {{"depth", int64_t{3}}, {"axis", int64_t{3}}},
                     {MakeTensor(DType::kInt32, {2, 2}, {0, 1, 2, 0})}},
                    "is out of range [-1, 2]"));
}

// Build-time dtype checks: the builders record an InvalidArgument naming the input.
TEST(ShapeKernelErrorTest, WrongDTypesAreRejectedWhenBuilding) {
  const auto error_of = [](const std::function<Output(const Scope&)>& build) {
    Scope root = Scope::NewRootScope();
    EXPECT_FALSE(build(root).valid());
    return root.status();
  };
  Status s = error_of([](const Scope& r) { return OneHot(r, Const(r, {1.f, 2.f}), 3); });
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("OneHot indices (input 0)"), std::string::npos) << s;
  s = error_of([](const Scope& r) {
    return OneHot(r, Const(r, Tensor::FromVector<int32_t>({1})), 3, 1, 0, -1, DType::kInt32);
  });
  EXPECT_NE(s.message().find("attr 'T' is int32"), std::string::npos) << s;
  s = error_of([](const Scope& r) {
    return Select(r, Const(r, Tensor::FromVector<int32_t>({1})), Const(r, {1.f}), Const(r, {2.f}));
  });
  EXPECT_NE(s.message().find("cond (input 0) must be bool, got int32"), std::string::npos) << s;
  s = error_of([](const Scope& r) {
    return Pack(r, {Const(r, {1.f}), Const(r, Tensor::FromVector<int32_t>({1}))});
  });
  EXPECT_NE(s.message().find("Pack value 1 has dtype int32"), std::string::npos) << s;
  s = error_of([](const Scope& r) { return CausalMask(r, -2); });
  EXPECT_NE(s.message().find("length -2"), std::string::npos) << s;
}

// Shapes unknown when the graph is built reach the kernels' own checks.
TEST(ShapeKernelErrorTest, KernelsCheckShapesUnknownAtBuildTime) {
  Scope root = Scope::NewRootScope();
  const Output x = Placeholder(root.WithOpName("x"), DType::kFloat32);
  const std::vector<Output> fetches = {
      Squeeze(root.WithOpName("squeeze"), x, {0}),
      Split(root.WithOpName("split"), x, 2, 1)[0],
      Unpack(root.WithOpName("unpack"), x, 3)[0],
      Tile(root.WithOpName("tile"), x, {2}),
  };
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = NewDirectSession(root.graph()).value();
  const Tensor value = MakeTensor(DType::kFloat32, {2, 3}, {1, 2, 3, 4, 5, 6});
  const std::vector<std::string> wants = {"dimension 0 of x [2,3] has size 2, not 1",
                                          "dimension 3 is not divisible by num_split 2",
                                          "the dimension there is 2", "needs one entry per axis"};
  for (size_t i = 0; i < fetches.size(); ++i) {
    std::vector<Tensor> out;
    const Status s = session->Run({{"x", value}}, {fetches[i].name()}, {}, &out);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
    EXPECT_NE(s.message().find(fetches[i].node->name()), std::string::npos) << s;
    EXPECT_NE(s.message().find(wants[i]), std::string::npos) << s;
  }
}

TEST(CausalMaskTest, ZeroOnAndBelowTheDiagonalMinusABillionAbove) {
  Scope root = Scope::NewRootScope();
  const Output mask = CausalMask(root, 4);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(mask.dtype(), DType::kFloat32);
  EXPECT_EQ(mask.shape(), Shape({4, 4}));
  auto session = NewDirectSession(root.graph()).value();
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {mask.name()}, {}, &out).ok());
  for (int64_t m = 0; m < 4; ++m) {
    for (int64_t n = 0; n < 4; ++n) {
      EXPECT_EQ(out[0].data<float>()[m * 4 + n], n <= m ? 0.0f : -1e9f) << m << "," << n;
    }
  }
}

// --- Gradients ----------------------------------------------------------------------

using gradient_check::GradientsMatch;
using gradient_check::Rng;
using gradient_check::ShapesOf;

TEST(ShapeGradientCheckTest, ExpandDimsSqueezeAndTile) {
  Rng rng(41);
  std::vector<Tensor> in = {rng.Uniform(Shape{2, 3})};
  EXPECT_TRUE(GradientsMatch(
      "ExpandDims " + ShapesOf(in), in,
      [](const Scope& s, const std::vector<Output>& x) { return ExpandDims(s, x[0], -2); }));
  EXPECT_TRUE(
      GradientsMatch("Tile " + ShapesOf(in), in, [](const Scope& s, const std::vector<Output>& x) {
        return Tile(s, x[0], {2, 3});
      }));
  in = {rng.Uniform(Shape{2, 1, 3, 1})};
  EXPECT_TRUE(GradientsMatch(
      "Squeeze all " + ShapesOf(in), in,
      [](const Scope& s, const std::vector<Output>& x) { return Squeeze(s, x[0]); }));
  EXPECT_TRUE(GradientsMatch(
      "Squeeze {1} " + ShapesOf(in), in,
      [](const Scope& s, const std::vector<Output>& x) { return Squeeze(s, x[0], {1}); }));
  in = {rng.Uniform(Shape{3})};
  EXPECT_TRUE(GradientsMatch(
      "Tile " + ShapesOf(in), in,
      [](const Scope& s, const std::vector<Output>& x) { return Tile(s, x[0], {4}); }));
}

// Unpack and Split use two of their three parts, multiplied: the unused part's
// gradient is zeros, the others each other's values.
TEST(ShapeGradientCheckTest, PackUnpackAndSplit) {
  Rng rng(42);
  std::vector<Tensor> in = {rng.Uniform(Shape{2, 3}), rng.Uniform(Shape{2, 3})};
  EXPECT_TRUE(
      GradientsMatch("Pack " + ShapesOf(in), in,
                     [](const Scope& s, const std::vector<Output>& x) { return Pack(s, x, 1); }));
  in = {rng.Uniform(Shape{2, 3, 2})};
  EXPECT_TRUE(GradientsMatch("Unpack " + ShapesOf(in), in,
                             [](const Scope& s, const std::vector<Output>& x) {
                               const std::vector<Output> parts = Unpack(s, x[0], 3, 1);
                               return Mul(s, parts[0], parts[2]);
                             }));
  in = {rng.Uniform(Shape{2, 6})};
  EXPECT_TRUE(
      GradientsMatch("Split " + ShapesOf(in), in, [](const Scope& s, const std::vector<Output>& x) {
        const std::vector<Output> parts = Split(s, x[0], 3, -1);
        return Mul(s, parts[2], parts[0]);
      }));
}

TEST(ShapeGradientCheckTest, SelectElementwiseAndByRows) {
  Rng rng(43);
  const std::vector<Tensor> in = {rng.Uniform(Shape{3, 2}), rng.Uniform(Shape{3, 2})};
  EXPECT_TRUE(GradientsMatch(
      "Select " + ShapesOf(in), in, [](const Scope& s, const std::vector<Output>& x) {
        const Output cond = Const(s, MakeTensor(DType::kBool, {3, 2}, {1, 0, 0, 1, 1, 0}));
        return Select(s, cond, x[0], x[1]);
      }));
  EXPECT_TRUE(GradientsMatch(
      "Select rows " + ShapesOf(in), in, [](const Scope& s, const std::vector<Output>& x) {
        return Select(s, Const(s, MakeTensor(DType::kBool, {3}, {0, 1, 0})), x[0], x[1]);
      }));
}

TEST(ShapeGradientCheckTest, StridedSliceAndMatrixBandPart) {
  Rng rng(44);
  std::vector<Tensor> in = {rng.Uniform(Shape{4, 5})};
  for (const SliceSpec& spec : kSlices) {
    EXPECT_TRUE(GradientsMatch("StridedSlice " + ShapesOf(in), in,
                               [&](const Scope& s, const std::vector<Output>& x) {
                                 return StridedSlice(s, x[0], spec.begin, spec.end, spec.strides,
                                                     spec.begin_mask, spec.end_mask, spec.shrink);
                               }));
  }
  in = {rng.Uniform(Shape{2, 3, 3})};
  EXPECT_TRUE(GradientsMatch(
      "MatrixBandPart " + ShapesOf(in), in,
      [](const Scope& s, const std::vector<Output>& x) { return MatrixBandPart(s, x[0], -1, 0); }));
  EXPECT_TRUE(GradientsMatch(
      "MatrixBandPart " + ShapesOf(in), in,
      [](const Scope& s, const std::vector<Output>& x) { return MatrixBandPart(s, x[0], 1, 1); }));
}

// The second derivative of StridedSlice goes through StridedSliceGrad's own rule.
TEST(ShapeGradientCheckTest, StridedSliceGradOfItsGradient) {
  Rng rng(45);
  const std::vector<Tensor> in = {rng.Uniform(Shape{2, 2})};
  EXPECT_TRUE(GradientsMatch(
      "StridedSliceGrad " + ShapesOf(in), in, [](const Scope& s, const std::vector<Output>& x) {
        const Output like =
            Const(s, Tensor::FromVector<double>(std::vector<double>(12, 0.0), Shape{4, 3}));
        return StridedSliceGrad(s, like, x[0], {0, 2}, {4, 0}, {2, -1});
      }));
}

}  // namespace
}  // namespace actorflow
