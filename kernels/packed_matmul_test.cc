// The packed GEMM (kernels/cpu/packed_gemm.h) against a double-precision product, on
// both of its paths and both packings, at sizes around its blocks (8 rows, 32
// columns, a depth of 256); and the ops PackMatMulOperand and PackedMatMul: their
// shapes, the panels' zero padding, MatMul's values, and inputs that do not fit.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "graph/tensor.h"
#include "kernels/cpu/packed_gemm.h"
#include "kernels/kernels_test_util.h"

namespace actorflow {
namespace {

using cpu::PackedGemm;
using cpu::PackedGemmPortable;
using cpu::PackedPanels;
using cpu::PackRightOperand;

struct Size {
  int64_t m, k, n;
};

std::vector<float> RandomFloats(int64_t count, std::mt19937* rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values) v = uniform(*rng);
  return values;
}

// C = A B in double; A's rows lda apart.
std::vector<double> Product(const std::vector<float>& a, int64_t lda, const std::vector<float>& b,
                            const Size& s) {
  std::vector<double> c(static_cast<size_t>(s.m * s.n), 0.0);
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t p = 0; p < s.k; ++p) {
      for (int64_t j = 0; j < s.n; ++j) c[i * s.n + j] += double(a[i * lda + p]) * b[p * s.n + j];
    }
  }
  return c;
}

// The largest |got - want| over the elements, relative to sqrt(k) (the sums' size).
double WorstError(const std::vector<float>& got, const std::vector<double>& want, int64_t k) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
  return worst / std::sqrt(static_cast<double>(std::max<int64_t>(k, 1)));
}

const std::vector<Size> kSizes = {
    {1, 1, 1},     {8, 256, 32},  {7, 3, 5},    {9, 257, 33},  {32, 300, 64}, {13, 511, 95},
    {16, 2, 100},  {1, 1000, 31}, {40, 64, 1},  {3, 513, 129}, {0, 5, 7},     {5, 0, 7},
    {5, 7, 0},     {17, 31, 65}};

TEST(PackedGemmTest, BothPathsAndBothPackingsMatchTheProduct) {
  std::mt19937 rng(7);
  for (const Size& s : kSizes) {
    SCOPED_TRACE("m " + std::to_string(s.m) + " k " + std::to_string(s.k) + " n " +
                 std::to_string(s.n));
    const int64_t lda = s.k + 3;  // rows not contiguous: the product honours lda
    const std::vector<float> a = RandomFloats(std::max<int64_t>(s.m * lda, 1), &rng);
    const std::vector<float> b = RandomFloats(s.k * s.n, &rng);
    std::vector<float> b_transposed(b.size());
    for (int64_t p = 0; p < s.k; ++p) {
      for (int64_t j = 0; j < s.n; ++j) b_transposed[j * s.k + p] = b[p * s.n + j];
    }
    const size_t packed_size = static_cast<size_t>(PackedPanels(s.n) * s.k * 32);
    std::vector<float> packed(packed_size, NAN), packed_from_transposed(packed_size, NAN);
    PackRightOperand(b.data(), s.k, s.n, false, packed.data());
    PackRightOperand(b_transposed.data(), s.k, s.n, true, packed_from_transposed.data());
    ASSERT_EQ(packed, packed_from_transposed) << "the two packings of one B differ";
    for (size_t i = 0; i < packed.size(); ++i) {
      const int64_t column = static_cast<int64_t>(i / (s.k * 32)) * 32 +
                             static_cast<int64_t>(i % 32);
      if (column >= s.n) {
        ASSERT_EQ(packed[i], 0.0f) << "padding at " << i;
      }
    }
    const std::vector<double> want = Product(a, lda, b, s);
    for (bool portable : {false, true}) {
      std::vector<float> c(static_cast<size_t>(s.m * s.n), NAN);  // every element written
      (portable ? PackedGemmPortable : PackedGemm)(a.data(), s.m, s.k, lda, packed.data(), s.n,
                                                   c.data());
      EXPECT_LT(WorstError(c, want, s.k), 2e-6) << (portable ? "portable" : "dispatched");
    }
  }
}

