// Tensor buffers: host buffers by default, adopted buffers with their own deleter,
// and the host helpers' refusal to read device memory.
#include "graph/tensor.h"

#include <cmath>
#include <cstdlib>
#include <memory>

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

}  // namespace
}  // namespace actorflow
