// Errors a kernel finds only at run time, on every device type: shapes that were
// unknown when the graph was built, labels and row ids outside their range (an
// update with one writes nothing). A device type this process has no device of is
// reported as skipped. Built twice, as kernels/device_kernels_test.cc is.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "graph/attr_value.h"
#include "graph/tensor.h"
#include "kernels/device_test_util.h"
#include "kernels/kernels_test_util.h"

namespace actorflow {
namespace {

class DeviceErrorsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string why = DeviceUnavailable(GetParam());
    if (!why.empty()) GTEST_SKIP() << GetParam() << " case skipped: " << why;
  }
};

TEST_P(DeviceErrorsTest, ALabelOutOfRangeFailsNamingTheNodeAndTheLabel) {
  KernelTestCase c = Case("SparseSoftmaxCrossEntropyWithLogits",
                          {MakeTensor(DType::kFloat32, Shape{2, 3}, {1, 2, 3, 4, 5, 6}),
                           MakeTensor(DType::kInt32, Shape{2}, {0, 7})});
  c.device_type = GetParam();
  EXPECT_TRUE(FailsWith(c, Code::kInvalidArgument, "label 7"));
}

TEST_P(DeviceErrorsTest, MatMulShapesThatOnlyMismatchAtRunTimeFailNamingTheNode) {
  KernelTestCase c = Case("MatMul", {MakeTensor(DType::kFloat32, Shape{2, 3}, std::vector<double>(6, 1)),
                                     MakeTensor(DType::kFloat32, Shape{2, 3}, std::vector<double>(6, 1))});
  c.device_type = GetParam();
  auto run = RunKernel(c, /*unknown_input_shapes=*/true);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->status.code(), Code::kInvalidArgument) << run->status;
  EXPECT_NE(run->status.message().find(kNodeUnderTest), std::string::npos) << run->status;
  EXPECT_NE(run->status.message().find("MatMul shape mismatch"), std::string::npos) << run->status;
}

TEST_P(DeviceErrorsTest, ConvolutionChannelsThatOnlyMismatchAtRunTimeFailNamingTheNode) {
  const Tensor input = MakeTensor(DType::kFloat32, Shape{1, 3, 3, 2}, std::vector<double>(18, 1));
  const Tensor filter = MakeTensor(DType::kFloat32, Shape{2, 2, 3, 1}, std::vector<double>(12, 1));
  KernelTestCase c = Case("Conv2D", {input, filter},
                          {{"strides", AttrValue(std::vector<int64_t>{1, 1, 1, 1})},
                           {"padding", AttrValue(std::string("VALID"))}});
  c.device_type = GetParam();
  auto run = RunKernel(c, /*unknown_input_shapes=*/true);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->status.code(), Code::kInvalidArgument) << run->status;
  EXPECT_NE(run->status.message().find(kNodeUnderTest), std::string::npos) << run->status;
  EXPECT_NE(run->status.message().find("has 2 channels but filter"), std::string::npos)
      << run->status;
}

TEST_P(DeviceErrorsTest, SequenceOpShapesThatOnlyMismatchAtRunTimeFailWithOneMessage) {
  auto ones = [](const Shape& s) {
    return MakeTensor(DType::kFloat32, s, std::vector<double>(s.num_elements(), 1));
  };
  struct Bad {
    KernelTestCase c;
    std::string message;
  };
  const std::vector<Bad> bad = {
      {Case("BatchMatMul", {ones(Shape{2, 3, 4}), ones(Shape{3, 4, 6})}),
       "the batch dimensions of x [2,3,4] and y [3,4,6] do not broadcast"},
      {Case("LayerNorm", {ones(Shape{2, 3}), ones(Shape{4}), ones(Shape{3})}),
       "LayerNorm: gamma [4] does not match the 3 features of x [2,3]"},
      {Case("LayerNormGrad", {ones(Shape{2, 3}), ones(Shape{2, 3}), ones(Shape{3}),
                              ones(Shape{2}), ones(Shape{3})}),
       "LayerNormGrad: mean [3] must be [2] for x [2,3]"},
      {Case("GeluGrad", {ones(Shape{2, 3}), ones(Shape{3})}),
       "GeluGrad needs dy and x of one shape, got dy [2,3] and x [3]"},
      {Case("LSTMBlockCell", {ones(Shape{2, 3}), ones(Shape{3, 4}), ones(Shape{2, 4}),
                              ones(Shape{7, 16}), ones(Shape{16})}),
       "cs_prev (input 1) has shape [3,4] but x (input 0) [2,3] and h_prev (input 2) [2,4] "
       "need [2,4]"},
      {Case("GRUBlockCell", {ones(Shape{2, 3}), ones(Shape{2, 4}), ones(Shape{7, 8}),
                             ones(Shape{7, 4}), ones(Shape{8}), ones(Shape{5})}),
       "b_c (input 5) has shape [5]"},
  };
  for (Bad b : bad) {
    b.c.device_type = GetParam();
    auto run = RunKernel(b.c, /*unknown_input_shapes=*/true);
    ASSERT_TRUE(run.ok()) << b.c.ToString() << ": " << run.status();
    EXPECT_EQ(run->status.code(), Code::kInvalidArgument) << run->status;
    EXPECT_NE(run->status.message().find(kNodeUnderTest), std::string::npos) << run->status;
    EXPECT_NE(run->status.message().find(b.message), std::string::npos) << run->status;
  }
}

