// Tensor buffers: host buffers by default, adopted buffers with their own deleter,
// and the host helpers' refusal to read device memory; slices and splits along the
// first dimension, scalar<T>(), and printing with values.
#include "graph/tensor.h"

#include <cmath>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <vector>

#include "gtest/gtest.h"

namespace actorflow {
namespace {

// A buffer marked as device memory. The bytes are really host memory, so a bug that
// dereferenced them would not crash the test, it would make it fail.
std::shared_ptr<TensorBuffer> FakeDeviceBuffer(size_t bytes, int* deleted) {
  void* p = std::aligned_alloc(kTensorAlignment, kTensorAlignment * (bytes / kTensorAlignment + 1));
  return std::make_shared<TensorBuffer>(
      p, bytes,
      [deleted](void* q) {
        ++*deleted;
        std::free(q);
      },
      MemoryKind::kDevice);
}

TEST(TensorTest, AllocatedTensorsAreZeroFilledHostMemory) {
  Tensor t(DType::kFloat32, Shape{2, 3});
  EXPECT_EQ(t.memory_kind(), MemoryKind::kHost);
  EXPECT_FALSE(t.IsOnDevice());
  for (int64_t i = 0; i < t.NumElements(); ++i) EXPECT_EQ(t.data<float>()[i], 0.0f);
  EXPECT_EQ(t.DebugString(), "float32[2,3]");
}

TEST(TensorTest, AnEmptyTensorReportsHostMemory) {
  EXPECT_EQ(Tensor().memory_kind(), MemoryKind::kHost);
}

TEST(TensorTest, AnAdoptedBufferRunsItsDeleterOnceWhenTheLastTensorLetsGo) {
  int deleted = 0;
  {
    Tensor t(DType::kFloat32, Shape{4}, FakeDeviceBuffer(16, &deleted));
    Tensor shared = t;
    auto reshaped = t.Reshaped(Shape{2, 2});
    ASSERT_TRUE(reshaped.ok());
    EXPECT_TRUE(reshaped->SharesBufferWith(t));
    EXPECT_EQ(deleted, 0);
  }
  EXPECT_EQ(deleted, 1);
}

TEST(TensorTest, AnAdoptedHostBufferIsReadLikeAnyOther) {
  void* p = std::aligned_alloc(kTensorAlignment, kTensorAlignment);
  static_cast<float*>(p)[1] = 2.5f;
  Tensor t(DType::kFloat32, Shape{2},
           std::make_shared<TensorBuffer>(p, 8, [](void* q) { std::free(q); }, MemoryKind::kHost));
  EXPECT_FALSE(t.IsOnDevice());
  EXPECT_EQ(t.ElementAsDouble(1), 2.5);
}

TEST(TensorTest, HostHelpersNeverReadDeviceMemory) {
  int deleted = 0;
  Tensor device(DType::kFloat32, Shape{4}, FakeDeviceBuffer(16, &deleted));
  Tensor host(DType::kFloat32, Shape{4});
  EXPECT_TRUE(device.IsOnDevice());
  EXPECT_EQ(device.memory_kind(), MemoryKind::kDevice);
  EXPECT_TRUE(std::isnan(device.ElementAsDouble(0)));
  EXPECT_FALSE(device.DeepCopy().IsInitialized());
  EXPECT_FALSE(TensorsEqual(device, host));
  EXPECT_FALSE(TensorsEqual(host, device));
  EXPECT_FALSE(TensorsEqual(device, device));
  EXPECT_EQ(device.DebugString(), "float32[4]@device");
}

TEST(TensorSliceTest, ASliceIsAViewOfItsRows) {
  Tensor t = Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, Shape{3, 2});
  StatusOr<Tensor> rows = t.Slice(1, 3);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->shape(), (Shape{2, 2}));
  EXPECT_EQ(rows->NumElements(), 4);
  EXPECT_TRUE(TensorsEqual(*rows, Tensor::FromVector<int32_t>({3, 4, 5, 6}, Shape{2, 2})));
  EXPECT_TRUE(rows->SharesBufferWith(t));
  EXPECT_EQ(rows->raw_data(), t.data<int32_t>() + 2);
  // Aliasing: a write through the slice is seen by the whole, and back.
  rows->data<int32_t>()[0] = 30;
  EXPECT_EQ(t.data<int32_t>()[2], 30);
  t.data<int32_t>()[5] = 60;
  EXPECT_EQ(rows->data<int32_t>()[3], 60);
  // A view counts as a sharer, so copy-on-write never mutates the other's rows.
  EXPECT_FALSE(t.RefCountIsOne());
}

