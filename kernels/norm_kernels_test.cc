// CPU kernels of FusedBatchNorm, FusedBatchNormGrad and Dropout against the reference
// kernels in float32 and float64 (training and inference, [N,C] and NHWC, one row, an
// empty batch, no channel), TF1's statistics on a hand-computed batch, Dropout's
// statistics and reproducibility, and the errors that graph building or the kernel
// must report naming the node. Shape inference and the builders are in
// norm_ops_test.cc.
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "graph/tensor.h"
#include "kernels/direct_session.h"
#include "kernels/kernels_test_util.h"

namespace actorflow {
namespace {

class NormKernelTest : public ::testing::TestWithParam<DType> {
 protected:
  DType dtype() const { return GetParam(); }
  Tensor Random(const Shape& shape, double lo = -1.0, double hi = 1.0) {
    return random_.Uniform(dtype(), shape, lo, hi);
  }
  Tensor Channels(int64_t c, double lo, double hi) { return Random(Shape{c}, lo, hi); }
  Tensor Empty() const { return Tensor(dtype(), Shape{0}); }
  static AttrMap Attrs(bool training, double epsilon = 0.001) {
    return {{"epsilon", epsilon}, {"is_training", training}};
  }
  RandomTensors random_{57};
};

INSTANTIATE_TEST_SUITE_P(Floating, NormKernelTest, ::testing::ValuesIn(kFloatDTypes),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

// [N,C] and NHWC; one row (M = 1: zero variance), an empty batch (NaN statistics), no
// channel, and a batch big enough for long per-channel sums.
const std::vector<Shape> kShapes = {{2, 3},    {4, 3, 5, 2}, {1, 4},  {1, 1, 1, 3},
                                    {0, 3},    {0, 2, 2, 3}, {3, 0},  {33, 17},
                                    {8, 7, 9, 16}};

TEST_P(NormKernelTest, FusedBatchNormTrainingMatchesReference) {
  for (const Shape& shape : kShapes) {
    const int64_t c = shape.dim(shape.rank() - 1);
    const Tensor x = Random(shape, -2, 3);
    const Tensor scale = Channels(c, 0.5, 2), offset = Channels(c, -1, 1);
    // The statistics are not read in training: empty, or [C] and ignored.
    EXPECT_TRUE(MatchesReference(
        {"FusedBatchNorm", Attrs(true), {x, scale, offset, Empty(), Empty()}}));
    EXPECT_TRUE(MatchesReference({"FusedBatchNorm",
                                  Attrs(true, 0.01),
                                  {x, scale, offset, Channels(c, -1, 1), Channels(c, 0.5, 2)}}));
  }
}

TEST_P(NormKernelTest, FusedBatchNormInferenceMatchesReference) {
  for (const Shape& shape : kShapes) {
    const int64_t c = shape.dim(shape.rank() - 1);
    EXPECT_TRUE(MatchesReference({"FusedBatchNorm",
                                  Attrs(false),
                                  {Random(shape, -2, 3), Channels(c, 0.5, 2), Channels(c, -1, 1),
                                   Channels(c, -1, 1), Channels(c, 0.1, 2)}}));
  }
}

TEST_P(NormKernelTest, TrainingStatisticsStayAccurateForALargeMean) {
  // Values 1000 + [-1, 1): E[x^2] - E[x]^2 would cancel most digits in float32.
  const Tensor x = Random(Shape{64, 5}, 999, 1001);
  KernelTestCase c{"FusedBatchNorm", Attrs(true),
                   {x, Channels(5, 0.5, 2), Channels(5, -1, 1), Empty(), Empty()}};
  if (dtype() == DType::kFloat32) c.tolerance = Tolerance{1e-4, 1e-4};  // x itself rounds
  EXPECT_TRUE(MatchesReference(c));
}

TEST_P(NormKernelTest, FusedBatchNormGradMatchesReference) {
  for (const Shape& shape : kShapes) {
    const int64_t c = shape.dim(shape.rank() - 1);
    for (bool training : {true, false}) {
      EXPECT_TRUE(MatchesReference({"FusedBatchNormGrad",
                                    Attrs(training),
                                    {Random(shape), Random(shape, -2, 3), Channels(c, 0.5, 2),
                                     Channels(c, -1, 1), Channels(c, 0.1, 2)}}));
    }
  }
}

TEST_P(NormKernelTest, TrainingReturnsTheBatchMeanAndTheBesselCorrectedVariance) {
  // One channel of 1, 2, 3, 4: mean 2.5, biased variance 1.25, unbiased 5/3.
  const Tensor x = MakeTensor(dtype(), Shape{4, 1}, {1, 2, 3, 4});
  const Tensor one = MakeTensor(dtype(), Shape{1}, {1});
  const Tensor zero = MakeTensor(dtype(), Shape{1}, {0});
  StatusOr<KernelRun> run =
      RunKernel({"FusedBatchNorm", Attrs(true, 0.0), {x, one, zero, Empty(), Empty()}});
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_TRUE(run->status.ok()) << run->status;
  const double sigma = std::sqrt(1.25);  // normalized with the biased variance
  EXPECT_TRUE(TensorsClose(MakeTensor(dtype(), Shape{4, 1},
                                      {-1.5 / sigma, -0.5 / sigma, 0.5 / sigma, 1.5 / sigma}),
                           run->outputs[0], {1e-6, 1e-6}));
  EXPECT_TRUE(TensorsClose(MakeTensor(dtype(), Shape{1}, {2.5}), run->outputs[1], {}));
  EXPECT_TRUE(TensorsClose(MakeTensor(dtype(), Shape{1}, {5.0 / 3.0}), run->outputs[2],
                           {1e-7, 0}));
}

TEST_P(NormKernelTest, AnEmptyBatchHasNaNStatisticsInTraining) {
  StatusOr<KernelRun> run = RunKernel({"FusedBatchNorm", Attrs(true),
                                       {Random(Shape{0, 2}), Channels(2, 1, 2), Channels(2, 0, 1),
                                        Empty(), Empty()}});
  ASSERT_TRUE(run.ok() && run->status.ok());
  for (int k : {1, 2}) EXPECT_TRUE(std::isnan(run->outputs[k].ElementAsDouble(0))) << k;
}

TEST_P(NormKernelTest, DropoutMatchesReference) {
  for (const Shape& shape : {Shape{}, Shape{7}, Shape{4, 5}, Shape{2, 3, 4, 5}, Shape{0, 3},
                             Shape{3, 200}}) {
    for (double keep_prob : {0.1, 0.5, 0.9, 1.0}) {
      for (int64_t seed : {int64_t{0}, int64_t{7}, int64_t{-3}}) {
        EXPECT_TRUE(MatchesReference(
            {"Dropout", {{"keep_prob", keep_prob}, {"seed", seed}}, {Random(shape)}}));
      }
    }
  }
}

TEST_P(NormKernelTest, DropoutKeepsAboutKeepProbAndScalesTheKeptValues) {
  const Tensor x = Random(Shape{200, 500}, 0.5, 1.5);  // never 0: a kept value stays non-zero
  StatusOr<KernelRun> run = RunKernel({"Dropout", {{"keep_prob", 0.3}, {"seed", 11}}, {x}});
  ASSERT_TRUE(run.ok() && run->status.ok());
  int64_t kept = 0;
  const double scale = static_cast<double>(static_cast<float>(1.0 / 0.3));
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    const double m = run->outputs[1].ElementAsDouble(i);
    const double y = run->outputs[0].ElementAsDouble(i);
    if (m == 0) {
      EXPECT_EQ(y, 0.0) << i;
      continue;
    }
    ++kept;
    EXPECT_NEAR(m, scale, 1e-6 * scale) << i;
    EXPECT_NEAR(y, x.ElementAsDouble(i) / 0.3, 1e-5 * std::fabs(y)) << i;
  }
  // 100000 draws: the kept fraction is within 5 standard deviations (0.0072) of 0.3.
  EXPECT_NEAR(static_cast<double>(kept) / x.NumElements(), 0.3, 0.0072);
}

// Runs Dropout(x) `runs` times in one session; returns the masks.
std::vector<Tensor> DropoutMasks(const Tensor& x, int64_t seed, int runs) {
  Scope root = Scope::NewRootScope();
  const DropoutResult d = Dropout(root.WithOpName("drop"), Const(root, x), 0.5, seed);
  EXPECT_TRUE(root.ok()) << root.status();
  auto session = NewDirectSession(root.graph());
  EXPECT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> masks;
  for (int r = 0; r < runs && session.ok(); ++r) {
    std::vector<Tensor> out;
    const Status s = (*session)->Run({}, {d.mask.name()}, {}, &out);
    EXPECT_TRUE(s.ok()) << s;
    if (s.ok()) masks.push_back(out[0]);
  }
  return masks;
}

TEST_P(NormKernelTest, DropoutMasksAreReproducibleFromTheSeedAndNewEveryRun) {
  const Tensor x = Random(Shape{8, 16});
  const std::vector<Tensor> first = DropoutMasks(x, 5, 3);
  const std::vector<Tensor> again = DropoutMasks(x, 5, 3);
  const std::vector<Tensor> other_seed = DropoutMasks(x, 6, 1);
  ASSERT_EQ(first.size(), 3u);
  ASSERT_EQ(again.size(), 3u);
  ASSERT_EQ(other_seed.size(), 1u);
  for (int r = 0; r < 3; ++r) EXPECT_TRUE(TensorsEqual(first[r], again[r])) << "run " << r;
  EXPECT_FALSE(TensorsEqual(first[0], first[1]));
  EXPECT_FALSE(TensorsEqual(first[1], first[2]));
  EXPECT_FALSE(TensorsEqual(first[0], other_seed[0]));
  // The draw does not depend on the dtype: the other dtype keeps the same elements.
  const DType other = dtype() == DType::kFloat32 ? DType::kFloat64 : DType::kFloat32;
  const std::vector<Tensor> other_dtype = DropoutMasks(MakeTensor(other, x.shape(),
                                                                  std::vector<double>(128, 1.0)),
                                                       5, 1);
  ASSERT_EQ(other_dtype.size(), 1u);
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    EXPECT_EQ(first[0].ElementAsDouble(i) == 0, other_dtype[0].ElementAsDouble(i) == 0) << i;
  }
}

// --- Bad input ------------------------------------------------------------------------

TEST_P(NormKernelTest, BadBatchNormInputsAreInvalidArgumentNamingTheNode) {
  const Tensor x = Random(Shape{2, 3, 3, 4});
  const Tensor c4 = Channels(4, 0.5, 2), c3 = Channels(3, 0.5, 2);
  EXPECT_TRUE(FailsWith({"FusedBatchNorm", Attrs(true),
                         {Random(Shape{2, 3, 4}), c4, c4, Empty(), Empty()}},
                        Code::kInvalidArgument, "rank 2 or 4"));
  EXPECT_TRUE(FailsWith({"FusedBatchNorm", Attrs(true), {Random(Shape{4}), c4, c4, c4, c4}},
                        Code::kInvalidArgument, "rank 2 or 4"));
  EXPECT_TRUE(FailsWith({"FusedBatchNorm", Attrs(true), {x, c3, c4, Empty(), Empty()}},
                        Code::kInvalidArgument, "scale [3] does not match the 4 channels"));
  EXPECT_TRUE(FailsWith({"FusedBatchNorm", Attrs(true), {x, c4, c3, Empty(), Empty()}},
                        Code::kInvalidArgument, "offset"));
  EXPECT_TRUE(FailsWith({"FusedBatchNorm", Attrs(false), {x, c4, c4, c3, c4}},
                        Code::kInvalidArgument, "mean"));
  EXPECT_TRUE(FailsWith({"FusedBatchNorm", Attrs(false), {x, c4, c4, c4, Empty()}},
                        Code::kInvalidArgument, "variance"));
  EXPECT_TRUE(FailsWith({"FusedBatchNorm", Attrs(true, -0.1), {x, c4, c4, Empty(), Empty()}},
                        Code::kInvalidArgument, "epsilon"));
  EXPECT_TRUE(FailsWith(
      {"FusedBatchNormGrad", Attrs(true), {Random(Shape{2, 3, 3, 3}), x, c4, c4, c4}},
      Code::kInvalidArgument, "same shape"));
  EXPECT_TRUE(FailsWith({"FusedBatchNormGrad", Attrs(false, -1), {x, x, c4, c4, c4}},
                        Code::kInvalidArgument, "epsilon"));
  EXPECT_TRUE(FailsWith({"FusedBatchNormGrad", Attrs(true), {x, x, c3, c4, c4}},
                        Code::kInvalidArgument, "scale"));
}

TEST_P(NormKernelTest, ChannelsThatOnlyMismatchAtRunTimeFailNamingTheNode) {
  const Tensor c3 = Channels(3, 0.5, 2);
  for (const KernelTestCase& c :
       {KernelTestCase{"FusedBatchNorm", Attrs(true),
                       {Random(Shape{2, 2, 2, 4}), c3, c3, Empty(), Empty()}},
        KernelTestCase{"FusedBatchNorm", Attrs(true),
                       {Random(Shape{2, 3, 3}), c3, c3, Empty(), Empty()}},
        KernelTestCase{"FusedBatchNormGrad", Attrs(false),
                       {Random(Shape{2, 4}), Random(Shape{2, 4}), c3, c3, c3}},
        KernelTestCase{"FusedBatchNormGrad", Attrs(false),
                       {Random(Shape{2, 3}), Random(Shape{3, 3}), c3, c3, c3}}}) {
    StatusOr<KernelRun> run = RunKernel(c, /*unknown_input_shapes=*/true);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_EQ(run->status.code(), Code::kInvalidArgument) << run->status;
    EXPECT_NE(run->status.message().find(kNodeUnderTest), std::string::npos) << run->status;
  }
}

TEST_P(NormKernelTest, KeepProbOutsideZeroToOneIsInvalidArgumentNamingTheNode) {
  for (double keep_prob : {0.0, -0.5, 1.5, std::nan("")}) {
    EXPECT_TRUE(FailsWith({"Dropout", {{"keep_prob", keep_prob}}, {Random(Shape{2, 3})}},
                          Code::kInvalidArgument, "keep_prob"));
  }
}

}  // namespace
}  // namespace actorflow