TEST_P(DeviceErrorsTest, ARowIdOutsideTheTableFailsNamingTheNodeAndTheId) {
  const Tensor table = MakeTensor(DType::kFloat32, Shape{4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  KernelTestCase gather = Case("Gather", {table, MakeTensor(DType::kInt64, Shape{3}, {1, 9, 0})});
  gather.device_type = GetParam();
  EXPECT_TRUE(FailsWith(gather, Code::kInvalidArgument, "indices[1] = 9 is not in [0, 4)"));
  KernelTestCase negative = Case("Gather", {table, MakeTensor(DType::kInt32, Shape{2}, {-1, 0})});
  negative.device_type = GetParam();
  EXPECT_TRUE(FailsWith(negative, Code::kInvalidArgument, "indices[0] = -1 is not in [0, 4)"));
  KernelTestCase sum = Case("UnsortedSegmentSum",
                            {table, MakeTensor(DType::kInt32, Shape{4}, {0, 2, 5, 0}),
                             MakeTensor(DType::kInt32, Shape{}, {3})});
  sum.const_inputs = {2};
  sum.device_type = GetParam();
  EXPECT_TRUE(FailsWith(sum, Code::kInvalidArgument, "segment_ids[2] = 5 is not in [0, 3)"));
}

TEST_P(DeviceErrorsTest, AnUpdateWithARowIdOutsideTheVariableFailsAndWritesNothing) {
  const Tensor var = MakeTensor(DType::kFloat32, Shape{4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor rows = MakeTensor(DType::kFloat32, Shape{3, 2}, {1, 1, 1, 1, 1, 1});
  const Tensor ids = MakeTensor(DType::kInt64, Shape{3}, {2, 7, 2});
  const Tensor lr = MakeTensor(DType::kFloat32, Shape{}, {0.5});
  const Tensor accum = MakeTensor(DType::kFloat32, Shape{4, 2}, std::vector<double>(8, 0.1));
  std::vector<KernelTestCase> cases = {
      Case("ScatterAdd", {var, ids, rows}), Case("ScatterUpdate", {var, ids, rows}),
      Case("SparseApplyGradientDescent", {var, lr, rows, ids}),
      Case("SparseApplyAdagrad", {var, accum, lr, rows, ids})};
  cases[0].variable_inputs = cases[1].variable_inputs = cases[2].variable_inputs = {0};
  cases[3].variable_inputs = {0, 1};
  for (KernelTestCase& c : cases) {
    c.device_type = GetParam();
    auto run = RunKernel(c);
    ASSERT_TRUE(run.ok()) << c.ToString() << ": " << run.status();
    EXPECT_EQ(run->status.code(), Code::kInvalidArgument) << c.ToString() << ": " << run->status;
    EXPECT_NE(run->status.message().find(kNodeUnderTest), std::string::npos) << run->status;
    EXPECT_NE(run->status.message().find("indices[1] = 7 is not in [0, 4)"), std::string::npos)
        << run->status;
    ASSERT_EQ(run->variables.size(), c.variable_inputs.size());
    for (size_t i = 0; i < run->variables.size(); ++i) {
      EXPECT_TRUE(TensorsClose(c.inputs[c.variable_inputs[i]], run->variables[i], Tolerance{}))
          << c.ToString() << ": variable input " << c.variable_inputs[i] << " changed";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, DeviceErrorsTest, ::testing::ValuesIn(DeviceTypes()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace actorflow