TEST(TensorSliceTest, ASliceOutlivesTheTensorItCameFrom) {
  StatusOr<Tensor> tail = Tensor::FromVector<double>({1.5, 2.5, 3.5}).Slice(2, 3);
  ASSERT_TRUE(tail.ok());
  EXPECT_TRUE(tail->RefCountIsOne());
  EXPECT_EQ(*tail->scalar<double>(), 3.5);
  Tensor copy = tail->DeepCopy();
  EXPECT_FALSE(copy.SharesBufferWith(*tail));
  EXPECT_TRUE(TensorsEqual(copy, Tensor::FromVector<double>({3.5})));
}

TEST(TensorSliceTest, EmptySlicesAndEmptyTensors) {
  Tensor t = Tensor::FromVector<int64_t>({7, 8});
  StatusOr<Tensor> none = t.Slice(1, 1);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->shape(), Shape{0});
  EXPECT_EQ(none->TotalBytes(), 0u);
  Tensor empty(DType::kFloat32, Shape{0, 3});
  StatusOr<Tensor> all = empty.Slice(0, 0);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->shape(), (Shape{0, 3}));
  StatusOr<std::vector<Tensor>> parts = empty.Split(2);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[1].shape(), (Shape{0, 3}));
}

TEST(TensorSliceTest, BadBoundsAndScalarsAreInvalidArgumentsNamingTheTensor) {
  Tensor t(DType::kFloat32, Shape{4, 2});
  for (auto [begin, end] : std::vector<std::pair<int64_t, int64_t>>{{-1, 2}, {3, 2}, {0, 5}}) {
    StatusOr<Tensor> s = t.Slice(begin, end);
    ASSERT_FALSE(s.ok()) << begin << ", " << end;
    EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
    EXPECT_NE(s.status().message().find("float32[4,2]"), std::string::npos) << s.status();
  }
  StatusOr<Tensor> scalar = Tensor::Scalar(1.0f).Slice(0, 0);
  EXPECT_EQ(scalar.status().code(), Code::kInvalidArgument);
  EXPECT_NE(scalar.status().message().find("scalar"), std::string::npos) << scalar.status();
  EXPECT_EQ(Tensor().Slice(0, 0).status().code(), Code::kFailedPrecondition);
}

TEST(TensorSliceTest, ASliceOfADeviceTensorIsADeviceViewAtTheRowOffset) {
  int deleted = 0;
  {
    Tensor device(DType::kFloat32, Shape{4}, FakeDeviceBuffer(16, &deleted));
    StatusOr<Tensor> part = device.Slice(2, 4);
    ASSERT_TRUE(part.ok());
    EXPECT_TRUE(part->IsOnDevice());
    EXPECT_EQ(part->raw_data(), static_cast<char*>(device.raw_data()) + 8);
    EXPECT_EQ(part->DebugString(), "float32[2]@device");
  }
  EXPECT_EQ(deleted, 1);
}

TEST(TensorSplitTest, SplitGivesEqualConsecutiveViews) {
  Tensor t = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{6});
  StatusOr<std::vector<Tensor>> parts = t.Split(3);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 3u);
  EXPECT_TRUE(TensorsEqual((*parts)[0], Tensor::FromVector<float>({1, 2})));
  EXPECT_TRUE(TensorsEqual((*parts)[1], Tensor::FromVector<float>({3, 4})));
  EXPECT_TRUE(TensorsEqual((*parts)[2], Tensor::FromVector<float>({5, 6})));
  for (const Tensor& part : *parts) EXPECT_TRUE(part.SharesBufferWith(t));
}