// The op level: PackMatMulOperand then PackedMatMul computes MatMul's values.
class PackedMatMulOpTest : public ::testing::Test {
 protected:
  Tensor Random(const Shape& shape) { return random_.Uniform(DType::kFloat32, shape); }

  Tensor Pack(const Tensor& b, bool transpose) {
    StatusOr<KernelRun> run = RunKernel({"PackMatMulOperand", {{"transpose", transpose}}, {b}});
    EXPECT_TRUE(run.ok() && run->status.ok());
    return run.ok() ? run->outputs.at(0) : Tensor();
  }

  RandomTensors random_{21};
};

TEST_F(PackedMatMulOpTest, PackedProductsEqualMatMulWithEitherOrientation) {
  for (const Size& s : std::vector<Size>{{32, 70, 45}, {8, 256, 32}, {3, 1, 1}, {0, 4, 6}}) {
    const Tensor a = Random(Shape{s.m, s.k});
    for (bool transpose : {false, true}) {
      const Tensor b = Random(transpose ? Shape{s.n, s.k} : Shape{s.k, s.n});
      const Tensor packed = Pack(b, transpose);
      EXPECT_EQ(packed.shape(), (Shape{PackedPanels(s.n), s.k, 32}));
      StatusOr<KernelRun> want =
          RunKernel({"MatMul", {{"transpose_b", transpose}}, {a, b}});
      StatusOr<KernelRun> got = RunKernel({"PackedMatMul", {{"n", s.n}}, {a, packed}});
      ASSERT_TRUE(want.ok() && got.ok());
      ASSERT_TRUE(got->status.ok()) << got->status.ToString();
      EXPECT_TRUE(TensorsClose(want->outputs.at(0), got->outputs.at(0), {1e-5, 1e-5}));
    }
  }
}

TEST_F(PackedMatMulOpTest, InputsThatDoNotFitAreInvalidArgumentNamingThem) {
  const Tensor packed = Pack(Random(Shape{6, 40}), false);  // K 6, N 40: [2, 6, 32]
  struct Bad {
    KernelTestCase c;
    std::string says;
  };
  const std::vector<Bad> bad = {
      {{"PackedMatMul", {{"n", int64_t{40}}}, {Random(Shape{3, 5}), packed}},
       "inner dimensions 5 and 6"},
      {{"PackedMatMul", {{"n", int64_t{70}}}, {Random(Shape{3, 6}), packed}},
       "not a packed operand of 70 columns"},
      {{"PackedMatMul", {{"n", int64_t{-1}}}, {Random(Shape{3, 6}), packed}}, "attr n is -1"},
      {{"PackedMatMul", {{"n", int64_t{40}}}, {Random(Shape{3, 6}), Random(Shape{2, 6})}},
       "packed (input 1)"},
      {{"PackMatMulOperand", {}, {Random(Shape{2, 3, 4})}}, "b (input 0)"},
      {{"PackMatMulOperand", {}, {random_.Uniform(DType::kFloat64, Shape{2, 3})}},
       "float32 only"},
  };
  for (const Bad& b : bad) {
    for (bool unknown_shapes : {false, true}) {
      SCOPED_TRACE(b.c.ToString() + (unknown_shapes ? " (shapes unknown)" : ""));
      StatusOr<KernelRun> run = RunKernel(b.c, unknown_shapes);
      const Status status = run.ok() ? run->status : run.status();
      EXPECT_EQ(status.code(), Code::kInvalidArgument) << status.ToString();
      if (!unknown_shapes) {
        EXPECT_NE(status.message().find(b.says), std::string::npos) << status.ToString();
      }
    }
  }
}

}  // namespace
}  // namespace actorflow
