// The GPU runtime registry in a binary that links no GPU library: no GPUs, a reason
// that says how to get them, and host tensors passed through untouched.
#include "kernels/gpu_runtime.h"

#include <cstdlib>
#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace actorflow {
namespace {

TEST(GpuRuntimeTest, WithoutAGpuLibraryThereAreNoGpusAndTheReasonSaysHowToGetThem) {
  EXPECT_EQ(GetGpuRuntime(), nullptr);
  EXPECT_EQ(GpuDeviceCount(), 0);
  EXPECT_NE(DescribeGpus().find("--config=cuda"), std::string::npos) << DescribeGpus();
}

TEST(GpuRuntimeTest, HostTensorsPassThroughUncopied) {
  Tensor t = Tensor::FromVector<float>({1, 2});
  auto host = ToHostTensor(t);
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_TRUE(host->SharesBufferWith(t));
}

TEST(GpuRuntimeTest, ADeviceTensorWithoutAGpuRuntimeIsAnInternalError) {
  void* p = std::aligned_alloc(kTensorAlignment, kTensorAlignment);
  Tensor device(DType::kFloat32, Shape{2},
                std::make_shared<TensorBuffer>(p, 8, [](void* q) { std::free(q); },
                                               MemoryKind::kDevice));
  auto host = ToHostTensor(device);
  ASSERT_FALSE(host.ok());
  EXPECT_EQ(host.status().code(), Code::kInternal);
  EXPECT_NE(host.status().message().find("float32[2]@device"), std::string::npos)
      << host.status();
}

class FakeRuntime : public GpuRuntime {
 public:
  int DeviceCount() const override { return 3; }
  std::string Describe() const override { return "3 fake GPUs"; }
  StatusOr<Tensor> CopyToHost(const Tensor& t) const override {
    return Tensor(t.dtype(), t.shape());
  }
};

TEST(GpuRuntimeTest, ARegisteredRuntimeAnswersForTheProcess) {
  static FakeRuntime fake;
  RegisterGpuRuntime(&fake);
  EXPECT_EQ(GpuDeviceCount(), 3);
  EXPECT_EQ(DescribeGpus(), "3 fake GPUs");
  RegisterGpuRuntime(nullptr);
  EXPECT_EQ(GpuDeviceCount(), 0);
}

}  // namespace
}  // namespace actorflow