TEST(TensorSplitTest, SplitRefusesRowsThatDoNotDivideEvenly) {
  Tensor t(DType::kInt32, Shape{5, 2});
  StatusOr<std::vector<Tensor>> parts = t.Split(2);
  ASSERT_FALSE(parts.ok());
  EXPECT_EQ(parts.status().code(), Code::kInvalidArgument);
  EXPECT_NE(parts.status().message().find("5 rows is not a multiple of 2"), std::string::npos)
      << parts.status();
  EXPECT_EQ(t.Split(0).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Tensor::Scalar(3).Split(1).status().code(), Code::kInvalidArgument);
}

TEST(TensorSplitTest, SplitSizesTakesUnevenPartsIncludingEmptyOnes) {
  Tensor t = Tensor::FromVector<bool>({true, false, true, true, false}, Shape{5, 1});
  StatusOr<std::vector<Tensor>> parts = t.SplitSizes({2, 0, 3});
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 3u);
  EXPECT_TRUE(TensorsEqual((*parts)[0], Tensor::FromVector<bool>({true, false}, Shape{2, 1})));
  EXPECT_EQ((*parts)[1].shape(), (Shape{0, 1}));
  EXPECT_TRUE(
      TensorsEqual((*parts)[2], Tensor::FromVector<bool>({true, true, false}, Shape{3, 1})));
}

TEST(TensorSplitTest, SplitSizesMustCoverTheRowsExactly) {
  Tensor t(DType::kFloat64, Shape{4});
  StatusOr<std::vector<Tensor>> few = t.SplitSizes({1, 2});
  ASSERT_FALSE(few.ok());
  EXPECT_NE(few.status().message().find("add up to 3 rows, the tensor has 4"), std::string::npos)
      << few.status();
  EXPECT_EQ(t.SplitSizes({5, -1}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(t.SplitSizes({}).status().code(), Code::kInvalidArgument);
}

TEST(TensorScalarTest, ReturnsTheOneValueOfAnyOneElementShape) {
  EXPECT_EQ(*Tensor::Scalar(2.5f).scalar<float>(), 2.5f);
  EXPECT_EQ(*Tensor::Scalar<int64_t>(-7).scalar<int64_t>(), -7);
  EXPECT_EQ(*Tensor::Scalar(true).scalar<bool>(), true);
  EXPECT_EQ(*Tensor::FromVector<int32_t>({42}, Shape{1, 1}).scalar<int32_t>(), 42);
}

TEST(TensorScalarTest, AMismatchIsAStatusNamingBothSides) {
  StatusOr<int32_t> wrong_type = Tensor::Scalar(1.0f).scalar<int32_t>();
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_EQ(wrong_type.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(wrong_type.status().message(),
            "scalar<int32>() of a float32[] tensor: use scalar<float32>()");
  StatusOr<float> many = Tensor(DType::kFloat32, Shape{2}).scalar<float>();
  ASSERT_FALSE(many.ok());
  EXPECT_EQ(many.status().message(), "scalar<float32>() of float32[2]: it has 2 elements, not 1");
  EXPECT_EQ(Tensor(DType::kFloat32, Shape{0}).scalar<float>().status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(Tensor().scalar<float>().status().code(), Code::kFailedPrecondition);
  int deleted = 0;
  Tensor device(DType::kFloat32, Shape{}, FakeDeviceBuffer(4, &deleted));
  EXPECT_EQ(device.scalar<float>().status().code(), Code::kFailedPrecondition);
}

TEST(TensorPrintTest, ValuesAreNestedByDimension) {
  EXPECT_EQ(Tensor::FromVector<float>({1, 2, 3, 4}, Shape{2, 2}).DebugStringWithValues(),
            "Tensor<type: float32 shape: [2,2] values: [[1 2][3 4]]>");
  EXPECT_EQ(Tensor::Scalar(7).DebugStringWithValues(),
            "Tensor<type: int32 shape: [] values: 7>");
  EXPECT_EQ(Tensor::FromVector<int64_t>({-9000000000LL, 1}).SummarizeValue(), "[-9000000000 1]");
  EXPECT_EQ(Tensor::FromVector<bool>({true, false}).SummarizeValue(), "[true false]");
  EXPECT_EQ(Tensor::FromVector<double>({1.0 / 3, 1e10, 0.5}).SummarizeValue(),
            "[0.333333 1e+10 0.5]");
  EXPECT_EQ(Tensor::FromVector<float>({NAN, -INFINITY}).SummarizeValue(), "[nan -inf]");
  EXPECT_EQ(Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, Shape{1, 2, 3}).SummarizeValue(),
            "[[[1 2 3][4 5 6]]]");
}

TEST(TensorPrintTest, EmptyTensorsPrintTheirBrackets) {
  EXPECT_EQ(Tensor(DType::kFloat32, Shape{0}).DebugStringWithValues(),
            "Tensor<type: float32 shape: [0] values: []>");
  EXPECT_EQ(Tensor(DType::kInt32, Shape{2, 0}).SummarizeValue(), "[[][]]");
  EXPECT_EQ(Tensor().SummarizeValue(), "<uninitialized>");
}

// Found by tools/fuzz/wire_fuzzer: a received tensor of shape [1, 2, 2, 2, 2^62, ..., 0]
// holds no values (so it passes every size check) but printing it walked 2^65 empty
// lists. Each empty list now counts against the budget of printed values.
TEST(TensorPrintTest, EmptyTensorsOfHugeShapesPrintBriefly) {
  const int64_t huge = int64_t{1} << 62;
  EXPECT_EQ(Tensor(DType::kFloat32, Shape{huge, 0}).SummarizeValue(3), "[[][][]...]");
  EXPECT_EQ(Tensor(DType::kFloat32, Shape{2, huge, 0}).SummarizeValue(3), "[[[][][]...]...]");
  EXPECT_EQ(Tensor(DType::kBool, Shape{1000, 0}).SummarizeValue(2), "[[][]...]");
  const std::string text = Tensor(DType::kInt64, Shape{huge, huge, 0}).DebugStringWithValues();
  EXPECT_LT(text.size(), 200u) << text;
}

TEST(TensorPrintTest, LongTensorsAreTruncatedAfterMaxValues) {
  Tensor t = Tensor::FromVector<float>({1, 2, 3, 4}, Shape{2, 2});
  EXPECT_EQ(t.SummarizeValue(3), "[[1 2][3...]]");
  EXPECT_EQ(t.SummarizeValue(2), "[[1 2]...]");
  EXPECT_EQ(t.SummarizeValue(0), "[...]");
  EXPECT_EQ(t.SummarizeValue(-1), "[[1 2][3 4]]");
  std::vector<int32_t> many(25);
  for (int i = 0; i < 25; ++i) many[i] = i;
  EXPECT_EQ(Tensor::FromVector(many).SummarizeValue(), "[0 1 2 3 4 5 6 7 8 9...]");
}

TEST(TensorPrintTest, StreamingATensorPrintsItsValues) {
  std::ostringstream out;
  out << Tensor::FromVector<int32_t>({5, 6});
  EXPECT_EQ(out.str(), "Tensor<type: int32 shape: [2] values: [5 6]>");
  int deleted = 0;
  Tensor device(DType::kFloat32, Shape{4}, FakeDeviceBuffer(16, &deleted));
  EXPECT_EQ(device.DebugStringWithValues(),
            "Tensor<type: float32 shape: [4] values: <on device>>");
}

}  // namespace
}  // namespace actorflow
